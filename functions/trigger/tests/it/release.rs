//! Containment through a RELEASE build of the trigger function:
//! the `trigger` binary runs as on Lambda, against a local Runtime API (the
//! routes a runtime uses: `next`, `response`, `error`), as
//! `bench/cold_start.py` drives the webhook binary. Each hostile trigger
//! program of `tests/containment` gets a small 4xx, then a benign event to
//! the same process gets 202, and the process is still the one started.
//!
//! The binaries come from `ASTROLIFT_RELEASE_BIN_DIR` (`trigger`, and
//! `astrolift` to apply the fixture); scripts/test.sh builds them and sets
//! `ASTROLIFT_REQUIRE_RELEASE_BINS=1`, so CI never skips this.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::containment_cases::{self as cases, release_binary};

const TOKEN: &str = "containment-token";
const SMALL: usize = 4096;

/// The local Runtime API: events wait in a channel for the runtime's `next`;
/// each answer goes to the test waiting for that request id.
#[derive(Clone)]
struct RuntimeApi {
    events: Arc<tokio::sync::Mutex<mpsc::Receiver<(String, Value)>>>,
    answers: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
}

const PREFIX: &str = "/2018-06-01/runtime";

async fn next(State(api): State<RuntimeApi>) -> Response {
    let Some((id, event)) = api.events.lock().await.recv().await else {
        return StatusCode::GONE.into_response();
    };
    let mut headers = HeaderMap::new();
    let deadline = (std::time::SystemTime::now() + Duration::from_secs(30))
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis();
    for (name, value) in [
        ("lambda-runtime-aws-request-id", id),
        ("lambda-runtime-deadline-ms", deadline.to_string()),
        (
            "lambda-runtime-invoked-function-arn",
            "arn:aws:lambda:us-east-1:123456789012:function:astrolift-trigger".to_owned(),
        ),
        ("content-type", "application/json".to_owned()),
    ] {
        headers.insert(name, HeaderValue::from_str(&value).expect("header"));
    }
    (headers, event.to_string()).into_response()
}

async fn answer(
    State(api): State<RuntimeApi>,
    UrlPath((id, kind)): UrlPath<(String, String)>,
    body: String,
) -> StatusCode {
    let value = match kind.as_str() {
        "response" => serde_json::from_str(&body).unwrap_or(Value::Null),
        _ => json!({ "runtime_error": body }),
    };
    if let Some(waiting) = api.answers.lock().expect("answers").remove(&id) {
        let _ = waiting.send(value);
    }
    StatusCode::ACCEPTED
}

/// The trigger binary on a local Runtime API; killed on drop.
struct Function {
    child: Child,
    events: mpsc::Sender<(String, Value)>,
    answers: Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>,
    sent: usize,
}

