//! JSON Schemas: the checked-in files are current, and fixtures agree with them.

use std::path::{Path, PathBuf};

use astrolift_manifest::schema::{GeneratedSchema, all};
use serde_json::Value;

fn schemas_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
}

/// Regenerates `schemas/*.json`; fails when a checked-in file is stale.
/// `UPDATE_SCHEMAS=1 cargo test -p astrolift-manifest schema` rewrites them.
#[test]
fn checked_in_schemas_are_current() {
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for GeneratedSchema { file_name, json } in all() {
        let path = schemas_dir().join(file_name);
        if update {
            std::fs::write(&path, &json).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != json {
            stale.push(file_name);
        }
    }
    assert!(
        stale.is_empty(),
        "stale JSON Schemas {stale:?}; regenerate with `UPDATE_SCHEMAS=1 cargo test -p astrolift-manifest schema` and commit schemas/"
    );
}

fn schema(file_name: &str) -> Value {
    let generated = all()
        .into_iter()
        .find(|s| s.file_name == file_name)
        .expect("schema");
    serde_json::from_str(&generated.json).expect("json")
}

fn fixture_text(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures5")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn toml_json(relative: &str) -> Value {
    let value: toml::Table = toml::from_str(&fixture_text(relative)).expect("toml");
    serde_json::to_value(value).expect("json")
}

fn yaml_json(relative: &str) -> Value {
    serde_saphyr::from_str(&fixture_text(relative)).expect("yaml")
}

fn errors(schema: &Value, instance: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("schema compiles");
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn valid_fixtures_satisfy_the_schemas() {
    let workspace = schema("workspace.schema.json");
    for file in [
        "ws_valid/astrolift.workspace.yaml",
        "ws_valid/workspaces/headless.yaml",
        "ws_surface_omitted/astrolift.workspace.yaml",
    ] {
        assert_eq!(
            errors(&workspace, &yaml_json(file)),
            Vec::<String>::new(),
            "{file}"
        );
    }
    let config = schema("config.schema.json");
    for file in [
        "config_valid/config.toml",
        "config_valid/base/runtime.toml",
        "config_merge_order/first.toml",
    ] {
        assert_eq!(
            errors(&config, &toml_json(file)),
            Vec::<String>::new(),
            "{file}"
        );
    }
    let native = schema("astrolift.toml.schema.json");
    let mut triggers = toml_json("trig_valid/astrolift.toml");
    if let Value::Object(map) = &mut triggers {
        map.insert("astrolift_version".into(), 1.into());
        map.insert("name".into(), "triage".into());
    }
    assert_eq!(errors(&native, &triggers), Vec::<String>::new());
}

#[test]
fn invalid_fixtures_break_the_schemas() {
    let workspace = schema("workspace.schema.json");
    for file in [
        "ws_unknown_keys/astrolift.workspace.yaml",
        "ws_permissions_errors/astrolift.workspace.yaml",
        "ws_tool_selection_errors/astrolift.workspace.yaml",
        "ws_persistence_errors/astrolift.workspace.yaml",
        "ws_output_surface_errors/workspaces/bad-port.yaml",
    ] {
        assert!(
            !errors(&workspace, &yaml_json(file)).is_empty(),
            "{file} passed the schema"
        );
    }
    let config = schema("config.schema.json");
    let file = "config_unknown_keys/config.toml";
    assert!(
        !errors(&config, &toml_json(file)).is_empty(),
        "{file} passed the schema"
    );
}
