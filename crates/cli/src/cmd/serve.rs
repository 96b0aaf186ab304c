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
use astrolift_bot::triggers::{self, service_from_env};
use astrolift_bot::{Answer, Ingress, JobQueue, LocalJobQueue, SyncRunner};
use astrolift_forge::webhook::WebhookRequest;
use astrolift_manifest::Limits;
use astrolift_sync::Stores;
use astrolift_trigger::TriggerService;
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
    triggers: Arc<TriggerService>,
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

/// Bounds against slow or abusive clients (see SECURITY.md).
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time to receive a request's headers (slow-loris).
    pub header_read: Duration,
    /// Time to receive a request's body.
    pub body_read: Duration,
    /// Connections served at once; more wait in the kernel's accept queue.
    pub connections: usize,
}

pub const CONNECTION_LIMITS: ConnectionLimits = ConnectionLimits {
    header_read: Duration::from_secs(5),
    body_read: Duration::from_secs(10),
    connections: 1024,
};

async fn serve(args: Args) -> anyhow::Result<()> {
    let app = build(&args).await?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr().context("no local address")?;
    // Tests and scripts read this line to learn the port of `--listen 127.0.0.1:0`.
    println!("astrolift serve listening on http://{address}");
    tracing::info!(%address, "listening");
    let router = router(app);
    tokio::select! {
        result = accept_loop(listener, router, CONNECTION_LIMITS) => result,
        () = shutdown_signal() => Ok(()),
    }
}

/// hyper's HTTP/1 connection loop rather than `axum::serve`, which has no
/// header-read timeout: a client that trickles its headers is dropped after
/// `header_read`, and at most `connections` are served at once.
async fn accept_loop(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ConnectionLimits,
) -> anyhow::Result<()> {
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.connections));
    loop {
        let permit = Arc::clone(&permits)
            .acquire_owned()
            .await
            .context("the connection limiter closed")?;
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: wait, do not spin.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_read)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection closed");
            }
            drop(permit);
        });
    }
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
    let triggers = Arc::new(
        service_from_env(&environment, stores.state.clone())
            .await
            .context("cannot set up trigger secrets")?,
    );
    let ingress = Ingress {
        state: stores.state.clone(),
        secrets,
        jobs,
        triggers: Some(triggers.clone()),
        limits,
        function: "serve",
    };
    Ok(App {
        ingress: Arc::new(ingress),
        triggers,
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

async fn trigger(
    State(app): State<App>,
    Path(trigger_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let body = match read_body(body, app.limits.trigger_body).await {
        Ok(body) => body,
        Err(answer) => return respond(answer),
    };
    let answer = triggers::handle(&app.triggers, "serve", &trigger_id, &headers, &body).await;
    let retry_after = answer.retry_after();
    let mut response = respond(Answer::new(answer.status, answer.body));
    if let Some(seconds) = retry_after {
        response.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from(seconds),
        );
    }
    response
}

async fn healthz() -> Response {
    respond(Answer::new(200, json!({ "status": "ok" })))
}

/// Reads at most `limit` bytes within the body-read time; a longer body is a
/// 413 without reading the rest, a slower one a 408.
async fn read_body(body: Body, limit: u64) -> Result<Bytes, Answer> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let read = axum::body::to_bytes(body, limit);
    match tokio::time::timeout(CONNECTION_LIMITS.body_read, read).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(Answer::new(
            413,
            json!({ "error": format!("body is larger than {limit} bytes") }),
        )),
        Err(_) => Err(Answer::new(
            408,
            json!({ "error": "the request body was not received in time" }),
        )),
    }
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
    tracing::info!("shutting down; jobs still queued in memory are dropped");
}
