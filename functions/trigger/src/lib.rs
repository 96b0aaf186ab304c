//! The trigger Lambda: `POST /triggers/{trigger_id}` (docs/reference.md §10) and
//! `POST /callbacks/{task_id}` (§8).
//!
//! A thin shell around [`astrolift_trigger::TriggerService`]: `lambda_http::run`
//! serves [`router`], the trigger and callback part of the App's one route
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
use axum::Router;
use lambda_http::{Body, Request, Response};
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

/// One request as `lambda_http::run` serves it (tests): [`router`], then
/// `lambda_http`'s own conversion of the response into a Lambda body.
pub async fn handle(service: &Arc<TriggerService>, request: Request) -> Response<Body> {
    let response = match router(Arc::clone(service)).oneshot(request).await {
        Ok(response) => response,
        Err(infallible) => match infallible {},
    };
    lambda_http::IntoResponse::into_response(response).await
}
