//! The repositories under the workspace's `examples/` validate clean: each
//! subdirectory is one repository, with at least one agent and no error or
//! warning, in every format, but for its catalogue and organization skills: without App
//! credentials each is the warning `skill/unresolved` (docs/reference.md §5.1), and only
//! that (and the packager's own skill name in `examples/layers`, docs/reference.md §16).

use std::path::Path;

use crate::sarif_github::assert_github_accepts;
use crate::sarif_schema::assert_valid_sarif;
use crate::support::{astrolift, json};

fn example_repositories() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut dirs: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn examples_validate_clean() {
    for dir in example_repositories() {
        let run = astrolift([
            "validate".as_ref(),
            dir.as_os_str(),
            "--format".as_ref(),
            "json".as_ref(),
        ]);
        assert_eq!(run.code, 0, "{}: {run:?}", dir.display());
        let document = json(&run.stdout);
        let agents = document["agents"].as_array().expect("agents array");
        assert!(!agents.is_empty(), "{}: no agent found", dir.display());
        let findings: Vec<_> = document["diagnostics"]
            .as_array()
            .expect("diagnostics array")
            .iter()
            .filter(|d| d["severity"] != "notice")
            // The packager keeps its own skill name (`packager.default`): a warning
            // with a fix, by design (docs/reference.md "Dependency layers").
            .filter(|d| !(dir.ends_with("layers") && d["code"] == "skill/invalid-name"))
            .filter(|d| {
                let unresolved = d["code"] == "skill/unresolved";
                let why = d["message"].as_str().unwrap_or_default();
                !(unresolved && why.contains("no GitHub App credentials are configured here"))
            })
            .collect();
        assert!(findings.is_empty(), "{}: {findings:#?}", dir.display());

        let sarif = astrolift([
            "validate".as_ref(),
            dir.as_os_str(),
            "--format".as_ref(),
            "sarif".as_ref(),
        ]);
        let document = json(&sarif.stdout);
        assert_valid_sarif(&document);
        assert_github_accepts(&document);
    }
}
