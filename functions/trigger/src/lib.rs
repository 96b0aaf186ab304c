//! The trigger Lambda: `POST /triggers/{trigger_id}` (docs/reference.md §10) and
//! `POST /callbacks/{task_id}` (§8).
//!
//! A thin shell around [`astrolift_trigger::TriggerService`]: [`handle`] takes
//! the trigger or task id from the raw path (function URL events carry no path
//! parameters; the function URL forwards every path, so no API route is needed),
//! hands headers and body to the service, and turns its answer into an HTTP
//! response. Every status and body is the service's (see
//! `astrolift_trigger::service` and `astrolift_dispatch::callback`); this file adds
//! only 404 for any other path and 405 for any other method.
//!
//! [`service_from_env`] builds the clients once per container, before the
//! first request:
//! - `ASTROLIFT_STATE`: `dynamodb:TABLE` on Lambda (`sqlite:PATH` locally);
//! - `ASTROLIFT_SECRETS`: `aws` (Secrets Manager, cached) or `env`;
//!   `GITHUB_WEBHOOK_SECRET` for `verify.kind = "github"`;
//! - `ASTROLIFT_DISPATCH_QUEUE_URL`: the SQS queue for dispatches; without
//!   it, messages stay in memory (local runs only: a warning is logged).
#![forbid(unsafe_code)]

use astrolift_bot::config::Environment;
use astrolift_dispatch::Answer;
use astrolift_trigger::TriggerService;
use lambda_http::http::{Method, header};
use lambda_http::{Body, Request, Response};
use serde_json::json;

/// The `Function` dimension of this function's metrics.
pub const FUNCTION: &str = "trigger";

/// The route's prefix; the rest of the path is the trigger id.
const ROUTE: &str = "/triggers/";
/// The callback route's prefix; the rest of the path is the task id.
const CALLBACK_ROUTE: &str = "/callbacks/";
/// Longer ids are not ours (ours are `trg_` and 24 hex digits, and GUIDs).
const MAX_TRIGGER_ID: usize = 128;

/// Why the function cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] astrolift_bot::config::ConfigError),
    #[error("cannot set up triggers: {0}")]
    Secrets(#[from] astrolift_bot::triggers::TriggerSetupError),
}

/// The service with its clients, from the environment (see the crate docs):
/// the same construction as `astrolift serve` and the webhook function.
pub async fn service_from_env() -> Result<TriggerService, StartupError> {
    let environment = Environment::new();
    let stores = environment.stores().await?;
    Ok(astrolift_bot::triggers::service_from_env(&environment, stores.state, stores.blobs).await?)
}

/// JSON logs on Lambda (see `astrolift_bot::telemetry`).
pub fn init_logging() {
    astrolift_bot::telemetry::init_logging();
}

/// The trigger id of `/triggers/{trigger_id}`: one non-empty segment.
pub fn trigger_id_of(path: &str) -> Option<&str> {
    segment_after(path, ROUTE)
}

/// The task id of `/callbacks/{task_id}`: one non-empty segment.
pub fn task_id_of(path: &str) -> Option<&str> {
    segment_after(path, CALLBACK_ROUTE)
}

fn segment_after<'p>(path: &'p str, prefix: &str) -> Option<&'p str> {
    let id = path.strip_prefix(prefix)?;
    let id = id.strip_suffix('/').unwrap_or(id);
    (!id.is_empty() && id.len() <= MAX_TRIGGER_ID && !id.contains('/')).then_some(id)
}

/// Which route a path is.
enum Route<'p> {
    Trigger(&'p str),
    Callback(&'p str),
}

/// One request: routed, handed to the service, answered.
pub async fn handle(service: &TriggerService, request: Request) -> Response<Body> {
    let path = request.uri().path();
    let route = match (trigger_id_of(path), task_id_of(path)) {
        (Some(trigger_id), _) => Route::Trigger(trigger_id),
        (None, Some(task_id)) => Route::Callback(task_id),
        (None, None) => return Answer::new(404, json!({"error": "no such route"})).into_response(),
    };
    if request.method() != Method::POST {
        let mut response = Answer::new(405, json!({"error": "use POST"})).into_response();
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
        return response;
    }
    let body: &[u8] = match request.body() {
        Body::Empty => &[],
        Body::Text(text) => text.as_bytes(),
        Body::Binary(bytes) => bytes,
        // `Body` is non-exhaustive; a future kind is not a request we know.
        _ => return Answer::new(400, json!({"error": "unsupported body"})).into_response(),
    };
    let answer = match route {
        Route::Trigger(trigger_id) => {
            astrolift_bot::triggers::handle(service, FUNCTION, trigger_id, request.headers(), body)
                .await
        }
        Route::Callback(task_id) => service.callback(task_id, request.headers(), body).await,
    };
    answer.into_response()
}
