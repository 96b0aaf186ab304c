//! Idempotency keys, the conditional record, and the queue message.

use astrolift_store::state::{SqliteStateStore, TriggerBinding};
use astrolift_trigger::dispatch::{
    DispatchMessage, DispatchQueue, MemoryDispatchQueue, Origin, record,
};
use serde_json::json;

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

/// The key with the default limit and no replay key.
fn idempotency_key(headers: &http::HeaderMap, trigger_id: &str, body: &[u8]) -> String {
    astrolift_trigger::dispatch::idempotency_key(headers, trigger_id, body, None, 256)
        .expect("a valid key")
}

#[test]
fn a_replay_key_wins_over_every_header() {
    let both = headers(&[("X-GitHub-Delivery", "d-1"), ("Idempotency-Key", "k-1")]);
    let key = astrolift_trigger::dispatch::idempotency_key(&both, "t-1", b"{}", Some("17:ab"), 256);
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
    let first = record(
        &state,
        &binding,
        "snap-1",
        Some(&payload),
        &key,
        &Origin::TRUSTED,
        100,
    )
    .await
    .expect("records");
    assert!(first.created);
    let again = record(
        &state,
        &binding,
        "snap-1",
        Some(&payload),
        &key,
        &Origin::TRUSTED,
        200,
    )
    .await
    .expect("records");
    assert!(!again.created);
    assert_eq!(again.id, first.id);
    let stored = astrolift_store::StateStore::get_dispatch(&state, &key)
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
    let result = record(
        &state,
        &stored_binding(),
        "snap-1",
        None,
        "t-1:key:x",
        &Origin::TRUSTED,
        5,
    )
    .await
    .expect("records");
    assert_eq!(result.dispatch.payload, None);
    let message = DispatchMessage::of(&result.dispatch).expect("parses");
    let text = serde_json::to_string(&message).expect("json");
    assert!(!text.contains("payload"), "{text}");
    let queue = MemoryDispatchQueue::new();
    queue.publish(&message).await.expect("publishes");
    assert_eq!(queue.messages(), vec![message]);
}

#[test]
fn the_message_format_is_stable() {
    let message = DispatchMessage {
        dispatch_id: "d-1".to_owned(),
        trigger_id: "t-1".to_owned(),
        repository: "acme/agents".to_owned(),
        manifest_path: "agents/triage/astrolift.toml".to_owned(),
        snapshot_hash: "snap-1".to_owned(),
        created_at: 1_767_225_600,
        payload: Some(json!({"mode": "triage"})),
        sender: Some("octocat".to_owned()),
        trusted: true,
    };
    assert_eq!(
        serde_json::to_string(&message).expect("json"),
        r#"{"dispatch_id":"d-1","trigger_id":"t-1","repository":"acme/agents","manifest_path":"agents/triage/astrolift.toml","snapshot_hash":"snap-1","created_at":1767225600,"payload":{"mode":"triage"},"sender":"octocat","trusted":true}"#
    );
}
