//! The durable local outbox: kept across reopening, bounded (at the bound
//! and one past it: the service answers 503 with `Retry-After` and records
//! nothing), listed oldest first, drained to SQS on moto; its size kept
//! exact by the file's triggers, an outbox made before them counted once.
//! The outbox inside a `sqlite:` state: the dispatch and its place in one
//! transaction (one past the bound records no dispatch), an earlier outbox
//! file moved into it.

use std::sync::Arc;

use astrolift_dispatch::dispatch::{
    DispatchError, DispatchMessage, DispatchQueue, MemoryDispatchQueue, QueueDestination,
    SqsDispatchQueue,
};
use astrolift_dispatch::file_outbox::SqliteOutbox;
use astrolift_dispatch::outbox::{StateOutbox, outbox_path};
use astrolift_store::testing::{aws_endpoint, unique_name};
use astrolift_store::{StateLocation, StateStore};
use astrolift_trigger::TriggerService;

use crate::dispatch::{record_binding, stored_binding};
use crate::support::signed;

async fn messages(count: usize) -> Vec<DispatchMessage> {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = astrolift_store::state::SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("opens");
    let mut messages = Vec::new();
    for n in 0..count {
        let recorded = record_binding(
            &state,
            &stored_binding(),
            "snap-1",
            None,
            &format!("t-1:key:{n}"),
            1,
        )
        .await;
        messages.push(DispatchMessage::of(&recorded.dispatch).expect("message"));
    }
    messages
}

#[tokio::test]
async fn messages_survive_reopening_and_the_bound_holds_at_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("outbox.db");
    let sent = messages(3).await;
    let outbox = SqliteOutbox::open(&path, 3).await.expect("opens");
    for message in &sent[..2] {
        outbox.has_room().await.expect("room below the bound");
        outbox.publish(message).await.expect("publishes");
    }
    // A redelivered message is kept once.
    outbox.publish(&sent[1]).await.expect("publishes");
    outbox.has_room().await.expect("room for the third");
    outbox.publish(&sent[2]).await.expect("publishes the third");
    drop(outbox);
    let reopened = SqliteOutbox::open(&path, 3).await.expect("reopens");
    assert_eq!(reopened.len().await.expect("counts"), 3);
    let error = reopened.has_room().await.expect_err("full at the bound");
    assert!(matches!(error, DispatchError::Full { max: 3 }), "{error}");
    let listed: Vec<DispatchMessage> = reopened
        .list(0, 10)
        .await
        .expect("lists")
        .into_iter()
        .map(|e| e.message)
        .collect();
    assert_eq!(listed, sent, "oldest first, each once");
}

#[test]
fn the_outbox_lives_beside_a_sqlite_state() {
    assert_eq!(
        outbox_path(&StateLocation::parse("sqlite:/var/lib/astrolift/state.db").expect("parses")),
        std::path::PathBuf::from("/var/lib/astrolift/outbox.db")
    );
    assert_eq!(
        outbox_path(&StateLocation::parse("dynamodb:table").expect("parses")),
        std::path::PathBuf::from(".astrolift/outbox.db")
    );
}

#[tokio::test]
async fn a_full_outbox_is_a_503_and_records_nothing() {
    let registered = crate::message::register_example().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let state: Arc<dyn StateStore> = Arc::new(
        astrolift_store::state::SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("opens"),
    );
    let outbox = Arc::new(
        SqliteOutbox::open(dir.path().join("outbox.db"), 1)
            .await
            .expect("opens"),
    );
    let (service, _) = crate::message::service_with_example(&registered, state.clone()).await;
    let service: TriggerService = service.with_queue(outbox.clone());
    let first = br#"{"issue":{"key":"ENG-1"}}"#;
    let answer = service
        .handle("trg_msg_generic", &signed(first), first)
        .await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    assert_eq!(outbox.len().await.expect("counts"), 1);
    let second = br#"{"issue":{"key":"ENG-2"}}"#;
    let answer = service
        .handle("trg_msg_generic", &signed(second), second)
        .await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(
        answer.retry_after(),
        Some(astrolift_dispatch::RETRY_AFTER_SECONDS)
    );
    assert_eq!(outbox.len().await.expect("counts"), 1);
}

