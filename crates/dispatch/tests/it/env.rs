//! `render_runtime_env`: one test per variable's presence rule, and the
//! property that no manifest value can set a reserved variable.

use std::collections::BTreeMap;

use astrolift_dispatch::env::{
    BriefView, DispatchContext, PayloadView, RuntimeOptions, SnapshotUpload, SnapshotView,
    VncOptions, render_runtime_env, without_reserved,
};
use astrolift_dispatch::prompts::{PromptTexts, SkillText, ToolContract};
use astrolift_manifest::native::RESERVED_ENV;
use proptest::prelude::*;
use serde_json::{Value, json};

fn snapshot() -> SnapshotView {
    SnapshotView {
        name: "triage".to_owned(),
        brief: None,
        environment: BTreeMap::from([("LOG_LEVEL".to_owned(), "info".to_owned())]),
        payload: PayloadView {
            digest: "sha256:abc".to_owned(),
            ..PayloadView::default()
        },
        ..SnapshotView::default()
    }
}

fn runtime() -> RuntimeOptions {
    RuntimeOptions {
        controller_url: "https://control.example".to_owned(),
        workspace: "/workspace".to_owned(),
        ..RuntimeOptions::default()
    }
}

fn dispatch(payload: Option<Value>) -> DispatchContext {
    DispatchContext {
        task_id: "task-1".to_owned(),
        payload,
    }
}

fn render(
    snapshot: &SnapshotView,
    payload: Option<Value>,
    runtime: &RuntimeOptions,
) -> BTreeMap<String, String> {
    render_runtime_env(snapshot, &dispatch(payload), runtime)
        .expect("renders")
        .vars
}

fn minimal() -> BTreeMap<String, String> {
    render(&snapshot(), None, &runtime())
}

