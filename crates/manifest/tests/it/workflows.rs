//! Workflow rules a fixture folder cannot express well: the stage limit at
//! and just past it, a long acyclic chain, and that a workflow's errors fail
//! no agent.

use astrolift_manifest::{Limits, MemTree, ValidateOptions, validate_repository};

use crate::support::validate;

const AGENT: &str = r#"astrolift_version = 1
name = "solo"

[[workloads]]
name = "solo"
kind = "agent"

  [[workloads.containers]]
  is_primary = true
  image_ref = "ghcr.io/example/agent:1"
"#;

/// A workflow of `count` stages, each needing the one before.
fn chain(count: usize) -> String {
    let mut text = "schema = \"astrolift.workflow/v1\"\nname = \"chain\"\n".to_owned();
    for i in 0..count {
        text.push_str(&format!(
            "\n[[stages]]\nname = \"s{i}\"\nagent = \"solo\"\n"
        ));
        if i > 0 {
            text.push_str(&format!("needs = [\"s{}\"]\n", i - 1));
        }
    }
    text
}

fn codes(validation: &astrolift_manifest::Validation) -> Vec<(&str, u32)> {
    validation
        .diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.span.line))
        .collect()
}

#[test]
fn stages_at_the_limit_are_read_and_one_more_is_an_error() {
    let limit = Limits::DEFAULT.workflow_stages;
    let at = MemTree::from_files([
        ("astrolift.toml", AGENT.to_owned()),
        ("workflows/chain.toml", chain(limit)),
    ]);
    let validation = validate(&at);
    assert!(codes(&validation).is_empty(), "{:?}", codes(&validation));
    assert_eq!(validation.workflows[0].stages.len(), limit);

    let past = MemTree::from_files([
        ("astrolift.toml", AGENT.to_owned()),
        ("workflows/chain.toml", chain(limit + 1)),
    ]);
    let validation = validate(&past);
    let line = 3 + 5 * limit as u32; // the header of stage limit + 1
    assert_eq!(codes(&validation), [("workflow/too-many-stages", line)]);
    assert_eq!(validation.workflows[0].stages.len(), limit);
}

#[test]
fn a_configured_limit_allows_a_long_chain_without_recursion() {
    let tree = MemTree::from_files([
        ("astrolift.toml", AGENT.to_owned()),
        ("workflows/chain.toml", chain(10_000)),
    ]);
    let options = ValidateOptions {
        limits: Limits {
            workflow_stages: 10_000,
            ..Limits::DEFAULT
        },
        ..ValidateOptions::default()
    };
    let validation = validate_repository(&tree, &options);
    assert!(codes(&validation).is_empty());
    assert_eq!(validation.workflows[0].stages.len(), 10_000);
}

#[test]
fn a_broken_workflow_fails_no_agent() {
    let tree = MemTree::from_files([
        ("astrolift.toml", AGENT.to_owned()),
        ("workflows/broken.toml", "schema = 1\n".to_owned()),
    ]);
    let validation = validate(&tree);
    assert!(validation.has_errors());
    assert_eq!(validation.agents_with_errors(), [false]);
    assert!(validation.errors_of(0).is_empty());
    assert!(validation.workflow_has_errors("workflows/broken.toml"));
}
