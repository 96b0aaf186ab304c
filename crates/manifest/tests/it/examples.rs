//! The repository's `examples/` validate clean: no errors, no warnings.

use astrolift_manifest::Severity;

use crate::support::{crate_dir, validate_dir};

fn assert_clean(example: &str, expected_agents: &[(&str, Option<&str>, bool)]) {
    let dir = crate_dir().join("../../examples").join(example);
    let validation = validate_dir(&dir);
    let findings: Vec<_> = validation
        .diagnostics
        .iter()
        .filter(|d| d.severity != Severity::Notice)
        .collect();
    assert!(findings.is_empty(), "{example}: {findings:#?}");
    let notices: Vec<_> = validation.diagnostics.iter().collect();
    assert!(notices.is_empty(), "{example} has notices: {notices:#?}");
    let agents: Vec<_> = validation
        .summaries()
        .into_iter()
        .map(|a| (a.name, a.alias, a.enabled))
        .collect();
    let expected: Vec<_> = expected_agents
        .iter()
        .map(|(name, alias, enabled)| ((*name).to_owned(), alias.map(str::to_owned), *enabled))
        .collect();
    assert_eq!(agents, expected);
}

#[test]
fn single_agent_example_is_clean() {
    assert_clean("single-agent", &[("pr-reviewer", None, true)]);
}

#[test]
fn monorepo_example_is_clean() {
    assert_clean(
        "monorepo",
        &[
            ("emr-triage", Some("triage"), true),
            ("weekly-reporter", Some("reporter"), false),
        ],
    );
}
