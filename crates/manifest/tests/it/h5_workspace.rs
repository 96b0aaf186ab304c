//! Workspace manifests (docs/reference.md §5.4): every block, valid and invalid, and the YAML limits.

use std::time::{Duration, Instant};

use astrolift_manifest::discovery::discover;
use astrolift_manifest::workspace::validate_workspace;
use astrolift_manifest::{Limits, MemTree};
use serde_json::{Value, json};

use crate::h5_support::{codes, fixture, render};

/// Validates every workspace manifest of a fixture: diagnostics and models.
fn check(case: &str) -> (Vec<String>, Value) {
    let tree = fixture(case);
    let mut diagnostics = Vec::new();
    let mut models = Vec::new();
    for path in discover(&tree, &Limits::DEFAULT).workspace_manifests {
        let (model, found) = validate_workspace(&tree, &path, &Limits::DEFAULT);
        diagnostics.extend(render(&found));
        models.push(serde_json::to_value(model).unwrap_or(Value::Null));
    }
    (diagnostics, Value::Array(models))
}

fn snapshot_case(case: &str) -> Vec<String> {
    let (diagnostics, _) = check(case);
    insta::assert_yaml_snapshot!(case, diagnostics);
    diagnostics
}

fn has(diagnostics: &[String], code: &str) -> bool {
    diagnostics
        .iter()
        .any(|d| d.split(' ').nth(1) == Some(code))
}

#[test]
fn the_seed_example_is_valid_and_resolves_defaults() {
    let (diagnostics, models) = check("ws_valid");
    assert!(diagnostics.is_empty(), "{diagnostics:#?}");
    insta::assert_yaml_snapshot!("ws_valid_models", models);
    assert_eq!(models[0]["spec"]["outputSurface"]["healthPath"], json!("/"));
    assert_eq!(models[1]["spec"]["outputSurface"]["port"], Value::Null);
    assert_eq!(
        models[0]["spec"]["credentials"][1]["required"],
        json!(false)
    );
}

#[test]
fn omitted_surface_compat_is_a_notice_and_defaults_to_both() {
    let tree = fixture("ws_surface_omitted");
    let (model, diagnostics) =
        validate_workspace(&tree, "astrolift.workspace.yaml", &Limits::DEFAULT);
    assert_eq!(codes(&diagnostics), ["workspace/surface-compat-default"]);
    let model = model.expect("model");
    assert_eq!(model.metadata.surface_compat, ["workflow", "agent-session"]);
    assert!(!model.metadata.surface_compat_declared);
    insta::assert_yaml_snapshot!("ws_surface_omitted", render(&diagnostics));
}

#[test]
fn metadata_rules() {
    let d = snapshot_case("ws_metadata_errors");
    for code in [
        "workspace/invalid-slug",
        "workspace/invalid-version",
        "workspace/unknown-value",
        "yaml/wrong-type",
        "yaml/unknown-key",
    ] {
        assert!(has(&d, code), "{code}: {d:#?}");
    }
}

#[test]
fn missing_metadata_keys_and_empty_surface_compat() {
    let d = snapshot_case("ws_metadata_missing");
    assert!(has(&d, "workspace/empty-surface-compat"), "{d:#?}");
    assert_eq!(
        d.iter().filter(|l| l.contains("yaml/missing-key")).count(),
        2,
        "{d:#?}"
    );
}

#[test]
fn agent_and_sub_agent_rules() {
    let d = snapshot_case("ws_agent_errors");
    for code in [
        "workspace/duplicate",
        "workspace/invalid-slug",
        "yaml/missing-key",
        "yaml/unknown-key",
        "yaml/wrong-type",
    ] {
        assert!(has(&d, code), "{code}: {d:#?}");
    }
}

#[test]
fn skill_rules() {
    let d = snapshot_case("ws_skills_errors");
    for code in [
        "workspace/invalid-slug",
        "workspace/invalid-version",
        "workspace/duplicate",
        "yaml/missing-key",
        "yaml/wrong-type",
    ] {
        assert!(has(&d, code), "{code}: {d:#?}");
    }
}

