//! The one route table (`astrolift_bot::routes`), driven as a tower service:
//! what `serve` and the functions run. Ingress and the trigger service are
//! real, on SQLite, with a recording (or a refusing) job queue.

use std::sync::Arc;

use astrolift_bot::queue::QueueError;
use astrolift_bot::routes::{self, MAX_ID, WholeBody};
use astrolift_bot::{Ingress, JobQueue, RecordingJobQueue, SyncJob};
use astrolift_dispatch::dispatch::MemoryDispatchQueue;
use astrolift_forge::webhook::WebhookSecrets;
use astrolift_manifest::Limits;
use astrolift_store::BoxFuture;
use astrolift_trigger::{EnvSecretResolver, TriggerService};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response};
use serde_json::{Value, json};
use tower::ServiceExt as _;

use crate::support::{MAIN_SHA, SECRET, embedded_stores, push, signed};

/// Refuses every job, as an unreachable SQS would: ingress answers 503.
#[derive(Debug)]
struct RefusingQueue;

impl JobQueue for RefusingQueue {
    fn enqueue<'a>(&'a self, _job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>> {
        Box::pin(async { Err(QueueError::Sqs("unreachable".into())) })
    }
}

struct Harness {
    /// Every part, as `serve` merges them.
    router: Router,
    ingress: Arc<Ingress>,
    _dir: tempfile::TempDir,
}

async fn harness_with(jobs: Arc<dyn JobQueue>) -> Harness {
    let (stores, dir) = embedded_stores().await;
    let ingress = Arc::new(Ingress {
        state: stores.state.clone(),
        secrets: WebhookSecrets::new(SECRET.into(), None).expect("secrets"),
        jobs,
        triggers: None,
        limits: Limits::DEFAULT,
        function: "test",
    });
    let service = Arc::new(TriggerService::new(
        stores.state,
        Arc::new(EnvSecretResolver::new()),
        Arc::new(MemoryDispatchQueue::new()),
        Limits::DEFAULT,
    ));
    let router = routes::webhook(ingress.clone(), WholeBody)
        .merge(routes::triggers(service, "test", WholeBody))
        .merge(routes::healthz())
        .merge(routes::no_such_route());
    Harness {
        router,
        ingress,
        _dir: dir,
    }
}

async fn harness() -> Harness {
    harness_with(Arc::new(RecordingJobQueue::new())).await
}

fn request(method: &str, path: &str, body: Vec<u8>) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .body(Body::from(body))
        .expect("a request")
}

/// Status, headers and JSON body (`Null` when empty).
async fn call(router: &Router, request: Request<Body>) -> (u16, Response<()>, Value) {
    let response = router.clone().oneshot(request).await.expect("infallible");
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("the body");
    let json = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).expect("a JSON body")
    };
    (parts.status.as_u16(), Response::from_parts(parts, ()), json)
}

fn header<'r>(response: &'r Response<()>, name: &str) -> Option<&'r str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn an_unknown_path_is_404_no_such_route() {
    let h = harness().await;
    for (method, path) in [
        ("POST", "/nope"),
        ("GET", "/"),
        ("POST", "/triggers/"),
        ("POST", "/triggers"),
        ("POST", "/triggers/a/b"),
        ("POST", "/callbacks/"),
        ("POST", "/callbacks/a/b"),
        ("POST", "/github/webhook/extra"),
    ] {
        let (status, response, body) = call(&h.router, request(method, path, Vec::new())).await;
        assert_eq!(
            (status, body),
            (404, json!({ "error": "no such route" })),
            "{method} {path}"
        );
        assert_eq!(header(&response, "content-type"), Some("application/json"));
    }
}

#[tokio::test]
async fn a_wrong_method_is_405_with_allow_post() {
    let h = harness().await;
    for (method, path, message) in [
        ("GET", "/github/webhook", "GitHub webhooks are POSTed"),
        ("PUT", "/github/webhook", "GitHub webhooks are POSTed"),
        ("GET", "/triggers/trg_1", "use POST"),
        ("DELETE", "/triggers/trg_1/", "use POST"),
        ("GET", "/callbacks/task-1", "use POST"),
    ] {
        let (status, response, body) = call(&h.router, request(method, path, Vec::new())).await;
        assert_eq!(
            (status, body),
            (405, json!({ "error": message })),
            "{method} {path}"
        );
        assert_eq!(header(&response, "allow"), Some("POST"), "{method} {path}");
    }
}

