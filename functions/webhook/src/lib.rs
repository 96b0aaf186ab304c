//! The `webhook` Lambda function: a thin shell over [`astrolift_bot::Ingress`].
//!
//! A GitHub delivery arrives through the function URL (or an HTTP API v2
//! route) → [`WebhookFunction::handle`] hands its headers and raw body to
//! [`Ingress::receive`] (verify → record installations → dedupe → SQS FIFO
//! sync job) → the [`Answer`] goes back as a JSON response: 202 queued,
//! 200 ping/ignored/duplicate, 400/401/413 refused, 503 try again.
//!
//! Everything is built once per container, at cold start
//! ([`WebhookFunction::from_env`]), outside the handler: the state store, the
//! webhook secrets (read from Secrets Manager once) and the SQS client.
//!
//! The raw body: `lambda_http` already decodes a body that the function URL
//! delivered with `isBase64Encoded: true`, and leaves a text body as the exact
//! string GitHub sent; either way [`lambda_http::Body`] holds the bytes
//! GitHub signed, so ingress is told `is_base64_encoded: false`.
#![forbid(unsafe_code)]

use std::sync::Arc;

use astrolift_bot::config::{ConfigError, Environment};
use astrolift_bot::{Answer, Ingress};
use astrolift_forge::webhook::WebhookRequest;
use astrolift_manifest::Limits;
use lambda_http::http::header::ALLOW;
use lambda_http::http::{HeaderValue, Method};
use lambda_http::{Body, Request, Response};
use serde_json::json;

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

    /// One invocation: every request gets an answer; nothing panics.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        if request.method() != Method::POST {
            let mut response: Response<Body> =
                Answer::new(405, json!({ "error": "GitHub webhooks are POSTed" })).into_response();
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST"));
            return response;
        }
        let (parts, body) = request.into_parts();
        let webhook = WebhookRequest {
            headers: &parts.headers,
            body: body_bytes(body),
            // `lambda_http` has already decoded a base64 body (module docs).
            is_base64_encoded: false,
        };
        self.ingress.receive(webhook).await.into_response()
    }
}

/// The request body as shared bytes, taking over its buffer (no copy).
fn body_bytes(body: Body) -> bytes::Bytes {
    match body {
        Body::Empty => bytes::Bytes::new(),
        Body::Text(text) => bytes::Bytes::from(text),
        Body::Binary(binary) => bytes::Bytes::from(binary),
        // `Body` is non-exhaustive in spirit: copy anything else.
        #[allow(unreachable_patterns)]
        other => bytes::Bytes::copy_from_slice(other.as_ref()),
    }
}