impl Drop for Function {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Function {
    async fn start(binary: &Path, home: &Path) -> Function {
        let (events, receiver) = mpsc::channel(1);
        let api = RuntimeApi {
            events: Arc::new(tokio::sync::Mutex::new(receiver)),
            answers: Arc::new(Mutex::new(HashMap::new())),
        };
        let answers = api.answers.clone();
        let router = Router::new()
            .route(&format!("{PREFIX}/invocation/next"), get(next))
            .route(
                &format!("{PREFIX}/invocation/{{id}}/{{kind}}"),
                post(answer),
            )
            .with_state(api);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, router).await });
        let child = Command::new(binary)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", address.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", "astrolift-trigger")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "release-test")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/astrolift-trigger")
            .env("AWS_REGION", "us-east-1")
            .env("ASTROLIFT_STATE", state_url(home))
            .env("ASTROLIFT_BLOBS", blobs_url(home))
            .env("ASTROLIFT_SECRETS", "env")
            .env("ASTROLIFT_SECRET_HOOKS_CONTAINMENT", TOKEN)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the trigger binary starts");
        Function {
            child,
            events,
            answers,
            sent: 0,
        }
    }

    /// One invocation: `POST /triggers/{id}` with `body`; the function's
    /// answer (`statusCode`, `headers`, `body`).
    async fn invoke(&mut self, trigger_id: &str, body: &Value) -> Value {
        self.sent += 1;
        let request_id = format!("req-{}", self.sent);
        let path = format!("/triggers/{trigger_id}");
        let event = json!({
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": path,
            "rawQueryString": "",
            "headers": {
                "content-type": "application/json",
                "x-token": TOKEN,
                "idempotency-key": request_id,
            },
            "requestContext": {
                "accountId": "anonymous",
                "apiId": "local",
                "domainName": "local.lambda-url.us-east-1.on.aws",
                "domainPrefix": "local",
                "http": {
                    "method": "POST",
                    "path": path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": "127.0.0.1",
                    "userAgent": "release-test"
                },
                "requestId": request_id,
                "routeKey": "$default",
                "stage": "$default",
                "time": "01/Dec/2026:00:00:00 +0000",
                "timeEpoch": 1796083200000u64
            },
            "body": body.to_string(),
            "isBase64Encoded": false
        });
        let (sender, receiver) = oneshot::channel();
        self.answers
            .lock()
            .expect("answers")
            .insert(request_id.clone(), sender);
        self.events
            .send((request_id, event))
            .await
            .expect("the API takes the event");
        tokio::time::timeout(Duration::from_secs(60), receiver)
            .await
            .expect("the function answers")
            .expect("an answer")
    }

    fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

fn state_url(home: &Path) -> String {
    format!("sqlite:{}", home.join("state.db").display())
}

fn blobs_url(home: &Path) -> String {
    format!("file:{}", home.join("blobs").display())
}

/// Applies the containment agent with the release `astrolift`; its trigger ids by name.
fn apply(astrolift: &Path, home: &Path) -> HashMap<String, String> {
    let stores = [
        format!("--state={}", state_url(home)),
        format!("--blobs={}", blobs_url(home)),
    ];
    let repo = cases::repo();
    let check = Command::new(astrolift)
        .args(["check", "--apply"])
        .arg(&repo)
        .args(&stores)
        .output()
        .expect("astrolift runs");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let list = Command::new(astrolift)
        .args(["triggers", "list", "--format", "json"])
        .args(&stores)
        .output()
        .expect("astrolift runs");
    assert!(
        list.status.success(),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    let bindings: Vec<Value> = serde_json::from_slice(&list.stdout).expect("json");
    bindings
        .iter()
        .map(|b| {
            let field = |name: &str| b[name].as_str().expect(name).to_owned();
            (field("name"), field("trigger_id"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn release_trigger_function_answers_after_every_hostile_program() {
    let (Some(trigger), Some(astrolift)) = (release_binary("trigger"), release_binary("astrolift"))
    else {
        return;
    };
    let home = tempfile::tempdir().expect("temp dir");
    let ids = apply(&astrolift, home.path());
    let cases = cases::cases();
    let benign = &cases["benign"];
    let mut function = Function::start(&trigger, home.path()).await;
    for case in cases["hostile"].as_array().expect("cases") {
        let name = case["trigger"].as_str().expect("trigger");
        let answer = function.invoke(&ids[name], &cases::body(case)).await;
        let status = answer["statusCode"].as_u64().unwrap_or(0);
        // `fromjson?` may swallow its own parse error: an empty payload, 202.
        let dispatched = case["may_dispatch"].as_bool() == Some(true) && status == 202;
        assert!(
            dispatched || (400..500).contains(&status),
            "{name}: {answer:.500}"
        );
        let body = answer["body"].as_str().unwrap_or_default();
        assert!(body.len() <= SMALL, "{name}: a {}-byte answer", body.len());
        let next = function.invoke(&ids["benign"], &cases::body(benign)).await;
        assert_eq!(next["statusCode"], 202, "after {name}: {next}");
        assert!(function.is_running(), "the function ended after {name}");
    }
}
