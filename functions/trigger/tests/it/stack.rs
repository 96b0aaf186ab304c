//! The trigger function on a deployed stack's resources: run by
//! `scripts/smoke-trigger.sh` from the deploy smoke test with exactly the environment the
//! stack gave the trigger function (read back from Lambda), after it put a known value into
//! the stack's webhook secret. The function is built as on Lambda (`service_from_env`):
//! a generic binding with `verify = { kind = "github" }` is answered 202, one whose
//! `secret://` reference names no secret 500 (a configuration error), and the same binding
//! with Secrets Manager unreachable 503 (retry). A terminal callback of a dispatch that asks
//! for a comment is relayed to the stack's report queue (the function holds no App key), as
//! one report job naming the task, for the sync function to post.

use std::sync::Arc;
use std::time::Duration;

use astrolift_dispatch::dispatch::MemoryDispatchQueue;
use astrolift_dispatch::render::key_hash;
use astrolift_forge::webhook::sign;
use astrolift_manifest::triggers::{TriggerSource, TriggerSpec, Verify};
use astrolift_store::StateStore;
use astrolift_store::state::tasks::record_render;
use astrolift_store::state::{
    Agent, AgentChange, AgentStatus, AuditAction, ChangeSet, Dispatch, DispatchStatus,
    DynamoStateStore, ReportTarget, TriggerBinding,
};
use astrolift_store::testing::unique_name;
use astrolift_trigger::{AwsSecretResolver, TriggerService};
use lambda_http::{Body, Request};

const PROJECT: &str = "proj-smoke";
const MANIFEST: &str = "agents/smoke/astrolift.toml";
/// The agent's snapshot (a fixed hash: its content never changes), with an
/// inline package, so a dispatch needs only the snapshot from the stack's bucket.
const SNAPSHOT: &str = "5e0a7e5e0a7e5e0a7e5e0a7e5e0a7e5e0a7e5e0a7e5e0a7e5e0a7e5e0a7e5e0a";

/// Puts the agent's snapshot into the stack's bucket (`ASTROLIFT_BLOBS`).
async fn put_snapshot() {
    let url = std::env::var("ASTROLIFT_BLOBS").expect("the trigger function's ASTROLIFT_BLOBS");
    let blobs = astrolift_store::blob::blob_store_from_url(&url)
        .await
        .expect("the stack's bucket");
    let snapshot = serde_json::json!({
        "name": "smoke",
        "payload": { "digest": "", "size": 0, "inline": true },
    });
    let key = astrolift_store::blob::BlobKey::snapshot(SNAPSHOT).expect("a sha256 key");
    blobs
        .put_if_absent(
            &key,
            snapshot.to_string().into_bytes().into(),
            "application/json",
        )
        .await
        .expect("puts the snapshot");
}

/// The stack's table and the webhook secret's value, which scripts/smoke-trigger.sh
/// exports. Without them the test skips with a note, or fails when
/// `ASTROLIFT_REQUIRE_AWS=1` (scripts/test.sh runs the workspace with `--skip stack::`
/// and this test from the deploy smoke test).
fn smoke_setup() -> Option<(String, String)> {
    let table = std::env::var("ASTROLIFT_STATE")
        .ok()
        .and_then(|state| state.strip_prefix("dynamodb:").map(str::to_owned));
    match (table, std::env::var("SMOKE_WEBHOOK_SECRET_VALUE")) {
        (Some(table), Ok(secret)) if !secret.is_empty() => Some((table, secret)),
        _ if std::env::var("ASTROLIFT_REQUIRE_AWS").as_deref() == Ok("1") => panic!(
            "ASTROLIFT_REQUIRE_AWS=1 but the stack's trigger environment is not set: run this \
             test through scripts/deploy-smoke.sh (scripts/smoke-trigger.sh sets it)"
        ),
        _ => {
            eprintln!(
                "note: skipping: ASTROLIFT_STATE=dynamodb:… and SMOKE_WEBHOOK_SECRET_VALUE are \
                 not set (scripts/smoke-trigger.sh sets them)"
            );
            None
        }
    }
}

