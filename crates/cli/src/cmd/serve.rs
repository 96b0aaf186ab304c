//! `astrolift serve`: the bot on one machine. The same ingress and runner as
//! the Lambda functions, with an in-process queue that keeps each
//! repository's jobs in order, on the configured stores.
//!
//! Routes: `astrolift_bot::routes`, all of them (`POST /github/webhook`,
//! `POST /triggers/{id}`, `POST /callbacks/{task_id}`, `GET /healthz`, 404
//! for any other path), run here in hyper's HTTP/1 connection loop; what
//! `serve` adds is capacity: the connection bounds, the header-read timeout
//! and a body reader ([`BudgetedBody`]) that charges bodies to the body
//! budget and bounds their read time.
//! The queue is durable (`astrolift_bot::durable`): each job is recorded in the state
//! store before the webhook is answered `202`, resumed at the next start when the process
//! stops first, and recorded as failed (the dead letter, `astrolift jobs`) when its retries
//! give up. SIGTERM or Ctrl-C stops accepting, lets the running jobs finish for up to
//! `--shutdown-grace`, and logs how many jobs wait for the next start.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use astrolift_bot::config::Environment;
use astrolift_bot::durable::{Attempt, DeadLetters, DurableJobQueue, DurableOptions};
use astrolift_bot::layers::LayerPackager;
use astrolift_bot::routes::{self, BodyOf, ReadBody};
use astrolift_bot::triggers::service_from_env;
use astrolift_bot::{Answer, Ingress, JobQueue, LateJobQueue, SyncRunner};
use astrolift_manifest::Limits;
use astrolift_sync::Stores;
use astrolift_trigger::TriggerService;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::json;

use super::serve_limits::{AddressSlots, BodyBudget, BodyCharge};
use super::stores::StoreArgs;
use crate::output::outln;

#[derive(Debug, clap::Args)]
#[command(after_help = SERVE_ENVIRONMENT)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,

    #[command(flatten)]
    pub capacity: CapacityArgs,

    #[command(flatten)]
    pub stores: StoreArgs,
}

/// What `serve --help` says of the environment it starts with (docs/reference.md §13).
const SERVE_ENVIRONMENT: &str = "Environment:
  GITHUB_APP_ID                     the App id (required)
  GITHUB_APP_PRIVATE_KEY[_FILE]     the App's private key, PEM, or a file holding it (required)
  GITHUB_WEBHOOK_SECRET             the webhook secret (required); GITHUB_WEBHOOK_SECRET_PREVIOUS during a rotation
  ASTROLIFT_CALLBACK_BASE_URL       this server's base URL, for the callback URL dispatches carry
  ASTROLIFT_DISPATCH_QUEUE_URL      the SQS dispatch queue (unset: the local outbox)
See docs/reference.md §13 for every variable.";

