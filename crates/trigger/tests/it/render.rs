//! `render_dispatch`: a recorded dispatch of `examples/single-agent` (snapshot and archive
//! in a directory blob store) rendered into docs/reference.md §11's table, one case per row, present and
//! absent; a fresh cluster key per render whose hash the task keeps; a finished task is not
//! rendered; a dispatch only in the local outbox renders.

use std::collections::BTreeMap;
use std::sync::Arc;

use astrolift_dispatch::content::{BlobContent, ContentSource, UrlOptions};
use astrolift_dispatch::dispatch::{DispatchMessage, DispatchQueue, record};
use astrolift_dispatch::file_outbox::SqliteOutbox;
use astrolift_dispatch::message::{EnvSpecRef, Source};
use astrolift_dispatch::render::{
    DEFAULT_WORKSPACE, RenderDispatchError, RenderOptions, RenderedDispatch, key_hash,
    render_dispatch, vnc_options,
};
use astrolift_manifest::Limits;
use astrolift_store::StateStore;
use astrolift_store::blob::{BlobKey, BlobStore};
use astrolift_store::state::tasks::report_task;
use astrolift_store::state::{SqliteStateStore, TaskReport, TaskStatus};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::message::{Registered, register_example, request};

const NOW: i64 = 1_767_225_600;
const CONTROLLER: &str = "https://controller.example.com";
const CALLBACK_BASE: &str = "https://astrolift.example.com";

/// What a case varies.
#[derive(Debug, Clone, Default)]
struct Knobs {
    payload: Option<Value>,
    callback: bool,
    inline: bool,
    listener: bool,
    runtime: Option<&'static str>,
}

/// A state store with one recorded dispatch of the example (or of an inline agent).
struct Recorded {
    state: Arc<dyn StateStore>,
    content: BlobContent,
    dispatch_id: String,
    task_id: String,
    _registered: Registered,
    _dir: tempfile::TempDir,
}

/// A snapshot without a brief whose package ships inline, stored beside the example's.
async fn inline_snapshot(blobs: &dyn BlobStore) -> String {
    let snapshot = serde_json::to_vec(&json!({
        "name": "inline-agent",
        "payload": {"digest": "sha256:00", "size": 0, "inline": true},
    }))
    .expect("json");
    let hash = hex::encode(Sha256::digest(&snapshot));
    blobs
        .put_if_absent(
            &BlobKey::snapshot(&hash).expect("key"),
            snapshot.into(),
            "application/json",
        )
        .await
        .expect("stores the snapshot");
    hash
}

async fn recorded(knobs: &Knobs, queue: Option<&dyn DispatchQueue>) -> Recorded {
    let registered = register_example().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("sqlite"),
    );
    let content = BlobContent::new(
        registered.blobs.clone(),
        UrlOptions::default(),
        Limits::DEFAULT,
    );
    let mut agent = registered.agent.clone();
    if knobs.inline {
        agent.snapshot_hash = inline_snapshot(registered.blobs.as_ref()).await;
    }
    let read = content.content(&agent, NOW).await.expect("content");
    let env_spec = knobs.runtime.map(|runtime| EnvSpecRef {
        name: "triage-prod".to_owned(),
        agent_type: Some("claude".to_owned()),
        runtime: Some(runtime.to_owned()),
    });
    let callback_base = knobs.callback.then_some(CALLBACK_BASE);
    let mut request = request(
        &agent,
        Source::Manual,
        knobs.payload.as_ref(),
        &read,
        callback_base,
    );
    request.env_spec = env_spec;
    let result = record(state.as_ref(), &request).await.expect("records");
    if let Some(queue) = queue {
        queue
            .publish(&DispatchMessage::of(&result.dispatch).expect("message"))
            .await
            .expect("queued");
    }
    Recorded {
        state,
        content,
        dispatch_id: result.id,
        task_id: result.dispatch.task_id,
        _registered: registered,
        _dir: dir,
    }
}

fn options(listener: bool) -> RenderOptions {
    RenderOptions {
        controller_url: CONTROLLER.to_owned(),
        workspace: DEFAULT_WORKSPACE.to_owned(),
        listener,
    }
}

