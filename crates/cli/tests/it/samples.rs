//! `validate` and `check` evaluate each binding's samples (docs/reference.md §5.5) on
//! `tests/fixtures/trigger-samples`: one sample maps as pinned, one does not, and the
//! mismatch is an error like any other (exit 1).

use std::ffi::OsStr;

use crate::support::{astrolift, fixture, json, validate_fixture};

#[test]
fn validate_reports_the_mismatching_sample_and_exits_1() {
    let run = validate_fixture("trigger-samples", "human");
    assert_eq!(run.code, 1, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    let at = lines
        .iter()
        .position(|line| line.starts_with("error[trigger/sample-mismatch]: "))
        .unwrap_or_else(|| panic!("no mismatch in {run:?}"));
    assert_eq!(
        lines[at],
        "error[trigger/sample-mismatch]: sample `urgent` of trigger `jira` maps to a payload \
         that differs from `urgent.expected.json` at .issue (number → string of 6)"
    );
    assert_eq!(
        lines.get(at + 1),
        Some(&"--> samples/urgent.expected.json:1:1")
    );
    assert!(!run.stdout.contains("high.expected.json"), "{}", run.stdout);

    let document = json(&validate_fixture("trigger-samples", "json").stdout);
    let codes: Vec<&str> = document["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert_eq!(codes, ["trigger/sample-mismatch"]);
}

#[test]
fn check_fails_the_agent_of_a_mismatching_sample() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = fixture("trigger-samples");
    let state = format!("--state=sqlite:{}", dir.path().join("state.db").display());
    let blobs = format!("--blobs=file:{}", dir.path().join("blobs").display());
    let run = astrolift([
        OsStr::new("check"),
        repo.as_os_str(),
        OsStr::new("--format"),
        OsStr::new("json"),
        OsStr::new(&state),
        OsStr::new(&blobs),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    let report = json(&run.stdout);
    assert_eq!(report["plan"][0]["status"], "failed", "{report:#}");
    assert_eq!(report["diagnostics"][0]["code"], "trigger/sample-mismatch");
    assert_eq!(
        report["diagnostics"][0]["path"],
        "samples/urgent.expected.json"
    );
}
