//! Every `events/trigger-*.json` through the handler, with the status in its
//! `events/trigger-*.status` sidecar. State comes from a real apply of
//! `examples/monorepo` as `acme/support-agents`; the generic trigger's secret
//! `secret://agents/jira-hook` is `local-jira-hook-secret` (for `cargo lambda
//! invoke`: `ASTROLIFT_SECRET_AGENTS_JIRA_HOOK=local-jira-hook-secret`).
//! The same events run against DynamoDB and SQS when moto is up
//! (`AWS_ENDPOINT_URL`; see `astrolift_store::testing::aws_endpoint`).

#[path = "../../../../tests/containment/cases.rs"]
mod containment_cases;
#[path = "../../../../tests/schemas/dispatch.rs"]
mod dispatch_schema;
mod executions;
mod lambda_chain;
mod release;
mod stack;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use astrolift_dispatch::dispatch::{DispatchQueue, MemoryDispatchQueue, SqsDispatchQueue};
use astrolift_manifest::{DirTree, Limits, ValidateOptions};
use astrolift_store::blob::{FsBlobStore, S3BlobStore};
use astrolift_store::state::{DynamoStateStore, SqliteStateStore};
use astrolift_store::testing::{aws_endpoint, unique_name};
use astrolift_store::{BlobStore, BoxFuture, StateStore};
use astrolift_sync::{Mode, Stores, SyncRequest, sync};
use astrolift_trigger::{SecretError, SecretResolver, TriggerService};
use secrecy::SecretString;

pub(crate) const REPO: &str = "acme/support-agents";
const HOOK_REF: &str = "secret://agents/jira-hook";
const HOOK_SECRET: &str = "local-jira-hook-secret";
/// The trigger id in `events/trigger-generic.json` and
/// `trigger-bad-signature.json`: trigger ids are random, so the tests put the
/// id the apply minted in its place.
const EVENT_TRIGGER_ID: &str = "trg_0b8d43dfcfdfe8d8daf3c24e";

/// `secret://agents/jira-hook` only.
#[derive(Debug)]
pub(crate) struct TestSecrets;

impl SecretResolver for TestSecrets {
    fn resolve<'a>(
        &'a self,
        _project: &'a str,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<SecretString, SecretError>> {
        Box::pin(async move {
            if reference == HOOK_REF {
                Ok(SecretString::from(HOOK_SECRET))
            } else {
                Err(SecretError::MissingEnv {
                    reference: reference.to_owned(),
                    variable: "-".to_owned(),
                })
            }
        })
    }

    fn github_webhook(&self) -> Option<&astrolift_forge::webhook::WebhookSecrets> {
        None
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `(file name, event JSON, expected status)` of every `events/trigger-*.json`.
fn events() -> Vec<(String, String, u16)> {
    let dir = workspace_root().join("events");
    let mut found: Vec<_> = std::fs::read_dir(&dir)
        .expect("events/ exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with("trigger-") && name.ends_with(".json")
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|path| {
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            let event = std::fs::read_to_string(&path).expect("readable");
            let status = std::fs::read_to_string(path.with_extension("status"))
                .unwrap_or_else(|e| panic!("{name}: its .status sidecar: {e}"));
            let status = status.trim().parse().expect("a status code");
            (name, event, status)
        })
        .collect()
}

/// Registers `examples/monorepo` as `REPO` through a real apply.
async fn apply_monorepo(blobs: Arc<dyn BlobStore>, state: Arc<dyn StateStore>) {
    let root = workspace_root().join("examples/monorepo");
    let tree = DirTree::open(&root, Limits::DEFAULT.tarball_files).expect("examples/monorepo");
    // The example's triage trigger names `triage-prod`: an env spec of the project.
    let spec = astrolift_store::testing::triage_env_spec("proj-1");
    state.put_env_spec(&spec).await.expect("env spec");
    let request = SyncRequest {
        repository: REPO.to_owned(),
        commit: "0000000000000000000000000000000000000001".to_owned(),
        commit_time: 1_795_978_800,
        before: None,
        order: None,
        git_ref: Some("main".to_owned()),
        mode: Mode::apply_all("proj-1"),
        now: 1_795_978_800,
        validate: ValidateOptions::default(),
        skills: None,
        previews: None,
        samples: None,
        relock: None,
    };
    let report = sync(&tree, &request, &Stores::new(state, blobs), &|_, _| {})
        .await
        .expect("the sync runs");
    assert!(report.applied, "{report:?}");
}

/// SQLite state and directory blobs in a temp dir, with `examples/monorepo` applied.
pub(crate) async fn registered_on_sqlite() -> (Arc<dyn StateStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let blobs: Arc<dyn BlobStore> =
        Arc::new(FsBlobStore::new(dir.path().join("blobs")).expect("blob dir"));
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("sqlite"),
    );
    apply_monorepo(blobs, state.clone()).await;
    (state, dir)
}

fn service(state: Arc<dyn StateStore>, queue: Arc<dyn DispatchQueue>) -> Arc<TriggerService> {
    Arc::new(TriggerService::new(
        state,
        Arc::new(TestSecrets),
        queue,
        Limits::DEFAULT,
    ))
}

/// The id the apply minted for the example's `jira-high-priority` trigger.
async fn jira_trigger_id(state: &dyn StateStore) -> String {
    let bindings = state.list_trigger_bindings().await.expect("bindings");
    let binding = bindings
        .iter()
        .find(|b| b.repository == REPO && b.name == "jira-high-priority")
        .expect("the jira binding is registered");
    binding.trigger_id.clone()
}