async fn render(
    recorded: &Recorded,
    listener: bool,
) -> Result<RenderedDispatch, RenderDispatchError> {
    render_dispatch(
        recorded.state.as_ref(),
        &recorded.content,
        &recorded.dispatch_id,
        &options(listener),
        NOW + 5,
    )
    .await
}

async fn vars_of(knobs: &Knobs) -> (BTreeMap<String, String>, Recorded) {
    let recorded = recorded(knobs, None).await;
    let rendered = render(&recorded, knobs.listener).await.expect("renders");
    (rendered.env.vars, recorded)
}

/// The knobs under which every conditional row of the table is present.
fn everything() -> Knobs {
    Knobs {
        payload: Some(json!({"mode": "triage", "issue": "OPS-1"})),
        callback: true,
        inline: false,
        listener: false,
        runtime: Some("claude-code-vnc"),
    }
}

#[tokio::test]
async fn every_row_of_the_seed_table_is_present_and_absent_when_it_says() {
    let vnc = [
        "ASTROLIFT_SNAPSHOT_URL",
        "ASTROLIFT_SNAPSHOT_INTERVAL",
        "ASTROLIFT_SNAPSHOT_LOCAL_PATH",
        "ASTROLIFT_TMUX_SESSION",
    ];
    // (row, knobs that make it absent, its variables); `everything()` makes each present.
    let rows: Vec<(&str, Knobs, Vec<&str>)> = vec![
        (
            "payload",
            Knobs {
                payload: None,
                ..everything()
            },
            vec!["ASTROLIFT_TRIGGER_PAYLOAD"],
        ),
        (
            "callback route",
            Knobs {
                callback: false,
                ..everything()
            },
            vec!["AGENT_CALLBACK_URL", "ASTROLIFT_CLUSTER_KEY"],
        ),
        (
            "brief",
            Knobs {
                inline: true,
                ..everything()
            },
            vec!["ASTROLIFT_BRIEF_ID", "ASTROLIFT_BRIEF_HASH"],
        ),
        (
            "package URL",
            Knobs {
                inline: true,
                ..everything()
            },
            vec!["ASTROLIFT_PAYLOAD_URL", "ASTROLIFT_PAYLOAD_HASH"],
        ),
        (
            "prompts",
            Knobs {
                listener: true,
                ..everything()
            },
            vec!["AGENT_SYSTEM", "AGENT_PROMPT"],
        ),
        (
            "VNC, another runtime",
            Knobs {
                runtime: Some("claude-code"),
                ..everything()
            },
            vnc.to_vec(),
        ),
        (
            "VNC, no env spec",
            Knobs {
                runtime: None,
                ..everything()
            },
            vnc.to_vec(),
        ),
    ];
    let (full, recorded) = vars_of(&everything()).await;
    for (row, absent_knobs, names) in &rows {
        for name in names {
            assert!(
                full.contains_key(*name),
                "{row}: {name} is present: {full:#?}"
            );
        }
        let (vars, _) = vars_of(absent_knobs).await;
        for name in names {
            assert!(
                !vars.contains_key(*name),
                "{row}: {name} is absent: {vars:#?}"
            );
        }
    }
    // The rows that are never absent, with their values.
    for knobs in [everything(), Knobs::default()] {
        let (vars, recorded) = vars_of(&knobs).await;
        assert_eq!(vars["ASTROLIFT_TASK_ID"], recorded.task_id);
        assert_eq!(vars["ASTROLIFT_CONTROLLER_URL"], CONTROLLER);
        assert_eq!(vars["ASTROLIFT_WORKSPACE"], "/workspace");
    }
    assert_eq!(
        full["ASTROLIFT_TRIGGER_PAYLOAD"],
        r#"{"mode":"triage","issue":"OPS-1"}"#
    );
    assert_eq!(
        full["AGENT_CALLBACK_URL"],
        format!("{CALLBACK_BASE}/callbacks/{}", recorded.task_id)
    );
    assert!(full["AGENT_PROMPT"].contains(r#"{"mode":"triage","issue":"OPS-1"}"#));
    assert!(full["ASTROLIFT_PAYLOAD_URL"].starts_with("file://"));
    assert_eq!(
        full["ASTROLIFT_PAYLOAD_HASH"],
        recorded._registered.agent.payload_digest
    );
    assert_eq!(full["ASTROLIFT_TMUX_SESSION"], "astrolift");
    assert!(
        full["ASTROLIFT_SNAPSHOT_URL"]
            .ends_with(&format!("/sessions/{}/snapshot.tar.gz", recorded.task_id)),
        "{}",
        full["ASTROLIFT_SNAPSHOT_URL"]
    );
    // The manifest's own [environment] comes last, less reserved names.
    assert_eq!(full["LOG_LEVEL"], "info");
    // Without a blob store a VNC runtime has its tmux session but no snapshot upload.
    let no_blobs = vnc_options(Some("claude-code-vnc"), None, "t").expect("a VNC runtime");
    assert_eq!(
        (no_blobs.tmux_session.as_str(), no_blobs.snapshot),
        ("astrolift", None)
    );
}

#[tokio::test]
async fn secrets_stay_references() {
    let recorded = recorded(&everything(), None).await;
    let rendered = render(&recorded, false).await.expect("renders");
    assert_eq!(
        rendered
            .secrets
            .get("ANTHROPIC_API_KEY")
            .map(String::as_str),
        Some("secret://agents/anthropic")
    );
    assert!(
        rendered
            .secrets
            .values()
            .all(|r| r.starts_with("secret://"))
    );
    assert!(!rendered.env.vars.contains_key("ANTHROPIC_API_KEY"));
}

#[tokio::test]
async fn each_render_mints_a_key_and_only_the_latest_hash_is_kept() {
    let recorded = recorded(&everything(), None).await;
    let first = render(&recorded, false).await.expect("renders");
    let second = render(&recorded, false).await.expect("renders again");
    let key = |r: &RenderedDispatch| r.env.vars["ASTROLIFT_CLUSTER_KEY"].clone();
    assert_ne!(key(&first), key(&second), "a fresh key per render");
    assert_eq!(key(&first).len(), 64, "32 bytes, hex");
    let task = recorded
        .state
        .tasks()
        .get_task(&recorded.task_id)
        .await
        .expect("read")
        .expect("the task");
    assert_eq!(task.cluster_key_sha256, Some(key_hash(&key(&second))));
    assert_eq!(task.renders, 2);
    // Without a callback route no key is minted and none is kept.
    let quiet = recorded_without_callback().await;
    render(&quiet, false).await.expect("renders");
    let task = quiet
        .state
        .tasks()
        .get_task(&quiet.task_id)
        .await
        .expect("read");
    assert_eq!(task.and_then(|t| t.cluster_key_sha256), None);
}

async fn recorded_without_callback() -> Recorded {
    recorded(&Knobs::default(), None).await
}

#[tokio::test]
async fn unknown_and_finished_dispatches_are_not_rendered() {
    let recorded = recorded(&everything(), None).await;
    let unknown = render_dispatch(
        recorded.state.as_ref(),
        &recorded.content,
        "d-nothing",
        &options(false),
        NOW,
    )
    .await;
    assert!(
        matches!(unknown, Err(RenderDispatchError::NotFound(_))),
        "{unknown:?}"
    );
    let report = TaskReport {
        status: TaskStatus::Succeeded,
        result: None,
    };
    report_task(recorded.state.tasks(), &recorded.task_id, &report, NOW)
        .await
        .expect("reported");
    let finished = render(&recorded, false).await;
    assert!(
        matches!(
            finished,
            Err(RenderDispatchError::Finished {
                status: "succeeded",
                ..
            })
        ),
        "{finished:?}"
    );
}

#[tokio::test]
async fn a_dispatch_still_in_the_local_outbox_renders() {
    let dir = tempfile::tempdir().expect("tempdir");
    let outbox = SqliteOutbox::open(dir.path().join("outbox.db"), 10)
        .await
        .expect("outbox");
    let recorded = recorded(&everything(), Some(&outbox)).await;
    let waiting = outbox.list(0, 10).await.expect("listed");
    assert_eq!(waiting.len(), 1, "the message waits in the outbox");
    assert_eq!(waiting[0].message.dispatch_id, recorded.dispatch_id);
    let rendered = render(&recorded, false).await.expect("renders");
    assert_eq!(rendered.dispatch_id, recorded.dispatch_id);
    assert_eq!(rendered.env.vars["ASTROLIFT_TASK_ID"], recorded.task_id);
}