#[test]
fn trigger_payload_is_set_for_an_object() {
    let vars = render(&snapshot(), Some(json!({"mode": "triage"})), &runtime());
    assert_eq!(vars["ASTROLIFT_TRIGGER_PAYLOAD"], r#"{"mode":"triage"}"#);
}

#[test]
fn trigger_payload_is_absent_for_the_three_empty_payloads() {
    for payload in [None, Some(Value::Null), Some(json!({}))] {
        let vars = render(&snapshot(), payload.clone(), &runtime());
        assert!(
            !vars.contains_key("ASTROLIFT_TRIGGER_PAYLOAD"),
            "{payload:?}"
        );
        assert!(!vars.values().any(|v| v == "null"), "{payload:?}");
    }
}

#[test]
fn task_id_controller_url_and_workspace_are_always_set() {
    let vars = minimal();
    assert_eq!(vars["ASTROLIFT_TASK_ID"], "task-1");
    assert_eq!(vars["ASTROLIFT_CONTROLLER_URL"], "https://control.example");
    assert_eq!(vars["ASTROLIFT_WORKSPACE"], "/workspace");
}

#[test]
fn callback_url_and_cluster_key_only_with_a_callback_route_and_fresh_each_render() {
    let vars = minimal();
    assert!(
        !vars.contains_key("AGENT_CALLBACK_URL") && !vars.contains_key("ASTROLIFT_CLUSTER_KEY")
    );
    let with = RuntimeOptions {
        callback_url: Some("https://control.example/cb/task-1".to_owned()),
        ..runtime()
    };
    let first = render(&snapshot(), None, &with);
    let second = render(&snapshot(), None, &with);
    assert_eq!(
        first["AGENT_CALLBACK_URL"],
        "https://control.example/cb/task-1"
    );
    assert_eq!(first["ASTROLIFT_CLUSTER_KEY"].len(), 64);
    assert_ne!(
        first["ASTROLIFT_CLUSTER_KEY"], second["ASTROLIFT_CLUSTER_KEY"],
        "minted per render"
    );
}

#[test]
fn brief_id_and_hash_only_with_a_brief() {
    assert!(
        !minimal().contains_key("ASTROLIFT_BRIEF_ID")
            && !minimal().contains_key("ASTROLIFT_BRIEF_HASH")
    );
    let snap = SnapshotView {
        brief: Some(BriefView {
            path: "briefs/triage.md".to_owned(),
            sha256: "f00d".to_owned(),
        }),
        ..snapshot()
    };
    let vars = render(&snap, None, &runtime());
    assert_eq!(vars["ASTROLIFT_BRIEF_ID"], "briefs/triage.md");
    assert_eq!(vars["ASTROLIFT_BRIEF_HASH"], "f00d");
}

#[test]
fn payload_url_and_hash_only_when_the_package_does_not_ship_inline() {
    assert!(
        !minimal().contains_key("ASTROLIFT_PAYLOAD_URL")
            && !minimal().contains_key("ASTROLIFT_PAYLOAD_HASH")
    );
    let with = RuntimeOptions {
        payload_url: Some("https://blobs.example/p.tar.gz?sig".to_owned()),
        ..runtime()
    };
    let vars = render(&snapshot(), None, &with);
    assert_eq!(
        vars["ASTROLIFT_PAYLOAD_URL"],
        "https://blobs.example/p.tar.gz?sig"
    );
    assert_eq!(vars["ASTROLIFT_PAYLOAD_HASH"], "sha256:abc");
}

#[test]
fn system_and_prompt_absent_in_listener_mode() {
    let listener = RuntimeOptions {
        listener_mode: true,
        ..runtime()
    };
    let vars = render(&snapshot(), Some(json!({"a": 1})), &listener);
    assert!(!vars.contains_key("AGENT_SYSTEM") && !vars.contains_key("AGENT_PROMPT"));
    assert!(vars.contains_key("ASTROLIFT_TRIGGER_PAYLOAD"));
}

#[test]
fn system_prompt_is_brief_then_skills_in_order_then_deduplicated_tools() {
    let prompts = PromptTexts {
        brief: Some("You triage incidents.\n".to_owned()),
        skills: vec![
            SkillText {
                name: "collect".to_owned(),
                instructions: "Collect logs.".to_owned(),
            },
            SkillText {
                name: "report".to_owned(),
                instructions: "Write a report.".to_owned(),
            },
        ],
        tools: vec![
            ToolContract {
                slug: "jira-search".to_owned(),
                description: Some("Search Jira".to_owned()),
            },
            ToolContract {
                slug: "jira-create".to_owned(),
                description: None,
            },
            ToolContract {
                slug: "jira-search".to_owned(),
                description: Some("again".to_owned()),
            },
        ],
    };
    let with = RuntimeOptions {
        prompts,
        ..runtime()
    };
    let vars = render(&snapshot(), None, &with);
    assert_eq!(
        vars["AGENT_SYSTEM"],
        "You triage incidents.\n\n## Skill: collect\n\nCollect logs.\n\n## Skill: report\n\nWrite a report.\n\n## Tools\n\n- `jira-search`: Search Jira\n- `jira-create`"
    );
}

#[test]
fn kickoff_prompt_carries_the_payload_json_inline() {
    let vars = render(
        &snapshot(),
        Some(json!({"mode": "triage", "issue": "OPS-17"})),
        &runtime(),
    );
    assert!(vars["AGENT_PROMPT"].contains(&vars["ASTROLIFT_TRIGGER_PAYLOAD"]));
    let empty = minimal();
    assert!(empty["AGENT_PROMPT"].contains("No input was supplied"));
    assert!(!empty["AGENT_PROMPT"].contains("null"));
}

#[test]
fn snapshot_variables_only_for_vnc_with_a_blob_store_and_tmux_for_vnc() {
    let plain = minimal();
    assert!(
        plain
            .keys()
            .all(|k| !k.starts_with("ASTROLIFT_SNAPSHOT_") && k != "ASTROLIFT_TMUX_SESSION")
    );
    let vnc_no_store = RuntimeOptions {
        vnc: Some(VncOptions {
            tmux_session: "agent".to_owned(),
            snapshot: None,
        }),
        ..runtime()
    };
    let vars = render(&snapshot(), None, &vnc_no_store);
    assert_eq!(vars["ASTROLIFT_TMUX_SESSION"], "agent");
    assert!(vars.keys().all(|k| !k.starts_with("ASTROLIFT_SNAPSHOT_")));
    let vnc = RuntimeOptions {
        vnc: Some(VncOptions {
            tmux_session: "agent".to_owned(),
            snapshot: Some(SnapshotUpload {
                url: "s3://blobs/snapshots/task-1".to_owned(),
                interval_seconds: 60,
                local_path: "/tmp/snapshot".to_owned(),
            }),
        }),
        ..runtime()
    };
    let vars = render(&snapshot(), None, &vnc);
    assert_eq!(
        vars["ASTROLIFT_SNAPSHOT_URL"],
        "s3://blobs/snapshots/task-1"
    );
    assert_eq!(vars["ASTROLIFT_SNAPSHOT_INTERVAL"], "60");
    assert_eq!(vars["ASTROLIFT_SNAPSHOT_LOCAL_PATH"], "/tmp/snapshot");
}

#[test]
fn manifest_environment_is_merged_minus_reserved_names_with_warnings() {
    let mut snap = snapshot();
    snap.environment
        .insert("ASTROLIFT_TASK_ID".to_owned(), "evil".to_owned());
    snap.environment
        .insert("AGENT_PROMPT".to_owned(), "evil".to_owned());
    let rendered = render_runtime_env(&snap, &dispatch(None), &runtime()).expect("renders");
    assert_eq!(rendered.vars["LOG_LEVEL"], "info");
    assert_eq!(rendered.vars["ASTROLIFT_TASK_ID"], "task-1");
    assert_ne!(rendered.vars["AGENT_PROMPT"], "evil");
    let dropped: Vec<_> = rendered.warnings.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(dropped, ["AGENT_PROMPT", "ASTROLIFT_TASK_ID"]);
}

/// Secret references pass the same filter: every reserved name is dropped with a warning,
/// the others are kept (a snapshot written before the manifest refused them included).
#[test]
fn secret_references_never_carry_a_reserved_name() {
    let mut secrets: BTreeMap<String, String> = RESERVED_ENV
        .iter()
        .map(|name| ((*name).to_owned(), format!("secret://agents/{name}")))
        .collect();
    secrets.insert("API_TOKEN".to_owned(), "secret://agents/token".to_owned());
    let mut warnings = Vec::new();
    let kept = without_reserved("[secrets]", &secrets, &mut warnings);
    assert_eq!(kept.keys().collect::<Vec<_>>(), ["API_TOKEN"]);
    assert_eq!(warnings.len(), RESERVED_ENV.len());
    assert!(
        warnings[0].message.starts_with("[secrets] sets"),
        "{warnings:?}"
    );
}

#[test]
fn the_snapshot_view_reads_the_snapshot_json() {
    let json = json!({
        "schema": "astrolift.snapshot/v1", "name": "triage",
        "brief": {"path": "briefs/t.md", "sha256": "aa", "context_files": []},
        "skills": [], "workload": null, "runtime_image": null,
        "environment": {"LOG_LEVEL": "info"}, "secrets": {"JIRA": "secret://agents/jira"},
        "payload": {"digest": "sha256:ff", "size": 1, "files": 1, "uncompressed_size": 1}
    });
    let view = SnapshotView::from_json(&json).expect("reads");
    assert_eq!(view.brief.map(|b| b.path).as_deref(), Some("briefs/t.md"));
    assert_eq!(view.payload.digest, "sha256:ff");
}

fn reserved_or_any() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(RESERVED_ENV).prop_map(str::to_owned),
        "[A-Z_][A-Z0-9_]{0,20}",
    ]
}

