//! The `sync` Lambda function: a thin shell over [`astrolift_bot::SyncRunner`],
//! fed by the SQS FIFO sync queue with partial batch responses
//! (`ReportBatchItemFailures`), and by the report queue: a record there is a
//! [`astrolift_bot::ReportJob`], the trigger function's relay of a terminal
//! result to report to GitHub with the App's key (best effort: always
//! acknowledged).
//!
//! For each record, in order: parse the body as a [`astrolift_bot::SyncJob`] → run it →
//! report it in `batchItemFailures` only when running it again may succeed:
//! - a body that does not parse never will: logged and acknowledged (deleted);
//! - a non-retryable error (a refused tarball, a 4xx from GitHub) is
//!   acknowledged: the runner already completed the check run as `failure`;
//! - a retryable error (GitHub or a store down) is reported, and SQS delivers
//!   the record again (up to `maxReceiveCount`, then the DLQ).
//!
//! Order: one message group is one repository, and its jobs must run in
//! order. Records are processed one at a time, and once a record of a group
//! is reported, every later record of that group is reported too, without
//! running (AWS: with FIFO queues, "stop processing messages after the first
//! failure and return all failed and unprocessed messages"). Per group is
//! enough: other groups (repositories) are independent, so their records
//! still run rather than waste a delivery.
//!
//! Time: a record is started only while at least [`RUN_MARGIN`] is left
//! before the invocation's deadline; the rest are reported without running,
//! so that a timeout never makes Lambda redeliver the whole batch.
//!
//! Reconcile: the template's EventBridge schedule invokes the function with
//! [`RECONCILE_EVENT`] (`{"astrolift":"reconcile"}`, not an SQS batch; [`Invocation`] tells
//! them apart). It runs one pass of `astrolift_bot::reconcile`, queueing what it finds on
//! the sync queue (SQS deduplicates by the job's delivery id), ending the workflow stages
//! past their deadlines and dispatching the due retries on the dispatch queue, and answers
//! the pass's totals (docs/reference.md §4, "astrolift reconcile").
//!
//! The runner is built once per container ([`SyncFunction::from_env`]).
#![forbid(unsafe_code)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use astrolift_bot::config::{ConfigError, Environment};
use astrolift_bot::layers::LayerPackager;
use astrolift_bot::reconcile::{NoProgress, ReconcileOptions, ReconcileReport, reconcile};
use astrolift_bot::{JobQueue, QueuedJob, SyncRunner};
use astrolift_manifest::Limits;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};

/// The `Function` dimension of this function's metrics.
pub const FUNCTION: &str = "sync";

/// How long a failed job keeps trying to complete its check run as `failure`.
pub const FAIL_RUN_PATIENCE: Duration = Duration::from_secs(60);

/// The least time left before the deadline to start another job.
pub const RUN_MARGIN: Duration = Duration::from_secs(120);

/// The event the template's schedule sends (docs/reference.md §4, "astrolift reconcile").
pub const RECONCILE_EVENT: &str = r#"{"astrolift":"reconcile"}"#;

/// What the function was invoked with.
#[derive(Debug, Clone)]
pub enum Invocation {
    /// A batch of the sync queue (or the report queue).
    Batch(SqsEvent),
    /// The reconcile schedule's [`RECONCILE_EVENT`].
    Reconcile,
}

impl Invocation {
    /// An object whose `astrolift` is `reconcile` is the schedule's; anything else must be
    /// an SQS batch.
    pub fn parse(event: serde_json::Value) -> Result<Self, serde_json::Error> {
        if event.get("astrolift").and_then(|v| v.as_str()) == Some("reconcile") {
            return Ok(Invocation::Reconcile);
        }
        serde_json::from_value(event).map(Invocation::Batch)
    }
}

/// Why a reconcile invocation failed (Lambda counts it an error; the next schedule tries
/// again).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileFailed {
    #[error("reconcile needs the sync queue: ASTROLIFT_SYNC_QUEUE_URL is not set")]
    NoQueue,
    #[error("reconcile failed: {0}")]
    Pass(#[from] astrolift_bot::JobError),
}

/// The SQS attribute naming a FIFO record's message group.
const MESSAGE_GROUP_ID: &str = "MessageGroupId";

/// Why the container cannot start. Never holds a secret value.
#[derive(Debug, thiserror::Error)]
#[error("the sync function is misconfigured: {0}")]
pub struct ColdStartError(#[from] ConfigError);

/// What became of one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordOutcome {
    /// Ran to a completed check run.
    Done,
    /// Acknowledged without success: a body that is not a job, or an error
    /// that a retry would repeat.
    Dropped,
    /// Reported as a batch item failure, to be delivered again.
    Retry,
    /// Reported without running: an earlier record of its group failed,
    /// or too little time is left.
    Held,
}

/// The sync function, built once per container.
#[derive(Debug, Clone)]
pub struct SyncFunction {
    runner: Arc<SyncRunner>,
}

impl SyncFunction {
    pub fn new(runner: SyncRunner) -> Self {
        Self {
            runner: Arc::new(runner),
        }
    }

