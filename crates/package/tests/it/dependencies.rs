//! The pre-flight of dependency layers (docs/reference.md "Dependency layers"): which
//! dependency files need a layer, the layer key, and the bounds of a dependency file.

use astrolift_manifest::{Limits, MemTree};
use astrolift_package::dependencies::{
    DEPENDENCY_FILE_MAX_BYTES, is_provided_module, layer_key, package_json_needs_layers,
    requirements_need_layers,
};
use astrolift_package::{LayerNeed, preflight, slice};

use crate::common::manifest;

fn preflight_of(files: &[(&str, Vec<u8>)]) -> Result<Option<LayerNeed>, Vec<String>> {
    let agent = manifest("a", "");
    let mut all = vec![("astrolift.toml", b"name = \"a\"\n".to_vec())];
    all.extend(files.iter().cloned());
    let tree = MemTree::from_files(all);
    let slice = slice(&agent, &tree, &Limits::DEFAULT).expect("a slice");
    let mut warnings = Vec::new();
    preflight(&slice, &tree, Some("img:1"), &mut warnings).map_err(|found| {
        found
            .into_iter()
            .map(|d| format!("{}@{}", d.code, d.span.line))
            .collect()
    })
}

#[test]
fn pass_through_requirements_need_no_layer() {
    for text in [
        "",
        "\n\n",
        "# nothing here\n   # still nothing\n",
        "autonoetic_sdk\n",
        "Autonoetic-SDK>=0.1  # injected\n",
        "json\nos\nasyncio==3.4.3\n",
        "--index-url https://pypi.org/simple\n--pre\n",
        "# a comment \\\n",
    ] {
        assert!(!requirements_need_layers(text), "{text:?}");
    }
}

#[test]
fn real_requirements_need_a_layer() {
    for text in [
        "requests==2.32.3\n",
        "autonoetic_sdk\nnumpy\n",
        "-r other.txt\n",
        "--requirement=other.txt\n",
        "-e ./local\n",
        "git+https://example.com/repo.git\n",
        "./wheels/pkg.whl\n",
        "pkg @ https://example.com/pkg.whl\n",
        "req\\\nuests\n",
    ] {
        assert!(requirements_need_layers(text), "{text:?}");
    }
}

#[test]
fn stdlib_names_compare_as_pip_does() {
    assert!(is_provided_module("autonoetic-sdk"));
    assert!(is_provided_module("AUTONOETIC.SDK"));
    assert!(is_provided_module("xml"));
    assert!(!is_provided_module("requests"));
}

#[test]
fn package_json_needs_a_layer_only_with_dependencies() {
    assert!(!package_json_needs_layers("{}").unwrap());
    assert!(!package_json_needs_layers(r#"{"dependencies":{}}"#).unwrap());
    assert!(
        !package_json_needs_layers(r#"{"dependencies":null,"devDependencies":{"x":"1"}}"#).unwrap()
    );
    assert!(package_json_needs_layers(r#"{"dependencies":{"axios":"^1"}}"#).unwrap());
    assert!(package_json_needs_layers("[]").is_err());
}

#[test]
fn a_comment_only_requirements_file_is_a_pass_through() {
    let need = preflight_of(&[("requirements.txt", b"# none\n".to_vec())]);
    assert_eq!(need, Ok(None));
    let need = preflight_of(&[("package.json", br#"{"name":"x"}"#.to_vec())]);
    assert_eq!(need, Ok(None));
}

#[test]
fn a_real_list_gives_a_layer_key_over_every_dependency_file() {
    let need = preflight_of(&[
        (
            "package.json",
            br#"{"dependencies":{"axios":"^1"}}"#.to_vec(),
        ),
        ("package-lock.json", b"{}".to_vec()),
        ("requirements.txt", b"# none\n".to_vec()),
    ])
    .expect("readable")
    .expect("a layer");
    let paths: Vec<&str> = need.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        ["package-lock.json", "package.json", "requirements.txt"]
    );
    let files = [
        ("requirements.txt".to_owned(), b"# none\n".to_vec()),
        ("package-lock.json".to_owned(), b"{}".to_vec()),
        (
            "package.json".to_owned(),
            br#"{"dependencies":{"axios":"^1"}}"#.to_vec(),
        ),
    ];
    assert_eq!(need.layer_key, layer_key(&files, Some("img:1")));
    // Order-independent; the runtime image and every byte count.
    let mut reversed = files.clone();
    reversed.reverse();
    assert_eq!(layer_key(&reversed, Some("img:1")), need.layer_key);
    assert_ne!(layer_key(&files, Some("img:2")), need.layer_key);
    assert_ne!(layer_key(&files, None), need.layer_key);
    let mut changed = files.clone();
    changed[0].1 = b"# none.\n".to_vec();
    assert_ne!(layer_key(&changed, Some("img:1")), need.layer_key);
}

#[test]
fn a_dependency_file_at_its_limit_is_read_and_past_it_is_an_error() {
    let mut at_limit = b"requests\n".to_vec();
    at_limit.resize(DEPENDENCY_FILE_MAX_BYTES as usize, b'\n');
    assert!(matches!(
        preflight_of(&[("requirements.txt", at_limit.clone())]),
        Ok(Some(_))
    ));
    at_limit.push(b'\n');
    assert_eq!(
        preflight_of(&[("requirements.txt", at_limit)]),
        Err(vec!["package/dependency-file-unreadable@1".to_owned()])
    );
}

#[test]
fn unreadable_dependency_files_are_positioned_errors() {
    assert_eq!(
        preflight_of(&[("requirements.txt", b"# ok\n\xff\n".to_vec())]),
        Err(vec!["package/dependency-file-unreadable@2".to_owned()])
    );
    assert_eq!(
        preflight_of(&[("package.json", b"{\n  \"dependencies\": \n".to_vec())]),
        Err(vec!["package/dependency-file-unreadable@3".to_owned()])
    );
}

#[test]
fn a_package_json_without_a_lock_file_warns() {
    let agent = manifest("a", "");
    let tree = MemTree::from_files([
        ("astrolift.toml", b"name = \"a\"\n".to_vec()),
        (
            "package.json",
            br#"{"dependencies":{"axios":"^1"}}"#.to_vec(),
        ),
    ]);
    let slice = slice(&agent, &tree, &Limits::DEFAULT).expect("a slice");
    let mut warnings = Vec::new();
    let need = preflight(&slice, &tree, None, &mut warnings).expect("readable");
    assert!(need.is_some());
    let codes: Vec<&str> = warnings.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["package/dependencies-unlocked"]);
}
