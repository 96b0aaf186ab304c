//! Targeted rules that a fixture folder cannot express well: size limits,
//! symlinks, and the promise that secrets are never echoed.

use astrolift_manifest::{
    EntryKind, FileEntry, Limits, MemTree, ValidateOptions, validate_repository,
};

use crate::support::validate;

const MANIFEST: &str = r#"astrolift_version = 1
name = "limits"
brief = "brief/README.md"
skills = ["./skills/big"]

[[workloads]]
name = "limits"
kind = "agent"

  [[workloads.containers]]
  is_primary = true
  image_ref = "ghcr.io/example/agent:1"
"#;

fn codes(validation: &astrolift_manifest::Validation) -> Vec<(&str, &str)> {
    validation
        .diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.path.as_str()))
        .collect()
}

#[test]
fn files_over_the_limit_are_reported_not_read() {
    let big_skill = format!("---\nname: big\ndescription: d\n---\n{}", "x".repeat(600));
    let tree = MemTree::from_files([
        ("astrolift.toml", MANIFEST.to_owned()),
        ("brief/README.md", "#".repeat(600)),
        ("skills/big/SKILL.md", big_skill),
        ("agents/huge/astrolift.toml", "#".repeat(600)),
    ]);
    let options = ValidateOptions {
        limits: Limits {
            manifest_file: 512,
            ..Limits::DEFAULT
        },
        ..ValidateOptions::default()
    };
    let validation = validate_repository(&tree, &options);
    assert_eq!(
        codes(&validation),
        [
            ("file/too-large", "agents/huge/astrolift.toml"),
            ("file/too-large", "brief/README.md"),
            ("file/too-large", "skills/big/SKILL.md"),
        ]
    );
    assert_eq!(validation.agents.len(), 1);
}

#[test]
fn a_symlinked_manifest_is_unreadable_not_followed() {
    let mut tree = MemTree::new();
    tree.insert_entry(FileEntry {
        path: "astrolift.toml".to_owned(),
        size: 10,
        executable: false,
        kind: EntryKind::Symlink,
    });
    let validation = validate(&tree);
    assert_eq!(codes(&validation), [("file/unreadable", "astrolift.toml")]);
}

#[test]
fn plaintext_secrets_never_reach_a_diagnostic() {
    let secret = "sk-live-0123456789abcdef";
    let manifest = format!(
        "{MANIFEST}\n[secrets]\nAPI_KEY = \"{secret}\"\nOTHER = {{ value = \"{secret}\" }}\n"
    );
    let tree = MemTree::from_files([("astrolift.toml", manifest)]);
    let validation = validate(&tree);
    let rendered = serde_json::to_string(&validation.diagnostics).unwrap_or_default();
    assert!(rendered.contains("manifest/plaintext-secret"));
    assert!(!rendered.contains(secret), "secret echoed: {rendered}");
    let models = serde_json::to_string(&validation.agents).unwrap_or_default();
    assert!(
        !models.contains(secret),
        "secret kept in the model: {models}"
    );
}

#[test]
fn reserved_variables_are_dropped_from_the_model() {
    let manifest =
        format!("{MANIFEST}\n[environment]\nAGENT_SYSTEM = \"x\"\nLOG_LEVEL = \"debug\"\n");
    let tree = MemTree::from_files([("astrolift.toml", manifest)]);
    let validation = validate(&tree);
    let environment = &validation.agents[0].environment;
    assert_eq!(environment.keys().collect::<Vec<_>>(), ["LOG_LEVEL"]);
    assert!(
        validation
            .diagnostics
            .iter()
            .any(|d| d.code == "manifest/reserved-env" && d.message.contains("AGENT_SYSTEM"))
    );
}

#[test]
fn every_diagnostic_code_is_in_the_catalogue() {
    let known: Vec<_> = astrolift_manifest::catalogue()
        .iter()
        .map(|c| c.id)
        .collect();
    for entry in std::fs::read_dir(crate::support::crate_dir().join("tests/fixtures"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let validation = crate::support::validate_dir(&entry.path());
        for diagnostic in &validation.diagnostics {
            assert!(
                known.contains(&diagnostic.code.as_str()),
                "{}: `{}` is not in catalogue()",
                entry.path().display(),
                diagnostic.code
            );
        }
    }
}

/// A frontmatter that would expand to billions of nodes, or nest past the
/// YAML depth limit, is a diagnostic in milliseconds, never a hang.
#[test]
fn hostile_frontmatter_is_bounded() {
    let mut bomb =
        String::from("---\nname: big\ndescription: d\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let prev = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    bomb.push_str("---\n");
    let deep = format!(
        "---\nname: deep\ndescription: d\nmetadata: {}{}\n---\n",
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    for (dir, text) in [("big", bomb), ("deep", deep)] {
        let manifest = MANIFEST
            .replace("./skills/big", &format!("./skills/{dir}"))
            .replace("brief = \"brief/README.md\"\n", "");
        let tree = MemTree::from_files([
            ("astrolift.toml".to_owned(), manifest),
            (format!("skills/{dir}/SKILL.md"), text),
        ]);
        let start = std::time::Instant::now();
        let validation = validate(&tree);
        println!("{dir}: {:?}", start.elapsed());
        assert!(
            start.elapsed().as_secs() < 5,
            "{dir}: took {:?}",
            start.elapsed()
        );
        assert!(
            validation
                .diagnostics
                .iter()
                .any(|d| d.code == "skill/invalid-frontmatter"),
            "{dir}: {:#?}",
            validation.diagnostics
        );
    }
}

#[test]
fn config_paths_are_validated_with_the_repository() {
    let tree = MemTree::from_files([
        (
            "astrolift.toml",
            MANIFEST.replace(
                "brief = \"brief/README.md\"\nskills = [\"./skills/big\"]\n",
                "",
            ),
        ),
        (
            "configs/main.toml",
            "include = [\"missing.toml\"]\n".to_owned(),
        ),
    ]);
    let options = ValidateOptions {
        config_paths: vec!["configs/main.toml".to_owned()],
        ..ValidateOptions::default()
    };
    let validation = validate_repository(&tree, &options);
    assert!(
        validation
            .diagnostics
            .iter()
            .any(|d| d.path == "configs/main.toml" && d.is_error()),
        "{:#?}",
        validation.diagnostics
    );
    assert!(!validate(&tree).has_errors());
}
