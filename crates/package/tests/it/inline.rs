//! Inline packages (docs/reference.md §6): an agent that declares no
//! `[package]` and brings no file through a brief or a local skill has no
//! archive; a declared `[package]` that matches nothing is still
//! `package/empty`.

use std::path::Path;

use astrolift_manifest::{DirTree, Limits, ValidateOptions, Validation, validate_repository};
use astrolift_package::{package_agent, slice};

fn fixture() -> (DirTree, Validation) {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/inline"
    ));
    let tree = DirTree::open(dir, 100).expect("fixture");
    let validation = validate_repository(&tree, &ValidateOptions::default());
    assert!(!validation.has_errors(), "{:#?}", validation.diagnostics);
    (tree, validation)
}

fn agent<'v>(
    validation: &'v Validation,
    name: &str,
) -> &'v astrolift_manifest::model::AgentManifest {
    validation
        .agents
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no agent {name}"))
}

#[test]
fn an_agent_without_package_and_without_files_ships_inline() {
    let (tree, validation) = fixture();
    let bare = agent(&validation, "bare");
    let sliced = slice(bare, &tree, &Limits::DEFAULT).expect("an inline slice");
    assert!(sliced.inline);
    assert!(sliced.files.is_empty(), "NOTES.md is not packaged");
    let mut archive = Vec::new();
    let packaged = package_agent(bare, &tree, &Limits::DEFAULT, &mut archive).expect("packaged");
    assert!(archive.is_empty(), "no archive byte is written");
    assert!(packaged.output.inline);
    assert_eq!(packaged.output.digest, "");
    let json = String::from_utf8(packaged.snapshot.canonical_json()).expect("utf-8");
    insta::assert_snapshot!("inline_snapshot", json);
}

#[test]
fn a_declared_package_that_matches_nothing_is_still_empty() {
    let (tree, validation) = fixture();
    let declared = agent(&validation, "declared-empty");
    let diagnostics = slice(declared, &tree, &Limits::DEFAULT).expect_err("empty");
    let codes: Vec<_> = diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["package/empty"]);
}

#[test]
fn a_packaged_agent_s_snapshot_has_no_inline_key() {
    let (tree, validation) = fixture();
    let mut packaged_agent = agent(&validation, "declared-empty").clone();
    packaged_agent.package.include = vec!["astrolift.toml".to_owned()];
    let packaged =
        package_agent(&packaged_agent, &tree, &Limits::DEFAULT, std::io::sink()).expect("packaged");
    assert!(!packaged.output.inline);
    let json = String::from_utf8(packaged.snapshot.canonical_json()).expect("utf-8");
    assert!(!json.contains("inline"), "{json}");
}
