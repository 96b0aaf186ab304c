//! Config manifests: includes, deep merge, file references, secrets.

use astrolift_manifest::config::{
    ConfigOptions, ConfigResult, deep_merge, load_config, load_config_with,
};
use astrolift_manifest::{Limits, MemTree};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::h5_support::{codes, fixture, render};

fn load(case: &str) -> ConfigResult {
    load_config(&fixture(case), "config.toml", &Limits::DEFAULT)
}

fn snapshot(case: &str, result: &ConfigResult) -> Value {
    json!({
        "case": case,
        "diagnostics": render(&result.diagnostics),
        "document": result.document,
        "origins": result.origins,
    })
}

#[test]
fn valid_config_assembles_with_origins_and_executables() {
    let result = load("config_valid");
    assert!(
        result.diagnostics.is_empty(),
        "{:?}",
        render(&result.diagnostics)
    );
    assert_eq!(
        result.files,
        ["config.toml", "base/runtime.toml", "skills/emr.toml"]
    );
    assert_eq!(
        result.document["skills"]["triage"]["scripts"][0]["executable"],
        json!(true)
    );
    assert_eq!(
        result.document["skills"]["emr"]["scripts"][0]["path"],
        json!("skills/emr/fetch.sh")
    );
    assert_eq!(result.origins["/environment/LOG_LEVEL"], "config.toml");
    assert_eq!(result.origins["/environment/REGION"], "base/runtime.toml");
    insta::assert_yaml_snapshot!("config_valid", snapshot("config_valid", &result));
}

#[test]
fn later_includes_win_then_the_main_file_and_arrays_are_replaced() {
    let result = load("config_merge_order");
    assert!(
        result.diagnostics.is_empty(),
        "{:?}",
        render(&result.diagnostics)
    );
    let env = &result.document["environment"];
    assert_eq!(
        (&env["A"], &env["B"], &env["C"]),
        (&json!("first"), &json!("second"), &json!("main"))
    );
    assert_eq!(
        result.document["skills"]["triage"]["tools"],
        json!(["main-tool"])
    );
    assert_eq!(
        result.document["skills"]["writer"]["tools"],
        json!(["second-writer"])
    );
    assert_eq!(result.origins["/skills/writer/tools"], "second.toml");
    insta::assert_yaml_snapshot!(
        "config_merge_order",
        snapshot("config_merge_order", &result)
    );
}

#[test]
fn include_cycle_names_the_whole_cycle() {
    let result = load("config_cycle");
    assert_eq!(codes(&result.diagnostics), ["config/include-cycle"]);
    assert!(
        result.diagnostics[0]
            .message
            .contains("a.toml → nested/b.toml → a.toml")
    );
    assert_eq!(result.diagnostics[0].path, "nested/b.toml");
    insta::assert_yaml_snapshot!("config_cycle", render(&result.diagnostics));
}

#[test]
fn sixteen_levels_of_includes_are_allowed() {
    let result = load("config_depth_16");
    assert!(
        result.diagnostics.is_empty(),
        "{:?}",
        render(&result.diagnostics)
    );
    assert_eq!(result.document["environment"]["DEEPEST"], json!("l16"));
}

#[test]
fn the_seventeenth_level_is_an_error_on_the_include_entry() {
    let result = load("config_depth_17");
    assert_eq!(codes(&result.diagnostics), ["config/include-depth"]);
    assert_eq!(result.diagnostics[0].path, "l16.toml");
    insta::assert_yaml_snapshot!("config_depth_17", render(&result.diagnostics));
}

#[test]
fn include_errors_point_at_each_entry() {
    let result = load("config_include_errors");
    insta::assert_yaml_snapshot!("config_include_errors", render(&result.diagnostics));
    assert_eq!(
        codes(&result.diagnostics),
        [
            "config/include-missing",
            "config/path-escape",
            "config/path-escape",
            "config/not-utf8"
        ]
    );
    let lines: Vec<u32> = result.diagnostics.iter().map(|d| d.span.line).collect();
    assert_eq!(lines, [2, 3, 4, 5]);
}

#[test]
fn referenced_files_must_exist_and_prompts_be_utf8() {
    let result = load("config_files");
    insta::assert_yaml_snapshot!("config_files", snapshot("config_files", &result));
    let found = codes(&result.diagnostics);
    for code in [
        "config/not-utf8",
        "config/missing-file",
        "config/path-escape",
    ] {
        assert!(found.contains(&code), "{code} missing from {found:?}");
    }
}

#[test]
fn environment_and_secrets_rules() {
    let result = load("config_env_secrets");
    let rendered = render(&result.diagnostics);
    insta::assert_yaml_snapshot!(
        "config_env_secrets",
        snapshot("config_env_secrets", &result)
    );
    let all = rendered.join("\n");
    assert!(!all.contains("hunter2"), "a plaintext secret was echoed");
    assert!(!all.contains("sk-live"), "a plaintext secret was echoed");
    assert!(
        result.document["environment"]
            .get("ASTROLIFT_TASK_ID")
            .is_none()
    );
    assert_eq!(result.document["skill_slug"], json!("triage"));
    let found = codes(&result.diagnostics);
    for code in [
        "config/skill-slug-alias",
        "config/reserved-env",
        "config/plaintext-secret",
        "config/invalid-skill-slug",
        "toml/wrong-type",
        "toml/unknown-key",
    ] {
        assert!(found.contains(&code), "{code} missing from {found:?}");
    }
}