/// Capacity bounds (docs/reference.md §3, docs/operations.md). Each default is one of the
/// constants below, which the code that applies it uses too.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct CapacityArgs {
    /// Bytes of request bodies held at once, across all requests, before
    /// their signature is checked; a request that does not fit is answered
    /// 503 with `Retry-After`.
    #[arg(
        long,
        env = "ASTROLIFT_SERVE_BODY_BUDGET",
        default_value_t = DEFAULT_BODY_BUDGET
    )]
    pub body_budget: u64,

    /// Connections open at once from one client address; more are closed
    /// at once. 0: no cap (behind a reverse proxy, every client is the proxy).
    #[arg(
        long,
        env = "ASTROLIFT_SERVE_CONNECTIONS_PER_ADDRESS",
        default_value_t = DEFAULT_CONNECTIONS_PER_ADDRESS
    )]
    pub connections_per_address: usize,

    /// Connections served at once; more wait in the kernel's accept queue.
    #[arg(
        long,
        env = "ASTROLIFT_SERVE_CONNECTIONS",
        default_value_t = DEFAULT_CONNECTIONS,
        value_parser = super::at_least_one
    )]
    pub connections: usize,

    /// Sync jobs run at once (each takes a core while it validates and
    /// packages); more wait in their repository's queue.
    #[arg(
        long,
        env = "ASTROLIFT_SERVE_SYNCS",
        default_value_t = DEFAULT_SYNCS,
        value_parser = super::at_least_one
    )]
    pub syncs: usize,

    /// On SIGTERM or Ctrl-C, how long running sync jobs may take to finish
    /// (`20`, `20s`, `2m`); jobs still running or queued then wait, recorded,
    /// for the next start.
    #[arg(
        long,
        env = "ASTROLIFT_SERVE_SHUTDOWN_GRACE",
        default_value = DEFAULT_SHUTDOWN_GRACE,
        value_parser = parse_grace
    )]
    pub shutdown_grace: Duration,

    /// How often every registered ref is reconciled with GitHub's head (`10m`, `1h`, `90s`;
    /// `0` turns it off): a push whose delivery was missed is synced by the next pass
    /// (docs/reference.md §4, "astrolift reconcile"). The first pass runs one interval after
    /// start.
    #[arg(
        long,
        env = "ASTROLIFT_SERVE_RECONCILE_INTERVAL",
        default_value = DEFAULT_RECONCILE_INTERVAL,
        value_parser = parse_interval
    )]
    pub reconcile_interval: Duration,
}

/// `--body-budget`'s default: 256 MiB.
pub const DEFAULT_BODY_BUDGET: u64 = 256 * astrolift_manifest::limits::MIB;
/// `--connections-per-address`'s default.
pub const DEFAULT_CONNECTIONS_PER_ADDRESS: usize = 64;
/// `--connections`'s default (at least 1).
pub const DEFAULT_CONNECTIONS: usize = 1024;
/// `--syncs`'s default (at least 1).
pub const DEFAULT_SYNCS: usize = 2;
/// `--shutdown-grace`'s default, as [`parse_grace`] reads it.
pub const DEFAULT_SHUTDOWN_GRACE: &str = "20s";
/// `--reconcile-interval`'s default, as [`parse_interval`] reads it.
pub const DEFAULT_RECONCILE_INTERVAL: &str = "10m";

/// Longest `--reconcile-interval`: a day.
pub const MAX_RECONCILE_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// `N`/`Ns` seconds, `Nm` minutes or `Nh` hours, at most [`MAX_RECONCILE_INTERVAL`]; `0`
/// is off.
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    parse_duration(text, true, MAX_RECONCILE_INTERVAL).map_err(|too_long| match too_long {
        true => format!("`{text}` is longer than a day"),
        false => format!("`{text}` is not a duration such as 0, 90s, 10m or 1h"),
    })
}

/// Longest `--shutdown-grace`: an hour (a sync runs for minutes at most).
pub const MAX_SHUTDOWN_GRACE: Duration = Duration::from_secs(3600);

/// `N` or `Ns` seconds, or `Nm` minutes, at most [`MAX_SHUTDOWN_GRACE`].
pub fn parse_grace(text: &str) -> Result<Duration, String> {
    parse_duration(text, false, MAX_SHUTDOWN_GRACE).map_err(|too_long| match too_long {
        true => format!("`{text}` is longer than an hour"),
        false => format!("`{text}` is not a duration such as 20, 20s or 2m"),
    })
}

/// `N`/`Ns` seconds or `Nm` minutes (and `Nh` hours when `hours`), at most `max`; `Err(true)`
/// past `max`, `Err(false)` for what is no such duration.
fn parse_duration(text: &str, hours: bool, max: Duration) -> Result<Duration, bool> {
    let (digits, unit) = match (
        text.strip_suffix('h').filter(|_| hours),
        text.strip_suffix('m'),
    ) {
        (Some(hours), _) => (hours, 3600),
        (None, Some(minutes)) => (minutes, 60),
        (None, None) => (text.strip_suffix('s').unwrap_or(text), 1),
    };
    let duration = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .map(Duration::from_secs)
        .ok_or(false)?;
    match duration > max {
        true => Err(true),
        false => Ok(duration),
    }
}

