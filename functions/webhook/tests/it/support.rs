//! Shared fixtures: the sample events and a function on SQLite with a recording queue.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use astrolift_bot::{Ingress, JobQueue, RecordingJobQueue, SyncJob};
use astrolift_fn_webhook::WebhookFunction;
use astrolift_forge::webhook::WebhookSecrets;
use astrolift_manifest::Limits;
use astrolift_store::StateStore;
use astrolift_store::state::SqliteStateStore;
use lambda_http::{Body, Request, Response};
use serde_json::Value;

/// The test secret the sample events are signed with (events/README.md).
pub const SECRET: &str = "astrolift-events-test-secret";

pub fn events_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../events")
}

/// `events/<name>.json`, as text.
pub fn event_text(name: &str) -> String {
    let path = events_dir().join(format!("{name}.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The Lambda request the runtime would build from `events/<name>.json`.
pub fn request(name: &str) -> Request {
    lambda_http::request::from_str(&event_text(name))
        .unwrap_or_else(|e| panic!("{name}: not a Lambda HTTP event: {e}"))
}

/// Every `events/webhook-*.json` with its expected status (`.status` beside it).
pub fn webhook_events() -> Vec<(String, u16)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(events_dir()).expect("events/") {
        let path = entry.expect("entry").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        if !stem.starts_with("webhook-") {
            continue;
        }
        let status_file = path.with_extension("status");
        let status = std::fs::read_to_string(&status_file)
            .unwrap_or_else(|e| panic!("{}: {e}", status_file.display()));
        let status = status.trim().parse().expect("a status code");
        found.push((stem.to_owned(), status));
    }
    found.sort();
    found
}

/// The sync jobs in `events/sync-batch.json`, in order.
pub fn batch_jobs() -> Vec<SyncJob> {
    let batch: Value = serde_json::from_str(&event_text("sync-batch")).expect("json");
    batch["Records"]
        .as_array()
        .expect("Records")
        .iter()
        .map(|r| serde_json::from_str(r["body"].as_str().expect("body")).expect("a job"))
        .collect()
}

/// A webhook function on a fresh SQLite state store.
pub struct Harness {
    pub function: WebhookFunction,
    pub jobs: Arc<RecordingJobQueue>,
    pub state: Arc<dyn StateStore>,
    _dir: tempfile::TempDir,
}

pub async fn harness() -> Harness {
    let jobs = Arc::new(RecordingJobQueue::new());
    let (function, state, dir) = function_with(jobs.clone()).await;
    Harness {
        function,
        jobs,
        state,
        _dir: dir,
    }
}

/// The function over `jobs`, as `from_env` builds it but with test parts.
pub async fn function_with(
    jobs: Arc<dyn JobQueue>,
) -> (WebhookFunction, Arc<dyn StateStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("sqlite"),
    );
    let ingress = Ingress {
        state: state.clone(),
        secrets: WebhookSecrets::new(SECRET.into(), None).expect("secret"),
        jobs,
        triggers: None,
        limits: Limits::DEFAULT,
        function: "test",
    };
    (WebhookFunction::new(ingress), state, dir)
}

/// Status and JSON body of a response.
pub fn answer(response: &Response<Body>) -> (u16, Value) {
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    let body = serde_json::from_slice(response.body().as_ref()).expect("a JSON body");
    (response.status().as_u16(), body)
}