#[tokio::test]
async fn the_outbox_drains_to_sqs_oldest_first() {
    if aws_endpoint("the_outbox_drains_to_sqs_oldest_first").is_none() {
        return;
    }
    let config = astrolift_store::load_sdk_config().await;
    let queue = SqsDispatchQueue::create(aws_sdk_sqs::Client::new(&config), &unique_name("outbox"))
        .await
        .expect("creates");
    let dir = tempfile::tempdir().expect("tempdir");
    let outbox = SqliteOutbox::open(dir.path().join("outbox.db"), 10)
        .await
        .expect("opens");
    let sent = messages(3).await;
    for message in &sent {
        outbox.publish(message).await.expect("publishes");
    }
    assert_eq!(outbox.drain_to(&queue).await.expect("drains"), 3);
    assert!(outbox.is_empty().await.expect("counts"));
    let mut received = Vec::new();
    for _ in 0..5 {
        received.extend(queue.receive(1).await.expect("receives"));
        if received.len() == 3 {
            break;
        }
    }
    let mut ids: Vec<_> = received.iter().map(|m| m.dispatch_id.clone()).collect();
    let mut expected: Vec<_> = sent.iter().map(|m| m.dispatch_id.clone()).collect();
    ids.sort();
    expected.sort();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn the_size_is_kept_by_every_writer_and_an_older_outbox_is_counted_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("outbox.db");
    let sent = messages(4).await;
    {
        // An outbox as a binary before the size table made it, with two messages.
        let old = rusqlite::Connection::open(&path).expect("opens");
        old.execute_batch(
            "CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT,
                dispatch_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL, created_at INTEGER NOT NULL);",
        )
        .expect("old schema");
        for message in &sent[..2] {
            let body = serde_json::to_string(message).expect("JSON");
            old.execute(
                "INSERT INTO outbox (dispatch_id, body, created_at) VALUES (?1, ?2, 1)",
                rusqlite::params![message.dispatch_id, body],
            )
            .expect("inserts");
        }
    }
    let outbox = SqliteOutbox::open(&path, 10).await.expect("opens");
    assert_eq!(outbox.len().await.expect("counts"), 2, "counted on open");
    let again = SqliteOutbox::open(&path, 10).await.expect("reopens");
    assert_eq!(again.len().await.expect("counts"), 2, "counted once");
    outbox.publish(&sent[2]).await.expect("publishes");
    outbox
        .publish(&sent[2])
        .await
        .expect("a duplicate is kept once");
    {
        // Another process writing the file directly: the triggers count it too.
        let other = rusqlite::Connection::open(&path).expect("opens");
        let body = serde_json::to_string(&sent[3]).expect("JSON");
        other
            .execute(
                "INSERT INTO outbox (dispatch_id, body, created_at) VALUES (?1, ?2, 1)",
                rusqlite::params![sent[3].dispatch_id, body],
            )
            .expect("inserts");
    }
    assert_eq!(again.len().await.expect("counts"), 4);
    let drained = again
        .drain_to(&astrolift_dispatch::dispatch::MemoryDispatchQueue::new())
        .await
        .expect("drains");
    assert_eq!(drained, 4);
    assert_eq!(outbox.len().await.expect("counts"), 0);
    assert!(outbox.is_empty().await.expect("counts"));
}

/// Rows of `table` in the state file at `path`, read past the store.
fn rows(path: &std::path::Path, table: &str) -> i64 {
    let connection = rusqlite::Connection::open(path).expect("opens");
    connection
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |row| {
            row.get(0)
        })
        .expect("counts")
}