/// Runs every event through the handler, aimed at `trigger_id`; returns the
/// dispatch ids of the events that expect 202 — answered 200 (the same
/// delivery) when `replay`.
async fn run_events(service: &Arc<TriggerService>, trigger_id: &str, replay: bool) -> Vec<String> {
    let mut dispatched = Vec::new();
    let all = events();
    assert!(all.len() >= 3, "{all:?}");
    for (name, event, expected) in all {
        let event = event.replace(EVENT_TRIGGER_ID, trigger_id);
        let event: serde_json::Value = serde_json::from_str(&event).expect("JSON");
        // The entry point Lambda calls: the function-URL response event.
        let response = astrolift_fn_trigger::handle_invocation(service, &event.to_string())
            .await
            .unwrap_or_else(|e| panic!("{name}: not handled: {e}"));
        assert_eq!(response["isBase64Encoded"], false, "{name}: {response}");
        let body = response["body"].as_str().unwrap_or_default().to_owned();
        let wanted = if replay && expected == 202 {
            200
        } else {
            expected
        };
        assert_eq!(response["statusCode"], wanted, "{name}: {body}");
        assert!(!body.contains(HOOK_SECRET), "{name}: {body}");
        if expected == 202 {
            let answer: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            dispatched.push(answer["dispatch_id"].as_str().expect("an id").to_owned());
        }
    }
    dispatched
}

#[tokio::test]
async fn a_stage_batch_is_handled_as_one_and_what_is_not_a_stage_message_is_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("sqlite"),
    );
    let service = service(state, Arc::new(MemoryDispatchQueue::new()));
    let batch = serde_json::json!({"Records": [
        {"messageId": "m-1", "body": "not json", "eventSource": "aws:sqs"},
        {"messageId": "m-2", "body": r#"{"run_id":"run-1","stage":"s","task_token":"t"}"#,
         "eventSource": "aws:sqs"},
    ]});
    let answer = astrolift_fn_trigger::handle_invocation(&service, &batch.to_string())
        .await
        .expect("handled");
    // Without the Step Functions engine nothing waits on a stage message: both are dropped.
    assert_eq!(answer, serde_json::json!({"batchItemFailures": []}));
    assert!(
        astrolift_fn_trigger::handle_invocation(&service, "{\"x\": 1}")
            .await
            .is_err(),
        "neither a request nor a batch"
    );
}

#[test]
fn the_generic_event_targets_the_placeholder_id() {
    let event = std::fs::read_to_string(workspace_root().join("events/trigger-generic.json"))
        .expect("readable");
    assert!(event.contains(&format!("/triggers/{EVENT_TRIGGER_ID}")));
}

#[test]
fn only_post_on_the_trigger_and_callback_routes_is_served() {
    assert_eq!(
        astrolift_fn_trigger::trigger_id_of("/triggers/trg_1"),
        Some("trg_1")
    );
    assert_eq!(
        astrolift_fn_trigger::trigger_id_of("/triggers/trg_1/"),
        Some("trg_1")
    );
    for path in [
        "/triggers/",
        "/triggers",
        "/github/webhook",
        "/triggers/a/b",
    ] {
        assert_eq!(astrolift_fn_trigger::trigger_id_of(path), None, "{path}");
    }
    assert_eq!(
        astrolift_fn_trigger::task_id_of("/callbacks/0b0e7e57-0000-4000-8000-00000000cafe"),
        Some("0b0e7e57-0000-4000-8000-00000000cafe")
    );
    for path in [
        "/callbacks/",
        "/callbacks",
        "/callbacks/a/b",
        "/triggers/trg_1",
    ] {
        assert_eq!(astrolift_fn_trigger::task_id_of(path), None, "{path}");
    }
}

#[tokio::test]
async fn every_trigger_event_on_sqlite() {
    let (state, _dir) = registered_on_sqlite().await;
    let trigger_id = jira_trigger_id(state.as_ref()).await;
    let queue = Arc::new(MemoryDispatchQueue::new());
    let service = service(state, queue.clone());
    let first = run_events(&service, &trigger_id, false).await;
    assert_eq!(first.len(), 1);
    let again = run_events(&service, &trigger_id, true).await;
    assert_eq!(again, first, "the same delivery again is the same dispatch");
    let messages = queue.messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].dispatch_id, first[0]);
    assert_eq!(
        messages[0].payload,
        Some(serde_json::json!({"mode": "triage", "issue": "OPS-17", "title": "Checkout is down"}))
    );
}

#[tokio::test]
async fn every_trigger_event_on_dynamodb_and_sqs() {
    if aws_endpoint("every_trigger_event_on_dynamodb_and_sqs").is_none() {
        return;
    }
    let name = unique_name("fn-trigger");
    let blobs = S3BlobStore::from_env(&name, "", Default::default())
        .await
        .expect("s3 client");
    blobs.create_bucket().await.expect("bucket");
    let state = DynamoStateStore::from_env(&name).await.expect("dynamodb");
    state.create_table().await.expect("table");
    let state: Arc<dyn StateStore> = Arc::new(state);
    apply_monorepo(Arc::new(blobs), state.clone()).await;
    let config = astrolift_store::load_sdk_config().await;
    let queue = SqsDispatchQueue::create(
        aws_sdk_sqs::Client::new(&config),
        &unique_name("dispatches"),
    )
    .await
    .expect("creates");
    let queue = Arc::new(queue);
    let trigger_id = jira_trigger_id(state.as_ref()).await;
    let dispatched = run_events(&service(state, queue.clone()), &trigger_id, false).await;
    assert_eq!(dispatched.len(), 1);
    let ids: Vec<String> = queue
        .receive(1)
        .await
        .expect("receives")
        .into_iter()
        .map(|m| m.dispatch_id)
        .collect();
    assert_eq!(ids, dispatched);
}