    /// The cold start: stores and the GitHub App (its private key read from
    /// Secrets Manager once).
    pub async fn from_env(environment: &Environment) -> Result<Self, ColdStartError> {
        let stores = environment.stores().await?;
        let github = environment.github_app().await?;
        // A push to a skill source queues its dependents' re-syncs on the sync queue.
        let jobs = environment.sync_queue().await;
        if jobs.is_none() {
            tracing::warn!(
                "ASTROLIFT_SYNC_QUEUE_URL is not set: pushes to skill sources re-sync no dependents"
            );
        }
        Ok(Self::new(SyncRunner {
            stores,
            github,
            limits: Limits::DEFAULT,
            function: FUNCTION,
            fail_run_patience: FAIL_RUN_PATIENCE,
            progress: Default::default(),
            jobs: jobs.map(|queue| Arc::new(queue) as Arc<dyn JobQueue>),
            dispatches: None,
            workflow_engine: environment.workflow_engine().await?.map(Arc::new),
        }))
    }

    pub fn runner(&self) -> &SyncRunner {
        &self.runner
    }

    /// The schedule's invocation: one reconcile pass, its jobs sent to the sync queue and,
    /// on the state-store engine, the workflow stages' due retries to the dispatch queue
    /// (left alone, with a warning, when that queue cannot be set up).
    pub async fn reconcile(&self) -> Result<ReconcileReport, ReconcileFailed> {
        let queue = self.runner.jobs.as_ref().ok_or(ReconcileFailed::NoQueue)?;
        let runner = &self.runner;
        let state = runner.stores.state.as_ref();
        let options = ReconcileOptions::default();
        let stages = self.state_engine_stages().await;
        let dispatcher = stages.as_ref().map(|s| s.stage_dispatcher(state));
        let report = reconcile(
            state,
            &runner.github,
            queue.as_ref(),
            dispatcher.as_ref().map(|d| d as _),
            options,
            &NoProgress,
        )
        .await?;
        Ok(report)
    }

    /// What reconcile dispatches workflow stages with: none on the Step Functions engine,
    /// whose executions time out and retry in Step Functions (docs/reference.md §5.6).
    async fn state_engine_stages(&self) -> Option<LayerPackager> {
        if self.runner.workflow_engine.is_some() {
            return None;
        }
        match LayerPackager::from_env(&self.runner.stores, None).await {
            Ok(stages) => Some(stages),
            Err(error) => {
                tracing::warn!(%error, "workflow stages are not timed out or retried in this pass");
                None
            }
        }
    }

    /// One batch: its records in order, the ones to deliver again reported.
    /// `deadline` is the invocation's (none: no time limit).
    pub async fn handle(&self, event: SqsEvent, deadline: Option<SystemTime>) -> SqsBatchResponse {
        let mut response = SqsBatchResponse::default();
        let mut failed_groups: HashSet<String> = HashSet::new();
        for record in &event.records {
            let group = record.attributes.get(MESSAGE_GROUP_ID);
            let outcome = if group.is_some_and(|g| failed_groups.contains(g)) {
                tracing::warn!(
                    message_id = record.message_id.as_deref(),
                    group = group.map(String::as_str),
                    "held back: an earlier job of this repository failed"
                );
                RecordOutcome::Held
            } else if deadline.is_some_and(too_late) {
                tracing::warn!(
                    message_id = record.message_id.as_deref(),
                    "held back: too little time left before the deadline"
                );
                RecordOutcome::Held
            } else {
                self.process(record).await
            };
            if matches!(outcome, RecordOutcome::Retry | RecordOutcome::Held) {
                if let Some(group) = group {
                    failed_groups.insert(group.clone());
                }
                report(&mut response, record);
            }
        }
        response
    }

    async fn process(&self, record: &SqsMessage) -> RecordOutcome {
        let message_id = record.message_id.as_deref();
        let body = record.body.as_deref().unwrap_or_default();
        let job = match QueuedJob::parse(body) {
            Ok(QueuedJob::Sync(job)) => job,
            Ok(QueuedJob::Report(report)) => {
                self.runner.report(&report).await;
                return RecordOutcome::Done;
            }
            Err(error) => {
                // Never parses, so never retried; the body is not logged (it
                // could be anything), its size is.
                tracing::error!(
                    message_id,
                    bytes = body.len(),
                    error = %error,
                    "dropped: the message is not a sync job"
                );
                return RecordOutcome::Dropped;
            }
        };
        match self.runner.perform(&job).await {
            Ok(_) => RecordOutcome::Done,
            // The runner has logged the error and completed the check run.
            Err(error) if error.is_retryable() => RecordOutcome::Retry,
            Err(_) => RecordOutcome::Dropped,
        }
    }
}

fn too_late(deadline: SystemTime) -> bool {
    !matches!(deadline.duration_since(SystemTime::now()), Ok(left) if left >= RUN_MARGIN)
}

/// Reports `record` as a batch item failure. A record without a message id
/// cannot be named; reporting an empty id makes Lambda retry the whole
/// batch, which is the safe side.
fn report(response: &mut SqsBatchResponse, record: &SqsMessage) {
    response.add_failure(record.message_id.clone().unwrap_or_default());
}