#[tokio::test]
async fn the_state_outbox_holds_at_the_bound_and_one_past_records_no_dispatch() {
    let registered = crate::message::register_example().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let state: Arc<dyn StateStore> = Arc::new(
        astrolift_store::state::SqliteStateStore::open(&path)
            .await
            .expect("opens"),
    );
    let outbox = StateOutbox::of(state.clone(), 2).expect("a sqlite state keeps an outbox");
    let (service, _) = crate::message::service_with_example(&registered, state.clone()).await;
    let service: TriggerService = service.with_queue(Arc::new(outbox.clone()));
    let mut ids = Vec::new();
    for key in ["ENG-1", "ENG-2"] {
        let body = format!(r#"{{"issue":{{"key":"{key}"}}}}"#);
        let answer = service
            .handle("trg_msg_generic", &signed(body.as_bytes()), body.as_bytes())
            .await;
        assert_eq!(answer.status, 202, "{}", answer.body);
        ids.push(answer.body["dispatch_id"].clone());
    }
    // At the bound: a redelivery writes nothing, so it is still answered.
    let first = br#"{"issue":{"key":"ENG-1"}}"#;
    let answer = service
        .handle("trg_msg_generic", &signed(first), first)
        .await;
    assert_eq!(
        (answer.status, &answer.body["dispatch_id"]),
        (200, &ids[0]),
        "{}",
        answer.body
    );
    // One past it: 503, and neither the dispatch nor its task is recorded.
    let third = br#"{"issue":{"key":"ENG-3"}}"#;
    let answer = service
        .handle("trg_msg_generic", &signed(third), third)
        .await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(
        answer.retry_after(),
        Some(astrolift_dispatch::RETRY_AFTER_SECONDS)
    );
    assert_eq!(
        (rows(&path, "dispatches"), rows(&path, "dispatch_tasks")),
        (2, 2)
    );
    assert_eq!(outbox.len().await.expect("counts"), 2);
    assert_eq!(outbox.destination(), QueueDestination::Outbox(path.clone()));
    // The outbox keeps keys, not messages: what it lists is each record's message.
    let listed: Vec<_> = outbox
        .list(0, 10)
        .await
        .expect("lists")
        .into_iter()
        .map(|entry| serde_json::Value::String(entry.message.dispatch_id))
        .collect();
    assert_eq!(listed, ids, "oldest first");
    assert!(!dir.path().join("outbox.db").exists());
}

#[tokio::test]
async fn an_earlier_outbox_file_moves_into_the_state_outbox_and_drains_oldest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = astrolift_store::state::SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("opens");
    let mut sent = Vec::new();
    for n in 0..3 {
        let key = format!("t-1:key:{n}");
        let recorded = record_binding(&sqlite, &stored_binding(), "snap-1", None, &key, 1).await;
        sent.push(DispatchMessage::of(&recorded.dispatch).expect("message"));
    }
    // A binary from before the outbox moved inside the state kept them in a file beside it.
    let earlier = SqliteOutbox::open(dir.path().join("outbox.db"), 10)
        .await
        .expect("opens");
    for message in &sent {
        earlier.publish(message).await.expect("publishes");
    }
    let state: Arc<dyn StateStore> = Arc::new(sqlite);
    let outbox = StateOutbox::of(state, 10).expect("a sqlite state keeps an outbox");
    assert_eq!(earlier.drain_to(&outbox).await.expect("moves"), 3);
    assert!(earlier.is_empty().await.expect("counts"));
    // Moving one again (a crash between queueing and deleting) queues it once.
    outbox.publish(&sent[0]).await.expect("queues once");
    assert_eq!(outbox.len().await.expect("counts"), 3);
    // A message whose dispatch this state never recorded is refused (a drain stops and
    // keeps it where it was), and takes no place.
    let mut stranger = sent[0].clone();
    stranger.idempotency_key = "t-1:key:never-recorded".to_owned();
    assert!(outbox.publish(&stranger).await.is_err());
    assert_eq!(outbox.len().await.expect("counts"), 3);
    let queue = MemoryDispatchQueue::new();
    assert_eq!(outbox.drain_to(&queue).await.expect("drains"), 3);
    assert_eq!(
        queue.messages(),
        sent,
        "the records' messages, oldest first"
    );
    assert!(outbox.is_empty().await.expect("counts"));
}