/// The parts the routes are built from, and the queue to drain.
#[derive(Debug)]
struct App {
    ingress: Arc<Ingress>,
    triggers: Arc<TriggerService>,
    limits: Limits,
    bodies: Arc<BodyBudget>,
    jobs: Arc<DurableJobQueue>,
}

/// Blocking threads besides the syncs': the SQLite state store and the
/// dispatch outbox each serialize on one connection, so more threads than
/// this would only wait on its lock. Tokio's default (512) would let a burst
/// of requests start hundreds of threads; past the cap, blocking work queues.
const BLOCKING_THREADS_BESIDES_SYNCS: usize = 16;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // A sync holds a blocking thread and waits on store work that needs
        // another: the syncs' share comes on top, so they can never take
        // every thread.
        .max_blocking_threads(
            args.capacity
                .syncs
                .saturating_add(BLOCKING_THREADS_BESIDES_SYNCS),
        )
        .build()
        .context("cannot start the async runtime")?;
    let served = runtime.block_on(serve(args));
    // A sync cut short by the grace time may still hold a blocking thread: it is
    // recorded as running, and the next start runs it again.
    runtime.shutdown_timeout(Duration::from_millis(100));
    served?;
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
    connections: DEFAULT_CONNECTIONS,
};

/// What a client over the body budget is told to wait before trying again.
const RETRY_AFTER_SECONDS: u64 = 5;

async fn serve(args: Args) -> anyhow::Result<()> {
    let app = build(&args).await?;
    let jobs = Arc::clone(&app.jobs);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr().context("no local address")?;
    // Before the line below: a signal sent as soon as it is read is caught, not fatal.
    let signals = ShutdownSignals::install();
    // Tests and scripts read this line to learn the port of `--listen 127.0.0.1:0`.
    // A server keeps serving when no one reads its stdout any more.
    if let Err(error) = outln!("astrolift serve listening on http://{address}") {
        tracing::warn!(%error, "cannot print the listening address");
    }
    tracing::info!(%address, "listening");
    let router = router(app);
    let limits = ConnectionLimits {
        connections: args.capacity.connections,
        ..CONNECTION_LIMITS
    };
    let per_address = AddressSlots::new(args.capacity.connections_per_address);
    tokio::select! {
        result = accept_loop(listener, router, limits, per_address) => result,
        () = signals.received() => {
            let grace = args.capacity.shutdown_grace;
            tracing::info!(grace_seconds = grace.as_secs(), "shutting down: no new jobs; waiting for the running ones");
            let drained = jobs.drain(grace).await;
            let verb = if drained.waiting == 1 { "waits" } else { "wait" };
            tracing::info!(
                cut_short = drained.running,
                waiting = drained.waiting,
                "stopped: {} {verb} for the next start",
                astrolift_cli::render::plural(drained.waiting, "job")
            );
            Ok(())
        }
    }
}

/// hyper's HTTP/1 connection loop rather than `axum::serve`, which has no
/// header-read timeout: a client that trickles its headers is dropped after
/// `header_read`, at most `connections` are served at once, and a client
/// address over its cap is closed at once (so that one host cannot hold
/// every slot).
async fn accept_loop(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ConnectionLimits,
    per_address: Arc<AddressSlots>,
) -> anyhow::Result<()> {
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.connections));
    loop {
        let permit = Arc::clone(&permits)
            .acquire_owned()
            .await
            .context("the connection limiter closed")?;
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: wait, do not spin.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(slot) = per_address.admit(peer.ip()) else {
            tracing::debug!(peer = %peer.ip(), "connection refused: too many from this address");
            drop(stream);
            continue;
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
            drop(slot);
            drop(permit);
        });
    }
}