fn generic(name: &str, verify: Verify) -> TriggerSpec {
    TriggerSpec {
        name: name.to_owned(),
        source: TriggerSource::Generic,
        events: Vec::new(),
        verify: Some(verify),
        filter: None,
        payload: None,
        env_spec: None,
        allow_untrusted: false,
        report: None,
        samples: None,
        keep_deliveries: None,
        replay_values: false,
    }
}

fn binding(repository: &str, trigger_id: &str, spec: &TriggerSpec) -> TriggerBinding {
    TriggerBinding {
        trigger_id: trigger_id.to_owned(),
        repository: repository.to_owned(),
        manifest_path: MANIFEST.to_owned(),
        agent_name: "smoke".to_owned(),
        name: spec.name.clone(),
        source: "generic".to_owned(),
        definition: serde_json::to_value(spec).expect("serializes"),
        snapshot_hash: SNAPSHOT.to_owned(),
    }
}

/// Registers an active agent with the two bindings in the stack's table.
async fn register(state: &dyn StateStore, github_id: &str, missing_id: &str) {
    let repository = unique_name("smoke/trigger");
    let agent = Agent {
        repository: repository.clone(),
        manifest_path: MANIFEST.to_owned(),
        project_id: PROJECT.to_owned(),
        name: "smoke".to_owned(),
        alias: None,
        status: AgentStatus::Active,
        snapshot_hash: SNAPSHOT.to_owned(),
        payload_digest: String::new(),
        commit: "c0ffee".to_owned(),
        version: 0,
        updated_at: 1,
        bindings_digest: None,
        layer_key: None,
        package_build: None,
    };
    let mut change = AgentChange::new(agent, None, AuditAction::Added, "c0ffee", "smoke", 1);
    let missing = Verify::Token {
        header: "X-Token".to_owned(),
        secret: "secret://agents/not-on-the-stack".to_owned(),
    };
    change.put_bindings = vec![
        binding(
            &repository,
            github_id,
            &generic("github-signed", Verify::Github),
        ),
        binding(&repository, missing_id, &generic("missing-secret", missing)),
    ];
    let mut changes = ChangeSet::new(&repository);
    changes.agents.push(change);
    state
        .apply(changes)
        .await
        .expect("registers on the stack's table");
}

fn post(trigger_id: &str, headers: &[(&str, String)], body: &[u8]) -> Request {
    let mut request = lambda_http::http::Request::builder()
        .method("POST")
        .uri(format!("https://trigger.example/triggers/{trigger_id}"));
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request
        .body(Body::Binary(body.to_vec()))
        .expect("a request")
}

async fn status(service: &Arc<TriggerService>, request: Request) -> (u16, String) {
    let response = astrolift_fn_trigger::handle(service, request).await;
    let body = match response.body() {
        Body::Text(text) => text.clone(),
        _ => String::new(),
    };
    (response.status().as_u16(), body)
}

#[tokio::test]
async fn the_stacks_trigger_function_verifies_github_and_classifies_secret_errors() {
    let Some((table, webhook_secret)) = smoke_setup() else {
        return;
    };
    let state: Arc<dyn StateStore> = Arc::new(
        DynamoStateStore::from_env(&table)
            .await
            .expect("the stack's table"),
    );
    let (github_id, missing_id) = (unique_name("trg_github"), unique_name("trg_missing"));
    register(state.as_ref(), &github_id, &missing_id).await;
    put_snapshot().await;
    let service = Arc::new(
        astrolift_fn_trigger::service_from_env()
            .await
            .expect("the cold start succeeds on the trigger function's own configuration"),
    );

    let body = br#"{"action":"opened","issue":{"number":1}}"#;
    let signed = [
        ("x-hub-signature-256", sign(body, &webhook_secret)),
        ("x-github-delivery", unique_name("delivery")),
        ("content-type", "application/json".to_owned()),
    ];
    let (code, answer) = status(&service, post(&github_id, &signed, body)).await;
    assert_eq!(code, 202, "kind = \"github\" on the stack: {answer}");
    let forged = [("x-hub-signature-256", sign(body, "not-the-secret"))];
    let (code, answer) = status(&service, post(&github_id, &forged, body)).await;
    assert_eq!(code, 401, "{answer}");

    let token = [("x-token", "anything".to_owned())];
    let (code, answer) = status(&service, post(&missing_id, &token, body)).await;
    assert_eq!(code, 500, "a secret that does not exist: {answer}");
    assert!(!answer.contains("not-on-the-stack"), "{answer}");

    // The same binding with Secrets Manager unreachable (nothing listens on port 9).
    let config = aws_config::from_env()
        .endpoint_url("http://127.0.0.1:9")
        .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(1))
        .load()
        .await;
    let unreachable = AwsSecretResolver::new(
        aws_sdk_secretsmanager::Client::new(&config),
        Duration::from_secs(60),
    );
    let offline = Arc::new(TriggerService::new(
        state,
        Arc::new(unreachable),
        Arc::new(MemoryDispatchQueue::new()),
        astrolift_manifest::Limits::DEFAULT,
    ));
    let (code, answer) = status(&offline, post(&missing_id, &token, body)).await;
    assert_eq!(code, 503, "an unreachable secret store: {answer}");
}