#[test]
fn unknown_keys_get_did_you_mean() {
    let result = load("config_unknown_keys");
    insta::assert_yaml_snapshot!("config_unknown_keys", render(&result.diagnostics));
    assert!(
        result
            .diagnostics
            .iter()
            .all(|d| d.code == "toml/unknown-key")
    );
    assert!(result.diagnostics.iter().all(|d| {
        d.help
            .as_deref()
            .is_some_and(|h| h.starts_with("did you mean"))
    }));
}

#[test]
fn files_without_a_blob_store_are_an_error() {
    let tree = fixture("config_no_blob_store");
    let with_store = load_config(&tree, "config.toml", &Limits::DEFAULT);
    assert!(with_store.diagnostics.is_empty());
    let options = ConfigOptions {
        limits: Limits::DEFAULT,
        blob_store: false,
    };
    let without = load_config_with(&tree, "config.toml", &options);
    insta::assert_yaml_snapshot!("config_no_blob_store", render(&without.diagnostics));
    assert_eq!(codes(&without.diagnostics), ["config/no-blob-store"]);
}

#[test]
fn a_missing_main_file_is_a_diagnostic() {
    let result = load_config(&MemTree::new(), "nope.toml", &Limits::DEFAULT);
    assert_eq!(codes(&result.diagnostics), ["config/missing-file"]);
    assert_eq!(result.to_json(false), json!({}));
}

#[test]
fn assemble_json_with_origins() {
    let tree = MemTree::from_files([("c.toml", "[environment]\nA = \"1\"\n")]);
    let result = load_config(&tree, "c.toml", &Limits::DEFAULT);
    assert_eq!(
        result.to_json(true),
        json!({"document": {"environment": {"A": "1"}}, "origins": {"/environment/A": "c.toml"}})
    );
}

/// Documents shaped like config manifests: a key is either always a table or
/// never one (the schema fixes it, and a value of the wrong type is dropped
/// with a diagnostic before merging). Here keys `t`–`w` hold tables and keys
/// `a`–`d` hold scalars or arrays.
fn config_like() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        (0i64..5).prop_map(Value::from),
        "[a-c]{0,2}".prop_map(Value::from),
        prop::collection::vec((0i64..3).prop_map(Value::from), 0..3).prop_map(Value::from),
    ];
    let table = prop::collection::btree_map("[a-d]", leaf.clone(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()));
    table.prop_recursive(3, 32, 4, move |inner| {
        (
            prop::collection::btree_map("[a-d]", leaf.clone(), 0..4),
            prop::collection::btree_map("[t-w]", inner, 0..3),
        )
            .prop_map(|(leaves, tables)| Value::Object(leaves.into_iter().chain(tables).collect()))
    })
}

fn merged(mut a: Value, b: Value) -> Value {
    deep_merge(&mut a, b);
    a
}

proptest! {
    /// Later wins, tables merge: merge(merge(a,b),c) == merge(a,merge(b,c)).
    #[test]
    fn deep_merge_is_associative(a in config_like(), b in config_like(), c in config_like()) {
        let left = merged(merged(a.clone(), b.clone()), c.clone());
        let right = merged(a, merged(b, c));
        prop_assert_eq!(left, right);
    }

    /// The later value always wins on scalars and arrays.
    #[test]
    fn later_wins(a in config_like(), b in config_like()) {
        let result = merged(a, b.clone());
        if let Value::Object(b) = b {
            for (key, value) in b {
                if !value.is_object() {
                    prop_assert_eq!(&result[&key], &value);
                }
            }
        }
    }
}

#[test]
fn a_file_included_twice_is_not_a_cycle() {
    let result = load("config_diamond");
    assert!(
        result.diagnostics.is_empty(),
        "{:?}",
        render(&result.diagnostics)
    );
    assert_eq!(
        result.document["environment"],
        json!({"BASE": "yes", "SIDE": "right"})
    );
    assert_eq!(result.origins["/environment/SIDE"], "right.toml");
    assert_eq!(result.origins["/environment/BASE"], "shared/base.toml");
}

#[test]
fn problems_inside_included_files_are_reported_in_those_files() {
    let result = load("config_included_errors");
    insta::assert_yaml_snapshot!("config_included_errors", render(&result.diagnostics));
    let paths: Vec<&str> = result.diagnostics.iter().map(|d| d.path.as_str()).collect();
    assert!(paths.contains(&"parts/broken.toml"), "{paths:?}");
    assert!(paths.contains(&"parts/typo.toml"), "{paths:?}");
    assert!(paths.contains(&"config.toml"), "{paths:?}");
    assert_eq!(result.document["environment"]["MAIN"], json!("ok"));
}
