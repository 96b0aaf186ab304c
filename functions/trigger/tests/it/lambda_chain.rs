//! The whole run side through both Lambda handlers on moto (S3, DynamoDB,
//! SQS): a signed GitHub `issues.opened` delivery to the webhook function fans
//! out to the example's GitHub-sourced trigger; its dispatch message lands on
//! the SQS dispatch queue, valid against `schemas/dispatch.schema.json`;
//! `render_dispatch` (what a controller embeds) gives the container
//! environment with a fresh cluster key; and the trigger function's
//! `POST /callbacks/{task_id}` with that key records the terminal status
//! once (a second report is 409).

use std::sync::Arc;

use astrolift_bot::{Ingress, RecordingJobQueue};
use astrolift_dispatch::content::{BlobContent, UrlOptions};
use astrolift_dispatch::dispatch::SqsDispatchQueue;
use astrolift_dispatch::render::{RenderOptions, render_dispatch};
use astrolift_fn_webhook::WebhookFunction;
use astrolift_forge::webhook::WebhookSecrets;
use astrolift_manifest::Limits;
use astrolift_store::blob::S3BlobStore;
use astrolift_store::state::{DynamoStateStore, TaskStatus};
use astrolift_store::testing::{aws_endpoint, unique_name};
use astrolift_store::{BlobStore, StateStore};
use astrolift_trigger::TriggerService;
use hmac::{Hmac, KeyInit, Mac};
use lambda_http::Body;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::dispatch_schema::dispatch_schema_errors;
use crate::{REPO, TestSecrets, apply_monorepo};

const GITHUB_SECRET: &str = "lambda-chain-webhook-secret";
const CALLBACK_BASE: &str = "https://trigger.example.test";

/// The Lambda request GitHub's delivery of `body` would become.
fn delivery(body: &Value) -> lambda_http::Request {
    let bytes = serde_json::to_vec(body).expect("JSON");
    let mut mac = Hmac::<Sha256>::new_from_slice(GITHUB_SECRET.as_bytes()).expect("any key");
    mac.update(&bytes);
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    http::Request::builder()
        .method("POST")
        .uri("https://webhook.example.test/")
        .header("content-type", "application/json")
        .header("x-github-event", "issues")
        .header("x-github-delivery", "d-lambda-chain")
        .header("x-hub-signature-256", signature)
        .body(Body::Binary(bytes))
        .expect("a request")
}

fn callback(task_id: &str, key: &str, status: &str) -> lambda_http::Request {
    let body = json!({"status": status, "result": {"summary": "triaged"}}).to_string();
    http::Request::builder()
        .method("POST")
        .uri(format!("{CALLBACK_BASE}/callbacks/{task_id}"))
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .body(Body::Text(body))
        .expect("a request")
}

fn body_json(response: &lambda_http::Response<Body>) -> Value {
    serde_json::from_slice(response.body().as_ref()).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread")]
async fn webhook_fan_out_sqs_render_callback_on_moto() {
    if aws_endpoint("webhook_fan_out_sqs_render_callback_on_moto").is_none() {
        return;
    }
    let name = unique_name("fn-chain");
    let blobs = S3BlobStore::from_env(&name, "", Default::default())
        .await
        .expect("s3 client");
    blobs.create_bucket().await.expect("bucket");
    let blobs: Arc<dyn BlobStore> = Arc::new(blobs);
    let state = DynamoStateStore::from_env(&name).await.expect("dynamodb");
    state.create_table().await.expect("table");
    let state: Arc<dyn StateStore> = Arc::new(state);
    apply_monorepo(blobs.clone(), state.clone()).await;
    let sdk = astrolift_store::load_sdk_config().await;
    let queue = SqsDispatchQueue::create(aws_sdk_sqs::Client::new(&sdk), &unique_name("chain"))
        .await
        .expect("the dispatch queue");
    let queue = Arc::new(queue);
    let content = Arc::new(BlobContent::new(
        blobs.clone(),
        UrlOptions::default(),
        Limits::DEFAULT,
    ));
    let service = TriggerService::new(
        state.clone(),
        Arc::new(TestSecrets),
        queue.clone(),
        Limits::DEFAULT,
    )
    .with_content(content.clone())
    .with_callback_base(Some(CALLBACK_BASE.to_owned()));
    let service = Arc::new(service);
    let webhook = WebhookFunction::new(Ingress {
        state: state.clone(),
        secrets: WebhookSecrets::new(GITHUB_SECRET.into(), None).expect("secret"),
        jobs: Arc::new(RecordingJobQueue::new()),
        triggers: Some(service.clone()),
        limits: Limits::DEFAULT,
        function: "webhook",
    });

    let issue = json!({
        "action": "opened",
        "issue": {
            "number": 42, "title": "Login fails",
            "user": {"login": "octocat"}, "author_association": "MEMBER",
        },
        "repository": {"id": 7, "full_name": REPO, "default_branch": "main"},
        "sender": {"login": "octocat"},
    });
    let answered = webhook.handle(delivery(&issue)).await;
    assert_eq!(answered.status().as_u16(), 202, "{}", body_json(&answered));
    assert_eq!(body_json(&answered)["dispatched"], 1);

    let received = queue.receive(1).await.expect("receives");
    assert_eq!(received.len(), 1, "one dispatch on SQS");
    let message = serde_json::to_value(&received[0]).expect("JSON");
    assert_eq!(
        dispatch_schema_errors(&message),
        Vec::<String>::new(),
        "{message}"
    );
    assert_eq!(message["payload"]["issue"], 42, "{message}");
    assert_eq!(message["source"]["kind"], "trigger");
    let dispatch_id = received[0].dispatch_id.clone();

    let options = RenderOptions {
        controller_url: "https://controller.example.test".to_owned(),
        workspace: "/workspace".to_owned(),
        listener: false,
    };
    let rendered = render_dispatch(state.as_ref(), &content, &dispatch_id, &options, 0)
        .await
        .expect("renders");
    let key = rendered.env.vars["ASTROLIFT_CLUSTER_KEY"].clone();
    assert_eq!(
        rendered.env.vars["AGENT_CALLBACK_URL"],
        format!("{CALLBACK_BASE}/callbacks/{}", rendered.task_id)
    );
    assert!(rendered.env.vars.contains_key("ASTROLIFT_PAYLOAD_URL"));

    let wrong =
        astrolift_fn_trigger::handle(&service, callback(&rendered.task_id, "nope", "failed")).await;
    assert_eq!(wrong.status().as_u16(), 401, "{}", body_json(&wrong));
    let done = callback(&rendered.task_id, &key, "succeeded");
    let done = astrolift_fn_trigger::handle(&service, done).await;
    assert_eq!(done.status().as_u16(), 200, "{}", body_json(&done));
    let again = callback(&rendered.task_id, &key, "failed");
    let again = astrolift_fn_trigger::handle(&service, again).await;
    assert_eq!(again.status().as_u16(), 409, "{}", body_json(&again));
    let task = state
        .tasks()
        .get_dispatch_task(&dispatch_id)
        .await
        .expect("reads")
        .expect("the task");
    assert_eq!(task.status, TaskStatus::Succeeded);
}
