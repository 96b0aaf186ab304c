//! The trigger Lambda: `POST /triggers/{trigger_id}` (docs/reference.md §10) and
//! `POST /callbacks/{task_id}` (§8).
//!
//! It is invoked two ways ([`Invocation`]): by its function URL, and by the stage queue's
//! event source, whose batches are the stage messages of workflow executions on Step
//! Functions (docs/reference.md §5.6), each dispatched by
//! [`TriggerService::stage_message`] and listed in `batchItemFailures` when a retry may
//! dispatch it.
//!
//! A thin shell around [`astrolift_trigger::TriggerService`]: a function-URL request is
//! served by [`router`], the trigger and callback part of the App's one route
//! table (`astrolift_bot::routes`), which takes the trigger or task id from the
//! raw path (function URL events carry no path parameters; the function URL
//! forwards every path, so no API route is needed), hands headers and body to
//! the service, and turns its answer into an HTTP response through
//! `Answer::into_response`. Every status and body is the service's (see
//! `astrolift_trigger::service` and `astrolift_dispatch::callback`); the
//! routes add only 404 for any other path and 405 for any other method.
//!
//! [`service_from_env`] builds the clients once per container, before the
//! first request:
//! - `ASTROLIFT_STATE`: `dynamodb:TABLE` on Lambda (`sqlite:PATH` locally);
//! - `ASTROLIFT_SECRETS`: `aws` (Secrets Manager, cached) or `env`;
//!   `GITHUB_WEBHOOK_SECRET` for `verify.kind = "github"`;
//! - `ASTROLIFT_DISPATCH_QUEUE_URL`: the SQS queue for dispatches; without
//!   it, messages stay in memory (local runs only: a warning is logged).
#![forbid(unsafe_code)]

use std::sync::Arc;

use astrolift_bot::config::Environment;
use astrolift_bot::routes;
use astrolift_trigger::TriggerService;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use axum::Router;
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// The path rules of the trigger and callback routes (`astrolift_bot::routes`).
pub use astrolift_bot::routes::{task_id_of, trigger_id_of};

/// The `Function` dimension of this function's metrics.
pub const FUNCTION: &str = "trigger";

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

/// The function's routes: the trigger and callback part of the App's one
/// route table (`astrolift_bot::routes::triggers`) with the 404 fallback.
/// Bodies are taken whole (`astrolift_bot::routes::WholeBody`): the service
/// enforces its body limits. What `lambda_http::run` serves.
pub fn router(service: Arc<TriggerService>) -> Router {
    routes::triggers(service, FUNCTION, routes::WholeBody).merge(routes::no_such_route())
}

/// What the function was invoked with.
#[derive(Debug)]
pub enum Invocation {
    /// A batch of the stage queue.
    Stages(SqsEvent),
    /// A function-URL request.
    Http(Box<Request>),
}

impl Invocation {
    /// An event with `Records` is a stage batch; anything else must be a function-URL
    /// request. `event` is the invocation's JSON text, parsed once into what it is (a
    /// probe reads only whether `Records` is there).
    pub fn parse(event: &str) -> Result<Self, String> {
        #[derive(serde::Deserialize)]
        struct Probe {
            #[serde(rename = "Records")]
            records: Option<serde::de::IgnoredAny>,
        }
        let probe: Probe =
            serde_json::from_str(event).map_err(|error| format!("not JSON: {error}"))?;
        if probe.records.is_some() {
            return serde_json::from_str(event)
                .map(Invocation::Stages)
                .map_err(|error| format!("not an SQS batch: {error}"));
        }
        lambda_http::request::from_str(event)
            .map(|request| Invocation::Http(Box::new(request)))
            .map_err(|error| format!("not a function-URL request: {error}"))
    }
}

/// Handles one invocation (its JSON text): a stage batch's partial response, or the
/// function-URL response.
pub async fn handle_invocation(
    service: &Arc<TriggerService>,
    event: &str,
) -> Result<Value, String> {
    match Invocation::parse(event)? {
        Invocation::Stages(batch) => {
            let response = handle_stages(service, batch).await;
            serde_json::to_value(response).map_err(|error| error.to_string())
        }
        Invocation::Http(request) => {
            let response = handle(service, *request).await;
            Ok(function_url_response(response))
        }
    }
}

/// Each stage message of `batch` in turn; those a retry may dispatch are reported.
pub async fn handle_stages(service: &TriggerService, batch: SqsEvent) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for record in batch.records {
        let body = record.body.as_deref().unwrap_or_default();
        if service.stage_message(body).await.is_err() {
            response.add_failure(record.message_id.unwrap_or_default());
        }
    }
    response
}

/// `response` as the function URL's response event (payload format 2.0).
pub fn function_url_response(response: Response<Body>) -> Value {
    let (parts, body) = response.into_parts();
    let headers: serde_json::Map<String, Value> = parts
        .headers
        .iter()
        .filter_map(|(name, value)| Some((name.to_string(), json!(value.to_str().ok()?))))
        .collect();
    let (body, base64) = match body {
        Body::Empty => (String::new(), false),
        Body::Text(text) => (text, false),
        Body::Binary(bytes) => (base64_encode(&bytes), true),
        _ => (String::new(), false),
    };
    json!({
        "statusCode": parts.status.as_u16(),
        "headers": headers,
        "body": body,
        "isBase64Encoded": base64,
        "cookies": [],
    })
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One request as `lambda_http::run` serves it (tests): [`router`], then
/// `lambda_http`'s own conversion of the response into a Lambda body.
pub async fn handle(service: &Arc<TriggerService>, request: Request) -> Response<Body> {
    let response = match router(Arc::clone(service)).oneshot(request).await {
        Ok(response) => response,
        Err(infallible) => match infallible {},
    };
    lambda_http::IntoResponse::into_response(response).await
}
