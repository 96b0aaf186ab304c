//! Trigger bindings as the bot sees them: the service built from the
//! environment, and GitHub-sourced fan-out for the webhook ingress.

use std::path::PathBuf;
use std::sync::Arc;

use astrolift_dispatch::Answer;
use astrolift_dispatch::content::{BlobContent, UrlOptions};
use astrolift_dispatch::dispatch::{DispatchError, DispatchQueue, SqsDispatchQueue};
#[cfg(feature = "sqlite")]
use astrolift_dispatch::file_outbox::SqliteOutbox;
use astrolift_dispatch::outbox::{StateOutbox, outbox_max_from_env, outbox_path};
use astrolift_dispatch::report::ResultReporter;
use astrolift_forge::webhook::WebhookSecrets;
use astrolift_manifest::Limits;
use astrolift_store::{BlobStore, BoxFuture, StateLocation, StateStore};
use astrolift_trigger::secrets::{AwsSecretResolver, EnvSecretResolver, resolver_from_env};
use astrolift_trigger::{SecretError, SecretResolver, TriggerService};
use http::HeaderMap;

use crate::config::{ConfigError, Environment};
use crate::ingress::{EventFanOut, FanOutSummary, GithubDelivery};
use crate::report::{GitHubReporter, SqsReportRelay};
use crate::telemetry::{self, Metric};

/// The trigger service on `state` and `blobs` (each dispatch's snapshot,
/// prompts and presigned package URL, expiring after
/// `ASTROLIFT_PACKAGE_URL_EXPIRY_SECONDS`; callback route under
/// `ASTROLIFT_CALLBACK_BASE_URL`), with the secret resolver of
/// `ASTROLIFT_SECRETS` and the dispatch queue of [`dispatch_queue_from_env`].
///
/// `verify = { kind = "github" }` checks against the App's webhook secret,
/// read the way the webhook ingress reads it ([`Environment::webhook_secrets`]:
/// `GITHUB_WEBHOOK_SECRET`, else the Secrets Manager secret named by
/// `GITHUB_WEBHOOK_SECRET_ID`, and the previous one during a rotation). With
/// neither set, such a trigger answers that the secret is not configured; a
/// secret named but unreadable stops the start.
pub async fn service_from_env(
    environment: &Environment,
    state: Arc<dyn StateStore>,
    blobs: Arc<dyn BlobStore>,
) -> Result<TriggerService, TriggerSetupError> {
    let github = match environment.webhook_secrets().await {
        Ok(secrets) => Some(secrets),
        Err(ConfigError::Missing(_)) => None,
        Err(error) => {
            return Err(TriggerSetupError::Secrets(SecretError::Aws {
                reference: "GITHUB_WEBHOOK_SECRET_ID".to_owned(),
                reason: error.to_string(),
            }));
        }
    };
    let secrets: Arc<dyn SecretResolver> = match github {
        Some(github) => Arc::from(resolver_with_github(github).await?),
        None => Arc::from(resolver_from_env().await?),
    };
    let queue = dispatch_queue_from_env(&state, Some(environment)).await?;
    let urls = UrlOptions::from_env().map_err(TriggerSetupError::Config)?;
    let content = BlobContent::new(blobs, urls, Limits::DEFAULT);
    let engine = environment
        .workflow_engine()
        .await
        .map_err(|error| TriggerSetupError::Config(error.to_string()))?
        .map(|engine| engine.client);
    Ok(TriggerService::new(state, secrets, queue, Limits::DEFAULT)
        .with_content(Arc::new(content))
        .with_callback_base(callback_base_from_env())
        .with_reporter(reporter_from_env(environment).await)
        .with_engine(engine))
}

/// Who reports terminal results back to GitHub ([`crate::report`]):
/// - the App itself when this process holds its credentials (`astrolift serve`);
/// - else, with `ASTROLIFT_REPORT_QUEUE_URL` set (the trigger function on the stack), the
///   relay to the sync worker, which holds them;
/// - else nobody (a report is logged as not made).
///
/// Credentials that are named but do not load are logged rather than stopping a start that
/// does not need them.
pub async fn reporter_from_env(environment: &Environment) -> Option<Arc<dyn ResultReporter>> {
    match environment.github_app().await {
        Ok(github) => return Some(Arc::new(GitHubReporter::new(github))),
        Err(ConfigError::Missing(_) | ConfigError::Credentials(_)) => {}
        Err(error) => {
            tracing::warn!(%error, "no GitHub App client: terminal results are relayed or not reported");
        }
    }
    let url = std::env::var("ASTROLIFT_REPORT_QUEUE_URL").ok()?;
    if url.trim().is_empty() {
        return None;
    }
    let client = aws_sdk_sqs::Client::new(environment.aws_config().await);
    Some(Arc::new(SqsReportRelay::new(client, url)))
}