async fn build(args: &Args) -> anyhow::Result<App> {
    let environment = Environment::new();
    let stores = args.stores.stores().await?;
    let secrets = environment
        .webhook_secrets()
        .await
        .context("serve needs the App's webhook secret")?;
    let github = environment
        .github_app()
        .await
        .context("serve needs the GitHub App's id and private key")?;
    let limits = Limits::DEFAULT;
    // The runner queues the re-syncs of a skill source's dependents on the queue that runs it.
    let dependents = Arc::new(LateJobQueue::default());
    let runner = Arc::new(SyncRunner {
        stores: stores.clone(),
        github: Arc::clone(&github),
        limits,
        function: "serve",
        fail_run_patience: Duration::from_secs(60),
        progress: Default::default(),
        jobs: Some(dependents.clone()),
        dispatches: None,
        workflow_engine: None,
    });
    let (jobs, resumed) = DurableJobQueue::start(
        stores.state.clone(),
        attempt(Arc::clone(&runner)),
        Some(dead_letters(runner)),
        DurableOptions::serve(args.capacity.syncs),
    )
    .await
    .context("cannot resume the queued jobs")?;
    if resumed > 0 {
        tracing::info!(resumed, "resumed the jobs queued before the last stop");
    }
    dependents.set(Arc::clone(&jobs) as Arc<dyn JobQueue>);
    if !args.capacity.reconcile_interval.is_zero() {
        let queue = Arc::clone(&jobs) as Arc<dyn JobQueue>;
        let every = args.capacity.reconcile_interval;
        let stages = LayerPackager::from_env(&stores, Some(&environment))
            .await
            .context("cannot set up the dispatch queue of workflow stages")?;
        tokio::spawn(reconcile_every(
            stores.clone(),
            github,
            queue,
            stages,
            every,
        ));
    }
    let triggers = Arc::new(
        service_from_env(&environment, stores.state.clone(), stores.blobs.clone())
            .await
            .context("cannot set up trigger secrets")?,
    );
    let ingress = Ingress {
        state: stores.state.clone(),
        secrets,
        jobs: Arc::clone(&jobs) as Arc<dyn JobQueue>,
        triggers: Some(triggers.clone()),
        limits,
        function: "serve",
    };
    Ok(App {
        ingress: Arc::new(ingress),
        triggers,
        limits,
        bodies: BodyBudget::new(args.capacity.body_budget),
        jobs,
    })
}

/// Reconciles every `interval` (the first time one interval after start), queueing on
/// `serve`'s durable queue and dispatching the workflow stages' due retries through
/// `stages`; each pass logs `reconcile finished` with its totals (docs/operations.md, "Is
/// reconcile running?"). A pass that fails is logged and the next one tries again.
async fn reconcile_every(
    stores: Stores,
    github: Arc<astrolift_forge::github::GitHubApp>,
    queue: Arc<dyn JobQueue>,
    stages: LayerPackager,
    interval: Duration,
) {
    use astrolift_bot::reconcile::{NoProgress, ReconcileOptions, reconcile};
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let dispatcher = stages.stage_dispatcher(stores.state.as_ref());
        let pass = reconcile(
            stores.state.as_ref(),
            &github,
            queue.as_ref(),
            Some(&dispatcher),
            ReconcileOptions::default(),
            &NoProgress,
        )
        .await;
        if let Err(error) = pass {
            tracing::warn!(%error, "reconcile failed; the next pass tries again");
        }
    }
}

/// A job the queue gave up on: its check run concludes `failure` with the reason and a
/// **Re-run** button (best effort: the runner logs a failure to say so).
fn dead_letters(runner: Arc<SyncRunner>) -> DeadLetters {
    Arc::new(move |job, record, error| {
        let runner = Arc::clone(&runner);
        Box::pin(async move { runner.report_dead_letter(&job, &record, &error).await })
    })
}

