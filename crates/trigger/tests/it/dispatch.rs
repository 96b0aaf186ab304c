//! Idempotency keys, the conditional record, and the queue message.

use astrolift_dispatch::dispatch::{
    DispatchMessage, DispatchQueue, DispatchRequest, MemoryDispatchQueue, Origin, record,
};
use astrolift_dispatch::env::{PayloadView, SnapshotView};
use astrolift_dispatch::message::{DispatchContent, PackageRef, Source};
use astrolift_store::state::{SqliteStateStore, TriggerBinding, UnixSeconds};
use serde_json::{Value, json};

use crate::support::headers;

pub fn stored_binding() -> TriggerBinding {
    TriggerBinding {
        trigger_id: "t-1".to_owned(),
        repository: "acme/agents".to_owned(),
        manifest_path: "agents/triage/astrolift.toml".to_owned(),
        agent_name: "triage".to_owned(),
        name: "jira-high-priority".to_owned(),
        source: "generic".to_owned(),
        definition: json!({}),
        snapshot_hash: "snap-1".to_owned(),
    }
}

/// The content of an inline package of `triage` with no prompts.
pub fn inline_content() -> DispatchContent {
    DispatchContent {
        snapshot: SnapshotView {
            name: "triage".to_owned(),
            payload: PayloadView {
                inline: true,
                ..Default::default()
            },
            ..Default::default()
        },
        package: Some(PackageRef::inline("", 0)),
        prompts: Default::default(),
    }
}

/// Records a dispatch of `binding` at `snapshot` under `key`.
pub async fn record_binding(
    state: &SqliteStateStore,
    binding: &TriggerBinding,
    snapshot: &str,
    payload: Option<&Value>,
    key: &str,
    now: UnixSeconds,
) -> astrolift_dispatch::dispatch::DispatchResult {
    let content = inline_content();
    let request = DispatchRequest {
        source: Source::Trigger {
            trigger_id: binding.trigger_id.clone(),
        },
        repository: &binding.repository,
        manifest_path: &binding.manifest_path,
        snapshot_hash: snapshot,
        idempotency_key: Some(key.to_owned()),
        payload,
        origin: &Origin::TRUSTED,
        env_spec: None,
        config: None,
        content: &content,
        callback_base: None,
        now,
    };
    record(state, &request).await.expect("records")
}

/// The key with the default limit and no replay key.
fn idempotency_key(headers: &http::HeaderMap, trigger_id: &str, body: &[u8]) -> String {
    astrolift_trigger::idempotency::idempotency_key(headers, trigger_id, body, None, 256)
        .expect("a valid key")
}

#[test]
fn a_replay_key_wins_over_every_header() {
    let both = headers(&[("X-GitHub-Delivery", "d-1"), ("Idempotency-Key", "k-1")]);
    let key =
        astrolift_trigger::idempotency::idempotency_key(&both, "t-1", b"{}", Some("17:ab"), 256);
    assert_eq!(key.expect("valid").as_str(), "t-1:signed:17:ab");
}

#[test]
fn keys_prefer_the_delivery_then_the_header_then_the_body() {
    let both = headers(&[("X-GitHub-Delivery", "d-1"), ("Idempotency-Key", "k-1")]);
    assert_eq!(idempotency_key(&both, "t-1", b"{}"), "t-1:delivery:d-1");
    let key = headers(&[("idempotency-key", "k-1")]);
    assert_eq!(idempotency_key(&key, "t-1", b"{}"), "t-1:key:k-1");
    let none = headers(&[]);
    let a = idempotency_key(&none, "t-1", b"{}");
    assert!(
        a.starts_with("t-1:body:") && a.len() == "t-1:body:".len() + 64,
        "{a}"
    );
    assert_eq!(a, idempotency_key(&none, "t-1", b"{}"));
    assert_ne!(a, idempotency_key(&none, "t-1", b"{ }"));
    assert_ne!(
        idempotency_key(&none, "t-2", b"{}").trim_start_matches("t-2:"),
        a.trim_start_matches("t-1:"),
        "the binding id is hashed with the body"
    );
}

#[tokio::test]
async fn a_duplicate_delivery_gives_one_dispatch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("opens");
    let binding = stored_binding();
    let key = idempotency_key(
        &headers(&[("X-GitHub-Delivery", "abc")]),
        &binding.trigger_id,
        b"{}",
    );
    let payload = json!({"mode": "triage"});
    let first = record_binding(&state, &binding, "snap-1", Some(&payload), &key, 100).await;
    assert!(first.created);
    let again = record_binding(&state, &binding, "snap-1", Some(&payload), &key, 200).await;
    assert!(!again.created);
    assert_eq!(again.id, first.id);
    let stored = astrolift_store::state::DispatchStore::get_dispatch(&state, &key)
        .await
        .expect("reads")
        .expect("exists");
    assert_eq!(stored.id, first.id);
    assert_eq!(stored.created_at, 100);
    assert_eq!(stored.payload.as_deref(), Some(r#"{"mode":"triage"}"#));
}

#[tokio::test]
async fn the_empty_payload_is_absent_from_the_record_and_the_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("opens");
    let result = record_binding(&state, &stored_binding(), "snap-1", None, "t-1:key:x", 5).await;
    assert_eq!(result.dispatch.payload, None);
    let message = DispatchMessage::of(&result.dispatch).expect("parses");
    let text = serde_json::to_string(&message).expect("json");
    assert!(!text.contains("payload"), "{text}");
    let queue = MemoryDispatchQueue::new();
    queue.publish(&message).await.expect("publishes");
    assert_eq!(queue.messages(), vec![message]);
}

#[tokio::test]
async fn the_message_format_is_stable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("opens");
    let payload = json!({"mode": "triage"});
    let result = record_binding(
        &state,
        &stored_binding(),
        "snap-1",
        Some(&payload),
        "t-1:key:x",
        1_767_225_600,
    )
    .await;
    let mut message = serde_json::to_value(DispatchMessage::of(&result.dispatch).expect("message"))
        .expect("json");
    let object = message.as_object_mut().expect("an object");
    assert_eq!(object.shift_remove("dispatch_id"), Some(json!(result.id)));
    assert_eq!(
        object.shift_remove("task_id"),
        Some(json!(result.dispatch.task_id))
    );
    assert_eq!(
        message.to_string(),
        r#"{"schema":"astrolift.dispatch/v1","idempotency_key":"t-1:key:x","created_at":1767225600,"source":{"kind":"trigger","trigger_id":"t-1"},"agent":{"name":"triage","repository":"acme/agents","manifest":"agents/triage/astrolift.toml","snapshot":"snap-1"},"payload":{"mode":"triage"},"package":{"digest":"","size":0,"inline":true},"prompts":{"system":"","kickoff":"Run the agent `triage` once for this input.\n\nInput (JSON, also in ASTROLIFT_TRIGGER_PAYLOAD):\n```json\n{\"mode\":\"triage\"}\n```"},"skill_refs":[],"tools":[],"environment":{},"secrets":{},"trusted":true}"#
    );
}