#[test]
fn tool_selection_rules() {
    let d = snapshot_case("ws_tool_selection_errors");
    for code in [
        "workspace/missing-tool-name",
        "workspace/unexpected-tool-name",
        "workspace/unknown-value",
        "workspace/invalid-interpolation",
        "yaml/missing-key",
    ] {
        assert!(has(&d, code), "{code}: {d:#?}");
    }
    assert!(
        !d.iter().any(|l| l.contains("input.ok}`")),
        "a valid ${{input.…}} was reported"
    );
}

#[test]
fn credential_and_env_rules() {
    let d = snapshot_case("ws_credentials_env_errors");
    for code in [
        "workspace/invalid-credential-name",
        "workspace/unknown-value",
        "workspace/duplicate",
        "workspace/undeclared-credential",
        "workspace/reserved-env",
        "workspace/invalid-env-name",
        "yaml/missing-key",
        "yaml/wrong-type",
    ] {
        assert!(has(&d, code), "{code}: {d:#?}");
    }
}

#[test]
fn permission_rules() {
    let d = snapshot_case("ws_permissions_errors");
    assert_eq!(
        d.iter()
            .filter(|l| l.contains("workspace/unknown-value"))
            .count(),
        3,
        "{d:#?}"
    );
    assert!(has(&d, "yaml/unknown-key"));
}

#[test]
fn persistence_rules() {
    let d = snapshot_case("ws_persistence_errors");
    assert_eq!(
        d.iter()
            .filter(|l| l.contains("workspace/invalid-persistence-path"))
            .count(),
        4,
        "{d:#?}"
    );
}

#[test]
fn output_surface_rules() {
    let d = snapshot_case("ws_output_surface_errors");
    for code in [
        "workspace/missing-port",
        "workspace/invalid-port",
        "workspace/invalid-health-path",
        "workspace/unknown-value",
        "yaml/wrong-type",
    ] {
        assert!(has(&d, code), "{code}: {d:#?}");
    }
}

#[test]
fn unknown_keys_get_did_you_mean() {
    let d = snapshot_case("ws_unknown_keys");
    assert_eq!(
        d.iter().filter(|l| l.contains("did you mean")).count(),
        4,
        "{d:#?}"
    );
}

#[test]
fn syntax_errors_and_wrong_roots_are_diagnostics() {
    let d = snapshot_case("ws_syntax");
    assert!(has(&d, "yaml/syntax"), "{d:#?}");
    let d = snapshot_case("ws_not_a_mapping");
    assert!(has(&d, "yaml/wrong-type"), "{d:#?}");
}

/// Runs `case` and asserts it ends in a `yaml/limit` diagnostic well within a second.
fn assert_limited(case: &str) {
    let tree = fixture(case);
    let start = Instant::now();
    let (model, diagnostics) =
        validate_workspace(&tree, "astrolift.workspace.yaml", &Limits::DEFAULT);
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(1), "{case} took {elapsed:?}");
    assert!(model.is_none());
    assert_eq!(
        codes(&diagnostics),
        ["yaml/limit"],
        "{:#?}",
        render(&diagnostics)
    );
    insta::assert_yaml_snapshot!(case, render(&diagnostics));
}

#[test]
fn an_alias_bomb_is_a_limit_diagnostic_not_a_hang() {
    assert_limited("ws_alias_bomb");
}

#[test]
fn deep_block_nesting_is_a_limit_diagnostic() {
    assert_limited("ws_deep_nesting");
}

#[test]
fn deep_flow_nesting_is_a_limit_diagnostic() {
    assert_limited("ws_deep_flow");
}

#[test]
fn too_many_nodes_is_a_limit_diagnostic() {
    let mut text = String::from("metadata:\n  display:\n    badges:\n");
    for _ in 0..30_000 {
        text.push_str("      - x\n");
    }
    let tree = MemTree::from_files([("astrolift.workspace.yaml", text)]);
    let limits = Limits {
        manifest_file: 4 * 1024 * 1024,
        ..Limits::DEFAULT
    };
    let start = Instant::now();
    let (_, diagnostics) = validate_workspace(&tree, "astrolift.workspace.yaml", &limits);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(
        codes(&diagnostics),
        ["yaml/limit"],
        "{:#?}",
        render(&diagnostics)
    );
}