/// One attempt of a job: the runner logs how it went; the durable queue retries a
/// retryable failure ([`astrolift_bot::retry::RetryPolicy::SERVE`]) and records the job as
/// failed when it gives up.
fn attempt(runner: Arc<SyncRunner>) -> Attempt {
    Arc::new(move |job| {
        let runner = Arc::clone(&runner);
        // The queue writes the delivery's state with the job's (`astrolift_bot::durable`).
        Box::pin(async move { runner.perform_unmarked(&job).await })
    })
}

/// The App's one route table (`astrolift_bot::routes`), every part of it,
/// with bodies read against the body budget.
fn router(app: App) -> Router {
    let reader = BudgetedBody {
        limits: app.limits,
        bodies: app.bodies,
    };
    routes::webhook(app.ingress, reader.clone())
        .merge(routes::triggers(app.triggers, "serve", reader))
        .merge(routes::healthz())
        .merge(routes::no_such_route())
}

/// `serve`'s body reader: each route's limit from `Limits`, read by
/// [`read_body`] against the body budget and the body-read time.
#[derive(Debug, Clone)]
struct BudgetedBody {
    limits: Limits,
    bodies: Arc<BodyBudget>,
}

impl ReadBody for BudgetedBody {
    /// The charge is held until the request is answered: its bytes live until then.
    type Held = BodyCharge;

    async fn read(
        &self,
        body: Body,
        headers: &HeaderMap,
        of: BodyOf,
    ) -> Result<(Bytes, BodyCharge), Response> {
        let limit = match of {
            BodyOf::Webhook => self.limits.webhook_body,
            BodyOf::Trigger => self.limits.trigger_body,
            BodyOf::Callback => astrolift_dispatch::callback::callback_body_limit(&self.limits),
        };
        read_body(body, headers, limit, &self.bodies).await
    }
}

/// Reads at most `limit` bytes within the body-read time, charged to the
/// body budget: a declared `Content-Length` before reading, a chunked body
/// frame by frame. A longer body is a 413 without reading the rest, a slower
/// one a 408, one that does not fit the budget a 503 with `Retry-After`.
/// The bytes are collected once, into the buffer ingress receives.
async fn read_body(
    body: Body,
    headers: &HeaderMap,
    limit: u64,
    budget: &Arc<BodyBudget>,
) -> Result<(Bytes, BodyCharge), Response> {
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(too_large(limit));
    }
    let Some(charge) = budget.charge(declared.unwrap_or(0)) else {
        return Err(busy());
    };
    let read = collect_body(body, declared, limit, charge);
    match tokio::time::timeout(CONNECTION_LIMITS.body_read, read).await {
        Ok(Ok(read)) => Ok(read),
        Ok(Err(BodyRefusal::TooLarge)) => Err(too_large(limit)),
        Ok(Err(BodyRefusal::OverBudget)) => Err(busy()),
        Ok(Err(BodyRefusal::Broken)) => Err(respond(Answer::new(
            400,
            json!({ "error": "the request body could not be read" }),
        ))),
        Err(_) => Err(respond(Answer::new(
            408,
            json!({ "error": "the request body was not received in time" }),
        ))),
    }
}

enum BodyRefusal {
    TooLarge,
    OverBudget,
    Broken,
}