/// A dispatch asking for a comment on issue or pull request number 1, with a render keyed
/// `key`: its task id.
async fn reporting_dispatch(state: &dyn StateStore, key: &str) -> String {
    let task_id = unique_name("t-smoke");
    let dispatch = Dispatch {
        id: format!("d-{task_id}"),
        idempotency_key: format!("k-{task_id}"),
        trigger_id: unique_name("trg_report"),
        repository: unique_name("smoke/report"),
        manifest_path: MANIFEST.to_owned(),
        snapshot_hash: SNAPSHOT.to_owned(),
        payload: None,
        created_at: 1,
        status: DispatchStatus::Dispatched,
        sender: Some("octocat".to_owned()),
        trusted: true,
        task_id: task_id.clone(),
        env_spec: None,
        message: None,
        report: Some(ReportTarget {
            kind: "comment".to_owned(),
            repository: "smoke/report".to_owned(),
            installation_id: 1,
            number: 1,
            head_sha: None,
        }),
    };
    state
        .record_dispatch(&dispatch)
        .await
        .expect("records the dispatch on the stack's table");
    record_render(state.tasks(), &task_id, Some(&key_hash(key)), 2)
        .await
        .expect("rendered");
    task_id
}

#[tokio::test]
async fn the_stacks_trigger_function_relays_a_terminal_report_to_the_sync_function() {
    let Some((table, _)) = smoke_setup() else {
        return;
    };
    let queue_url = std::env::var("ASTROLIFT_REPORT_QUEUE_URL")
        .expect("the trigger function's ASTROLIFT_REPORT_QUEUE_URL");
    let state = DynamoStateStore::from_env(&table)
        .await
        .expect("the stack's table");
    let task_id = reporting_dispatch(&state, "smoke-cluster-key").await;
    let service = Arc::new(
        astrolift_fn_trigger::service_from_env()
            .await
            .expect("the cold start succeeds on the trigger function's own configuration"),
    );
    let callback = lambda_http::http::Request::builder()
        .method("POST")
        .uri(format!("https://trigger.example/callbacks/{task_id}"))
        .header("authorization", "Bearer smoke-cluster-key")
        .header("content-type", "application/json")
        .body(Body::Text(
            r#"{"status":"succeeded","result":{"ok":true}}"#.to_owned(),
        ))
        .expect("a request");
    let (code, answer) = status(&service, callback).await;
    assert_eq!(code, 200, "{answer}");

    let sqs = aws_sdk_sqs::Client::new(&astrolift_store::load_sdk_config().await);
    let received = sqs
        .receive_message()
        .queue_url(&queue_url)
        .max_number_of_messages(10)
        .send()
        .await
        .expect("receives from the stack's report queue");
    let jobs: Vec<serde_json::Value> = received
        .messages()
        .iter()
        .filter_map(|m| serde_json::from_str(m.body()?).ok())
        .collect();
    assert_eq!(
        jobs,
        vec![serde_json::json!({"version": 1, "kind": "report", "task_id": task_id})],
        "one report job for the sync function"
    );
}
