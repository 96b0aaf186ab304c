//! The `webhook` Lambda function: a thin shell over [`astrolift_bot::Ingress`].
//!
//! A GitHub delivery arrives through the function URL (or an HTTP API v2
//! route) → `lambda_http::run` hands it to [`WebhookFunction::router`], the
//! webhook part of the App's one route table (`astrolift_bot::routes`), which
//! gives its headers and raw body to [`Ingress::receive`] (verify → record
//! installations → dedupe → SQS FIFO sync job) → the answer goes back as a
//! JSON response through `Answer::into_response`: 202 queued, 200
//! ping/ignored/duplicate, 400/401/413 refused, 503 try again; any method
//! but POST, 405. The router holds only the webhook route: nothing here
//! routes triggers or callbacks.
//!
//! Everything is built once per container, at cold start
//! ([`WebhookFunction::from_env`]), outside the handler: the state store, the
//! webhook secrets (read from Secrets Manager once) and the SQS client.
//!
//! The raw body: `lambda_http` already decodes a body that the function URL
//! delivered with `isBase64Encoded: true`, and leaves a text body as the exact
//! string GitHub sent; either way [`lambda_http::Body`] holds the bytes
//! GitHub signed, so ingress is told `is_base64_encoded: false`. The router
//! takes them over whole (`astrolift_bot::routes::WholeBody`): ingress
//! enforces the body limit.
#![forbid(unsafe_code)]

use std::sync::Arc;

use astrolift_bot::Ingress;
use astrolift_bot::config::{ConfigError, Environment};
use astrolift_bot::routes;
use astrolift_manifest::Limits;
use axum::Router;
use lambda_http::{Body, Request, Response};
use tower::ServiceExt as _;

/// The `Function` dimension of this function's metrics.
pub const FUNCTION: &str = "webhook";

/// Why the container cannot start. Never holds a secret value.
#[derive(Debug, thiserror::Error)]
pub enum ColdStartError {
    #[error("the webhook function is misconfigured: {0}")]
    Config(#[from] ConfigError),
    #[error(
        "ASTROLIFT_SYNC_QUEUE_URL is not set: the webhook function queues sync jobs on the \
         SQS FIFO sync queue (the stack sets it to the SyncQueue's URL)"
    )]
    NoSyncQueue,
    #[error("cannot set up triggers: {0}")]
    TriggerSecrets(#[from] astrolift_bot::triggers::TriggerSetupError),
}

/// The webhook function, built once per container.
#[derive(Debug, Clone)]
pub struct WebhookFunction {
    ingress: Arc<Ingress>,
}

impl WebhookFunction {
    /// A function over a ready ingress (tests, benchmarks).
    pub fn new(ingress: Ingress) -> Self {
        Self {
            ingress: Arc::new(ingress),
        }
    }

    /// The cold start: state store, webhook secrets and the SQS FIFO sync
    /// queue from the environment (docs/reference.md §13, docs/deploy.md).
    pub async fn from_env(environment: &Environment) -> Result<Self, ColdStartError> {
        let stores = environment.stores().await?;
        let state = stores.state;
        let secrets = environment.webhook_secrets().await?;
        let jobs = environment
            .sync_queue()
            .await
            .ok_or(ColdStartError::NoSyncQueue)?;
        // GitHub-sourced trigger bindings see every verified delivery.
        let triggers =
            astrolift_bot::triggers::service_from_env(environment, state.clone(), stores.blobs)
                .await?;
        Ok(Self::new(Ingress {
            state,
            secrets,
            jobs: Arc::new(jobs),
            triggers: Some(Arc::new(triggers)),
            limits: Limits::DEFAULT,
            function: FUNCTION,
        }))
    }

    pub fn ingress(&self) -> &Ingress {
        &self.ingress
    }

    /// The function's routes (`astrolift_bot::routes::webhook_on_every_path`):
    /// a POST on any path of the function URL goes to [`Ingress::receive`],
    /// any other method is a 405. What `lambda_http::run` serves.
    pub fn router(&self) -> Router {
        routes::webhook_on_every_path(Arc::clone(&self.ingress))
    }

    /// One invocation as `lambda_http::run` serves it (tests, benchmarks):
    /// [`Self::router`], then `lambda_http`'s own conversion of the response
    /// into a Lambda body. Every request gets an answer; nothing panics.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        let response = match self.router().oneshot(request).await {
            Ok(response) => response,
            Err(infallible) => match infallible {},
        };
        lambda_http::IntoResponse::into_response(response).await
    }
}