/// Collects the frames of `body`. A declared length is read into one buffer
/// of that size (already charged); a chunked body keeps its frames as they
/// come, each charged on arrival, and is joined once at the end (the join's
/// copy is charged too, while both exist).
async fn collect_body(
    mut body: Body,
    declared: Option<u64>,
    limit: u64,
    mut charge: BodyCharge,
) -> Result<(Bytes, BodyCharge), BodyRefusal> {
    use http_body_util::BodyExt as _;
    let capacity = declared.and_then(|d| usize::try_from(d).ok()).unwrap_or(0);
    let mut buffer = bytes::BytesMut::with_capacity(capacity);
    let mut frames: Vec<Bytes> = Vec::new();
    let mut received: u64 = 0;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| BodyRefusal::Broken)?.into_data() else {
            continue; // trailers
        };
        received += data.len() as u64;
        if received > limit {
            return Err(BodyRefusal::TooLarge);
        }
        if declared.is_some() {
            // hyper never yields more than the declared length.
            buffer.extend_from_slice(&data);
        } else {
            if !charge.grow(data.len() as u64) {
                return Err(BodyRefusal::OverBudget);
            }
            frames.push(data);
        }
    }
    if declared.is_some() {
        return Ok((buffer.freeze(), charge));
    }
    if frames.len() <= 1 {
        return Ok((frames.pop().unwrap_or_default(), charge));
    }
    if !charge.grow(received) {
        return Err(BodyRefusal::OverBudget);
    }
    let mut joined = bytes::BytesMut::with_capacity(usize::try_from(received).unwrap_or(0));
    for frame in frames {
        joined.extend_from_slice(&frame);
    }
    charge.shrink(received);
    Ok((joined.freeze(), charge))
}

fn too_large(limit: u64) -> Response {
    respond(Answer::new(
        413,
        json!({ "error": format!("body is larger than {limit} bytes") }),
    ))
}

/// 503 with `Retry-After`: the body budget is spent for now.
fn busy() -> Response {
    let mut response = respond(Answer::new(
        503,
        json!({ "error": "too many request bodies in flight; retry later" }),
    ));
    response.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from(RETRY_AFTER_SECONDS),
    );
    response
}

fn respond(answer: Answer) -> Response {
    answer.into_response()
}

/// Ctrl-C (SIGINT) and SIGTERM (what a service manager sends), caught from
/// [`ShutdownSignals::install`] on.
struct ShutdownSignals {
    interrupt: Option<tokio::signal::unix::Signal>,
    terminate: Option<tokio::signal::unix::Signal>,
}

impl ShutdownSignals {
    fn install() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Self {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }

    /// Waits for either signal and logs which one came; the caller drains the jobs.
    async fn received(mut self) {
        async fn next(signal: Option<&mut tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        let name = tokio::select! {
            () = next(self.interrupt.as_mut()) => "SIGINT",
            () = next(self.terminate.as_mut()) => "SIGTERM",
        };
        tracing::info!(signal = name, "{name} received");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shutdown_grace_is_seconds_or_minutes_up_to_an_hour() {
        assert_eq!(parse_grace("20"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_grace("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_grace("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_grace("0"), Ok(Duration::ZERO));
        // At the limit, and just past it.
        assert_eq!(parse_grace("3600"), Ok(MAX_SHUTDOWN_GRACE));
        assert_eq!(parse_grace("60m"), Ok(MAX_SHUTDOWN_GRACE));
        assert!(parse_grace("3601").is_err());
        assert!(parse_grace("61m").is_err());
        for bad in ["", "s", "-1", "1h", "1.5s", "99999999999999999999m"] {
            assert!(parse_grace(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_reconcile_interval_is_seconds_minutes_or_hours_up_to_a_day() {
        assert_eq!(parse_interval("0"), Ok(Duration::ZERO));
        assert_eq!(parse_interval("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_interval("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_interval("1h"), Ok(Duration::from_secs(3600)));
        // At the limit, and just past it.
        assert_eq!(parse_interval("24h"), Ok(MAX_RECONCILE_INTERVAL));
        assert_eq!(parse_interval("86400"), Ok(MAX_RECONCILE_INTERVAL));
        assert!(parse_interval("86401").is_err());
        assert!(parse_interval("1441m").is_err());
        for bad in ["", "h", "-1", "1d", "1.5h", "99999999999999999999h"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }
}