proptest! {
    /// Whatever the manifest's `[environment]` holds, every reserved variable
    /// is either absent or the dispatcher's own value.
    #[test]
    fn no_manifest_value_sets_a_reserved_variable(
        environment in proptest::collection::btree_map(reserved_or_any(), "[ -~]{0,12}", 0..12),
        listener in any::<bool>(),
        callback in any::<bool>(),
    ) {
        let mut snap = snapshot();
        snap.environment = environment.clone();
        let options = RuntimeOptions {
            listener_mode: listener,
            callback_url: callback.then(|| "https://cb".to_owned()),
            ..runtime()
        };
        let baseline = render_runtime_env(&SnapshotView { environment: BTreeMap::new(), ..snap.clone() }, &dispatch(None), &options)
            .expect("renders");
        let rendered = render_runtime_env(&snap, &dispatch(None), &options).expect("renders");
        for name in RESERVED_ENV {
            if *name == "ASTROLIFT_CLUSTER_KEY" {
                prop_assert_eq!(rendered.vars.contains_key(*name), baseline.vars.contains_key(*name));
                if let (Some(key), Some(value)) = (rendered.vars.get(*name), environment.get(*name)) {
                    prop_assert_ne!(key, value);
                }
            } else {
                prop_assert_eq!(rendered.vars.get(*name), baseline.vars.get(*name), "{}", name);
            }
        }
        let reserved_given = environment.keys().filter(|k| RESERVED_ENV.contains(&k.as_str())).count();
        prop_assert_eq!(rendered.warnings.len(), reserved_given);
    }
}
