//! Workflow rules a fixture folder cannot express well: the stage limit at
//! and just past it, a long acyclic chain, that a workflow's errors fail
//! no agent, and a stage's `timeout`, `heartbeat` and `retries` at their
//! limits and just past them.

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

/// A workflow of one stage `only` with `options` (TOML lines) after its
/// `agent`, on line 7 on.
fn one_stage(options: &str) -> MemTree {
    let text = format!(
        "schema = \"astrolift.workflow/v1\"\nname = \"one\"\n\n[[stages]]\nname = \"only\"\nagent = \"solo\"\n{options}\n"
    );
    MemTree::from_files([
        ("astrolift.toml", AGENT.to_owned()),
        ("workflows/one.toml", text),
    ])
}

/// `code line:column-end_column` of each diagnostic of `one_stage(options)`.
fn spans_of(options: &str) -> Vec<String> {
    let validation = validate(&one_stage(options));
    let span = |d: &astrolift_manifest::Diagnostic| {
        let s = d.span;
        format!("{} {}:{}-{}", d.code, s.line, s.column, s.end_column)
    };
    validation.diagnostics.iter().map(span).collect()
}

/// The message of the first diagnostic of `one_stage(options)`.
fn message_of(options: &str) -> String {
    let validation = validate(&one_stage(options));
    validation
        .diagnostics
        .first()
        .map(|d| d.message.clone())
        .unwrap_or_default()
}

/// The only stage's (timeout, heartbeat, retries) when `options` are valid,
/// else the diagnostics.
fn options_of(options: &str) -> Result<(u32, Option<u32>, u8), Vec<String>> {
    let validation = validate(&one_stage(options));
    if !validation.diagnostics.is_empty() {
        return Err(spans_of(options));
    }
    let stage = &validation.workflows[0].stages[0];
    Ok((
        stage.timeout_seconds,
        stage.heartbeat_seconds,
        stage.retries,
    ))
}

#[test]
fn stage_options_default_to_a_day_no_heartbeat_and_no_retry() {
    assert_eq!(options_of(""), Ok((86_400, None, 0)));
    assert_eq!(
        options_of("timeout = \"90m\"\nheartbeat = \"5m\"\nretries = 3"),
        Ok((5_400, Some(300), 3))
    );
}

#[test]
fn a_timeout_is_from_30s_to_7d() {
    assert_eq!(options_of("timeout = \"30s\"").map(|o| o.0), Ok(30));
    assert_eq!(options_of("timeout = \"7d\"").map(|o| o.0), Ok(604_800));
    assert_eq!(options_of("timeout = \"168h\"").map(|o| o.0), Ok(604_800));
    assert_eq!(
        options_of("timeout = \"604800s\"").map(|o| o.0),
        Ok(604_800)
    );
    // Just past the limits (29s; 7d and 1s; 8d), and not a duration at all.
    for value in [
        "29s",
        "604801s",
        "8d",
        "0s",
        "99999999999999999999d",
        "1h30m",
        "30",
    ] {
        let end = 13 + value.len();
        let spans = spans_of(&format!("timeout = \"{value}\""));
        assert_eq!(spans, [format!("workflow/invalid-timeout 7:11-{end}")]);
    }
    assert_eq!(
        message_of("timeout = \"8d\""),
        "`timeout` is `8d`; it must be from 30s to 7d"
    );
    assert_eq!(
        message_of("timeout = \"1h30m\""),
        "`timeout` is `1h30m`, which is not a duration"
    );
}

#[test]
fn a_heartbeat_is_shorter_than_the_timeout() {
    let heartbeat = |options: &str| options_of(options).map(|o| o.1);
    assert_eq!(
        heartbeat("timeout = \"30s\"\nheartbeat = \"29s\""),
        Ok(Some(29))
    );
    assert_eq!(heartbeat("heartbeat = \"23h\""), Ok(Some(82_800)));
    assert_eq!(heartbeat("heartbeat = \"1s\""), Ok(Some(1)));
    // Equal to the timeout, longer than it, not shorter than the default, zero.
    for options in [
        "timeout = \"30s\"\nheartbeat = \"30s\"",
        "timeout = \"1h\"\nheartbeat = \"61m\"",
        "heartbeat = \"24h\"",
        "heartbeat = \"0s\"",
    ] {
        let line = 6 + options.lines().count();
        let end = 1 + options.lines().last().unwrap_or_default().len();
        let spans = spans_of(options);
        assert_eq!(
            spans,
            [format!("workflow/invalid-heartbeat {line}:13-{end}")]
        );
    }
    assert_eq!(
        message_of("heartbeat = \"24h\""),
        "`heartbeat` is `24h`, which is not shorter than the stage's timeout (24h)"
    );
}

#[test]
fn a_heartbeat_is_not_compared_with_an_invalid_timeout() {
    assert_eq!(
        spans_of("timeout = \"8d\"\nheartbeat = \"7d\""),
        ["workflow/invalid-timeout 7:11-15"]
    );
    assert_eq!(
        spans_of("timeout = \"8d\"\nheartbeat = \"7\""),
        [
            "workflow/invalid-timeout 7:11-15",
            "workflow/invalid-heartbeat 8:13-16"
        ]
    );
}

#[test]
fn retries_are_from_0_to_5() {
    assert_eq!(options_of("retries = 0").map(|o| o.2), Ok(0));
    assert_eq!(options_of("retries = 5").map(|o| o.2), Ok(5));
    for value in ["6", "-1", "256", "9223372036854775807"] {
        let end = 11 + value.len();
        let spans = spans_of(&format!("retries = {value}"));
        assert_eq!(spans, [format!("workflow/invalid-retries 7:11-{end}")]);
    }
    assert_eq!(
        message_of("retries = 6"),
        "`retries` is 6; it must be from 0 to 5"
    );
}

#[test]
fn stage_options_of_the_wrong_type_are_wrong_types() {
    assert_eq!(
        spans_of("timeout = 30\nheartbeat = 10\nretries = \"2\""),
        [
            "toml/wrong-type 7:11-13",
            "toml/wrong-type 8:13-15",
            "toml/wrong-type 9:11-14"
        ]
    );
}

#[test]
fn default_stage_options_leave_the_canonical_json_as_it_was() {
    let stage_json = |options: &str| {
        let validation = validate(&one_stage(options));
        serde_json::to_value(&validation.workflows[0].stages[0]).unwrap_or_default()
    };
    let bare = serde_json::json!({"name": "only", "agent": "solo", "manifest": "astrolift.toml"});
    assert_eq!(stage_json(""), bare);
    assert_eq!(stage_json("timeout = \"24h\"\nretries = 0"), bare);
    assert_eq!(stage_json("timeout = \"1440m\""), bare);
    let set = stage_json("timeout = \"1h\"\nheartbeat = \"1m\"\nretries = 2");
    assert_eq!(set["timeout_seconds"], 3_600);
    assert_eq!(set["heartbeat_seconds"], 60);
    assert_eq!(set["retries"], 2);
}