/// `ASTROLIFT_CALLBACK_BASE_URL`: the public URL of `serve` or of the
/// trigger function; unset or empty, dispatches have no callback route.
pub fn callback_base_from_env() -> Option<String> {
    std::env::var("ASTROLIFT_CALLBACK_BASE_URL")
        .ok()
        .filter(|base| !base.trim().is_empty())
}

/// Where dispatch messages go: the SQS queue of `ASTROLIFT_DISPATCH_QUEUE_URL`
/// (first draining what a local outbox still holds), else the durable local
/// outbox ([`astrolift_dispatch::outbox`], bounded by `ASTROLIFT_OUTBOX_MAX`):
/// the one inside a `sqlite:` state store ([`StateOutbox`]: a dispatch and
/// its message are one transaction), or the file `ASTROLIFT_OUTBOX` names
/// (or `.astrolift/outbox.db` with a state store that keeps none). `aws`: the
/// environment whose SDK configuration to reuse (loaded from the environment when
/// `None`); either is loaded only for the queue, so a start on local stores reads no
/// AWS configuration. The one choice `serve`, the functions and `astrolift dispatch`
/// share.
pub async fn dispatch_queue_from_env(
    state: &Arc<dyn StateStore>,
    aws: Option<&Environment>,
) -> Result<Arc<dyn DispatchQueue>, TriggerSetupError> {
    let location = StateLocation::parse(&state.location())
        .map_err(|error| TriggerSetupError::Config(error.to_string()))?;
    let file = outbox_file(&location);
    // The outbox file a `sqlite:` state had beside it before the outbox moved inside.
    let earlier = Some(outbox_path(&location)).filter(|path| file.is_none() && path.exists());
    match std::env::var("ASTROLIFT_DISPATCH_QUEUE_URL") {
        Ok(url) if !url.trim().is_empty() => {
            let client = match aws {
                Some(environment) => aws_sdk_sqs::Client::new(environment.aws_config().await),
                None => aws_sdk_sqs::Client::new(&astrolift_store::load_sdk_config().await),
            };
            let queue = SqsDispatchQueue::new(client, url);
            if let Some(outbox) = StateOutbox::of(state.clone(), u64::MAX) {
                report_drained(outbox.path(), outbox.drain_to(&queue).await);
            }
            if let Some(path) = file.filter(|path| path.exists()).or(earlier) {
                drain_outbox_file(&path, &queue).await;
            }
            Ok(Arc::new(queue))
        }
        _ => {
            let max = outbox_max_from_env().map_err(TriggerSetupError::Config)?;
            let outbox: Arc<dyn DispatchQueue> = match file {
                Some(path) => open_outbox_file(&path, max)
                    .await
                    .map_err(|e| TriggerSetupError::Config(e.to_string()))?,
                None => {
                    let outbox = StateOutbox::of(state.clone(), max).ok_or_else(|| {
                        TriggerSetupError::Config("the state store keeps no outbox".to_owned())
                    })?;
                    if let Some(path) = earlier {
                        drain_outbox_file(&path, &outbox).await;
                    }
                    Arc::new(outbox)
                }
            };
            tracing::info!(
                outbox = ?outbox.destination(),
                max,
                "ASTROLIFT_DISPATCH_QUEUE_URL is not set: dispatches go to the local outbox"
            );
            Ok(outbox)
        }
    }
}

/// The outbox file for the state store at `location`, when the outbox is a
/// file: `ASTROLIFT_OUTBOX` when set; else `.astrolift/outbox.db` for a
/// state store that keeps no outbox; `None` for a `sqlite:` state store,
/// whose outbox is inside it.
fn outbox_file(location: &StateLocation) -> Option<PathBuf> {
    let named = std::env::var("ASTROLIFT_OUTBOX").is_ok_and(|path| !path.trim().is_empty());
    (named || !matches!(location, StateLocation::Sqlite(_))).then(|| outbox_path(location))
}