#[tokio::test]
async fn healthz_is_200_ok() {
    let h = harness().await;
    let (status, response, body) = call(&h.router, request("GET", "/healthz", Vec::new())).await;
    assert_eq!((status, body), (200, json!({ "status": "ok" })));
    assert_eq!(header(&response, "content-type"), Some("application/json"));
    // Its other methods: axum's own 405, as `serve` has always answered.
    let (status, response, body) = call(&h.router, request("POST", "/healthz", Vec::new())).await;
    assert_eq!((status, body), (405, Value::Null));
    assert_eq!(header(&response, "allow"), Some("GET,HEAD"));
}

#[tokio::test]
async fn an_id_over_the_limit_is_no_route_whatever_the_method() {
    let h = harness().await;
    let longest = "t".repeat(MAX_ID);
    let over = "t".repeat(MAX_ID + 1);
    for prefix in ["/triggers", "/callbacks"] {
        for method in ["POST", "GET"] {
            let path = format!("{prefix}/{over}");
            let (status, _, body) = call(&h.router, request(method, &path, Vec::new())).await;
            assert_eq!(
                (status, body),
                (404, json!({ "error": "no such route" })),
                "{method} {prefix}/<{} chars>",
                MAX_ID + 1
            );
        }
        // The longest id is routed (and answered by the service).
        let path = format!("{prefix}/{longest}");
        let (_, _, body) = call(&h.router, request("POST", &path, Vec::new())).await;
        assert_ne!(body, json!({ "error": "no such route" }), "{prefix}");
    }
}

#[tokio::test]
async fn a_trailing_slash_is_the_same_route() {
    let h = harness().await;
    for path in [
        "/triggers/trg_0123456789abcdef01234567",
        "/callbacks/task-1",
    ] {
        let bare = call(&h.router, request("POST", path, b"{}".to_vec())).await;
        let slashed = call(
            &h.router,
            request("POST", &format!("{path}/"), b"{}".to_vec()),
        )
        .await;
        assert_eq!((bare.0, &bare.2), (slashed.0, &slashed.2), "{path}");
        assert_ne!(bare.2, json!({ "error": "no such route" }), "{path}");
    }
    // The service saw the id without the slash.
    let (status, _, body) = call(
        &h.router,
        request(
            "POST",
            "/triggers/trg_0123456789abcdef01234567/",
            b"{}".to_vec(),
        ),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["trigger_id"], json!("trg_0123456789abcdef01234567"));
}

/// A signed push through `POST /github/webhook`.
fn delivery(path: &str, id: &str) -> Request<Body> {
    let body = serde_json::to_vec(&push("main", MAIN_SHA)).expect("json");
    let mut request = request("POST", path, body.clone());
    *request.headers_mut() = signed("push", id, &body, SECRET);
    request
}

#[tokio::test]
async fn a_delivery_reaches_ingress() {
    let jobs = Arc::new(RecordingJobQueue::new());
    let h = harness_with(jobs.clone()).await;
    let (status, _, body) = call(&h.router, delivery("/github/webhook", "d-route")).await;
    assert_eq!((status, body), (202, json!({ "status": "queued" })));
    assert_eq!(jobs.jobs().len(), 1);
    // The function URL's router: any path.
    let anywhere = routes::webhook_on_every_path(h.ingress.clone());
    let (status, _, body) = call(&anywhere, delivery("/", "d-root")).await;
    assert_eq!((status, body), (202, json!({ "status": "queued" })));
    let (status, response, body) = call(&anywhere, request("GET", "/any/path", Vec::new())).await;
    assert_eq!(
        (status, body),
        (405, json!({ "error": "GitHub webhooks are POSTed" }))
    );
    assert_eq!(header(&response, "allow"), Some("POST"));
}

#[tokio::test]
async fn a_503_answer_carries_retry_after() {
    let h = harness_with(Arc::new(RefusingQueue)).await;
    let (status, response, _) = call(&h.router, delivery("/github/webhook", "d-503")).await;
    assert_eq!(status, 503);
    assert_eq!(header(&response, "retry-after"), Some("1"));
}

/// Bodies are not held to axum's default limit (2 MB): a body of 3 MiB
/// reaches ingress, which refuses its signature, not its size.
#[tokio::test]
async fn a_body_over_axums_default_limit_reaches_ingress() {
    let h = harness().await;
    let body = vec![b' '; 3 * 1024 * 1024];
    let mut big = request("POST", "/github/webhook", body);
    big.headers_mut()
        .insert("x-github-event", "push".parse().expect("header"));
    big.headers_mut()
        .insert("x-github-delivery", "d-big".parse().expect("header"));
    let (status, _, body) = call(&h.router, big).await;
    assert_ne!(status, 413, "{body}");
    assert_eq!(status, 401, "{body}");
}
