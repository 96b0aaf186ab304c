//! `astrolift serve`: the bot on one machine. The same ingress and runner as
//! the Lambda functions, with an in-process queue that keeps each
//! repository's jobs in order, on the configured stores.
//!
//! Routes: `POST /github/webhook`, `POST /triggers/{id}`, `GET /healthz`.
//! The queue lives in memory: jobs queued but not yet run when the process
//! stops are lost, and their deliveries must be redelivered (README).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use astrolift_bot::config::Environment;
use astrolift_bot::queue::JobHandler;
use astrolift_bot::{Answer, Ingress, JobQueue, LocalJobQueue, SyncRunner};
use astrolift_forge::webhook::WebhookRequest;
use astrolift_manifest::Limits;
use astrolift_sync::Stores;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::stores::StoreArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,

    #[command(flatten)]
    pub stores: StoreArgs,
}

/// What the routes share.
#[derive(Debug, Clone)]
struct App {
    ingress: Arc<Ingress>,
    limits: Limits,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(args))?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(args: Args) -> anyhow::Result<()> {
    let app = build(&args).await?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr().context("no local address")?;
    // Tests and scripts read this line to learn the port of `--listen 127.0.0.1:0`.
    println!("astrolift serve listening on http://{address}");
    tracing::info!(%address, "listening");
    axum::serve(listener, router(app))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .context("the server failed")
}

async fn build(args: &Args) -> anyhow::Result<App> {
    let environment = Environment::new();
    let stores = Stores {
        state: args.stores.state().await?,
        blobs: args.stores.blobs().await?,
    };
    let secrets = environment
        .webhook_secrets()
        .await
        .context("serve needs the App's webhook secret")?;
    let github = environment
        .github_app()
        .await
        .context("serve needs the GitHub App's id and private key")?;
    let limits = Limits::DEFAULT;
    let runner = Arc::new(SyncRunner {
        stores: stores.clone(),
        github: Arc::new(github),
        limits,
        function: "serve",
        fail_run_patience: Duration::from_secs(60),
    });
    let jobs: Arc<dyn JobQueue> = Arc::new(LocalJobQueue::new(job_handler(runner)));
    let ingress = Ingress {
        state: stores.state.clone(),
        secrets,
        jobs,
        triggers: None,
        limits,
        function: "serve",
    };
    Ok(App {
        ingress: Arc::new(ingress),
        limits,
    })
}

/// Runs each job to completion; failures are logged by the runner and, as
/// on Lambda, a retryable failure is tried again (up to 3 attempts here).
fn job_handler(runner: Arc<SyncRunner>) -> JobHandler {
    Arc::new(move |job| {
        let runner = Arc::clone(&runner);
        Box::pin(async move {
            for attempt in 1..=3u32 {
                match runner.run(&job).await {
                    Err(error) if error.is_retryable() && attempt < 3 => {
                        tokio::time::sleep(Duration::from_secs(u64::from(attempt))).await;
                    }
                    _ => return,
                }
            }
        })
    })
}

fn router(app: App) -> Router {
    Router::new()
        .route("/github/webhook", post(github_webhook))
        .route("/triggers/{trigger_id}", post(trigger))
        .route("/healthz", get(healthz))
        .with_state(app)
}

async fn github_webhook(State(app): State<App>, headers: HeaderMap, body: Body) -> Response {
    let body = match read_body(body, app.limits.webhook_body).await {
        Ok(body) => body,
        Err(answer) => return respond(answer),
    };
    let request = WebhookRequest {
        headers: &headers,
        body: &body,
        is_base64_encoded: false,
    };
    respond(app.ingress.receive(request).await)
}

async fn trigger(Path(trigger_id): Path<String>) -> Response {
    let body = json!({ "error": format!("unknown trigger {trigger_id}") });
    respond(Answer::new(404, body))
}

async fn healthz() -> Response {
    respond(Answer::new(200, json!({ "status": "ok" })))
}

/// Reads at most `limit` bytes; a longer body is a 413 without reading the rest.
async fn read_body(body: Body, limit: u64) -> Result<Bytes, Answer> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        Answer::new(
            413,
            json!({ "error": format!("body is larger than {limit} bytes") }),
        )
    })
}

fn respond(answer: Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if status == StatusCode::NO_CONTENT {
        return status.into_response();
    }
    (status, axum::Json(answer.body)).into_response()
}

async fn shutdown_signal() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
    tracing::info!("shutting down");
}