/// Sends what an earlier run left in the outbox file at `path` to `queue`
/// (the SQS queue, or the outbox inside a `sqlite:` state that replaced the file
/// beside it); a failure is logged and leaves the rest for the next start.
#[cfg(feature = "sqlite")]
async fn drain_outbox_file(path: &std::path::Path, queue: &dyn DispatchQueue) {
    let drained = match SqliteOutbox::open(path, u64::MAX).await {
        Ok(outbox) => outbox.drain_to(queue).await,
        Err(error) => Err(error),
    };
    report_drained(path, drained);
}

/// Without SQLite (the Lambda functions) no outbox file is read: says so, once.
#[cfg(not(feature = "sqlite"))]
async fn drain_outbox_file(path: &std::path::Path, _queue: &dyn DispatchQueue) {
    report_drained(path, Err(no_outbox_file(path)));
}

/// The outbox in a file of its own, bounded to `max`.
#[cfg(feature = "sqlite")]
async fn open_outbox_file(
    path: &std::path::Path,
    max: u64,
) -> Result<Arc<dyn DispatchQueue>, DispatchError> {
    Ok(Arc::new(SqliteOutbox::open(path, max).await?))
}

/// Without SQLite there is no outbox file: a dispatch queue must be configured.
#[cfg(not(feature = "sqlite"))]
async fn open_outbox_file(
    path: &std::path::Path,
    _max: u64,
) -> Result<Arc<dyn DispatchQueue>, DispatchError> {
    Err(no_outbox_file(path))
}

#[cfg(not(feature = "sqlite"))]
fn no_outbox_file(path: &std::path::Path) -> DispatchError {
    DispatchError::Queue(format!(
        "this build keeps no local outbox ({}): set ASTROLIFT_DISPATCH_QUEUE_URL",
        path.display()
    ))
}

fn report_drained(path: &std::path::Path, drained: Result<u64, DispatchError>) {
    match drained {
        Ok(0) => {}
        Ok(sent) => tracing::info!(sent, outbox = %path.display(), "drained the local outbox"),
        Err(error) => {
            tracing::warn!(%error, outbox = %path.display(), "cannot drain the local outbox")
        }
    }
}

/// Why the trigger service cannot be built from the environment.
#[derive(Debug, thiserror::Error)]
pub enum TriggerSetupError {
    #[error("cannot set up trigger secrets: {0}")]
    Secrets(#[from] SecretError),
    #[error("{0}")]
    Config(String),
}

/// The resolver `ASTROLIFT_SECRETS` selects, holding the App's webhook
/// secrets for `kind = "github"` (`resolver_from_env` only sees them as plain
/// variables, which the stack does not set).
async fn resolver_with_github(
    github: WebhookSecrets,
) -> Result<Box<dyn SecretResolver>, SecretError> {
    match std::env::var("ASTROLIFT_SECRETS").as_deref() {
        Err(_) | Ok("" | "env") => Ok(Box::new(
            EnvSecretResolver::new().with_github_webhook(github),
        )),
        Ok("aws") => Ok(Box::new(
            AwsSecretResolver::from_env()
                .await
                .with_github_webhook(github),
        )),
        Ok(other) => Err(SecretError::UnknownBackend(other.to_owned())),
    }
}

/// One `POST /triggers/{trigger_id}`, for `serve` and the trigger function
/// alike: the service's answer, counted as a `Dispatches` metric when it
/// dispatched (202) and as `Failures` when it refused or failed (4xx, 5xx).
pub async fn handle(
    service: &TriggerService,
    function: &str,
    trigger_id: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Answer {
    let answer = service.handle(trigger_id, headers, body).await;
    match answer.status {
        202 => telemetry::count(function, Metric::Dispatches, 1),
        400.. => telemetry::count(function, Metric::Failures, 1),
        _ => {}
    }
    answer
}

impl EventFanOut for TriggerService {
    /// Every matching GitHub-sourced binding is evaluated and dispatched under
    /// the delivery id; counted are new dispatches (202) and bindings that
    /// could not run now (503).
    fn fan_out<'a>(&'a self, delivery: GithubDelivery<'a>) -> BoxFuture<'a, FanOutSummary> {
        Box::pin(async move {
            let results = self.fan_out_github(&delivery).await;
            for result in &results {
                tracing::info!(
                    trigger_id = %result.trigger_id,
                    status = result.response.status,
                    "github-sourced trigger"
                );
            }
            let count = |status: u16| {
                results
                    .iter()
                    .filter(|r| r.response.status == status)
                    .count()
            };
            FanOutSummary {
                dispatched: count(202),
                unavailable: count(503),
            }
        })
    }
}
