//! The repository's `examples/` validate clean: no errors, no warnings.

use astrolift_manifest::Severity;
use astrolift_manifest::triggers::TriggerSource;

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

#[test]
fn monorepo_example_has_a_workspace_a_config_manifest_and_both_trigger_sources() {
    let dir = crate_dir().join("../../examples/monorepo");
    let tree = astrolift_manifest::DirTree::open(&dir, 10_000).expect("example opens");
    let options = astrolift_manifest::ValidateOptions {
        config_paths: vec!["config/triage/config.toml".to_owned()],
        ..Default::default()
    };
    let validation = astrolift_manifest::validate_repository(&tree, &options);
    assert!(
        validation.diagnostics.is_empty(),
        "{:#?}",
        validation.diagnostics
    );
    assert_eq!(validation.workspace_manifests, ["workspaces/triage.yaml"]);
    let sources: Vec<_> = validation.agents[0]
        .triggers
        .iter()
        .map(|t| (t.name.as_str(), t.source))
        .collect();
    assert_eq!(
        sources,
        [
            ("jira-high-priority", TriggerSource::Generic),
            ("new-issue", TriggerSource::Github)
        ]
    );
}
