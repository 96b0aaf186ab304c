//! The run of a dispatch, as renders and callbacks see it (docs/reference.md §12):
//! one [`DispatchTask`] per dispatch, keyed by its task id and found by its dispatch id.
//!
//! - `record_dispatch` creates it `queued` in the same conditional write as the dispatch
//!   record (SQLite: one transaction; DynamoDB: one `TransactWriteItems`), so every
//!   recorded dispatch can be rendered and called back.
//! - [`record_render`] keeps the sha256 of the cluster key the latest render minted (never
//!   the key): a key from an earlier render no longer matches.
//! - [`report_task`] moves it: `running` any number of times before a terminal status (each
//!   time kept as `running_at`), then `succeeded`, `failed` or `cancelled` once, with its
//!   result and time. A second terminal report is [`ReportOutcome::AlreadyFinished`] and
//!   changes nothing.
//!
//! # Exactly once
//! Every change is a read followed by [`TaskStore::update_task`], conditional on the
//! `version` read; a lost race re-reads and decides again (at most [`MAX_ATTEMPTS`] times).
//! Two concurrent terminal reports therefore read the same version, one write wins, and the
//! other re-reads a finished task.

use serde::{Deserialize, Serialize};

use super::model::{Dispatch, UnixSeconds};
use crate::{BoxFuture, StoreError, StoreResult};

/// Tries of a read-decide-write before a lost race is reported as `Unavailable`.
pub const MAX_ATTEMPTS: usize = 16;

/// Where a dispatch's run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Recorded and handed to the queue (or the local outbox); no callback yet.
    Queued,
    /// The runtime reported `running`.
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::Succeeded => "succeeded",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// The status of `text` (`queued`, `running`, `succeeded`, `failed`, `cancelled`).
    pub fn parse(text: &str) -> Option<Self> {
        [
            TaskStatus::Queued,
            TaskStatus::Running,
            TaskStatus::Succeeded,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }

    /// Succeeded, failed or cancelled: recorded once.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Succeeded | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// The run of one dispatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DispatchTask {
    /// The task's GUID (`ASTROLIFT_TASK_ID`, the callback route's `{task_id}`).
    pub task_id: String,
    pub dispatch_id: String,
    /// The dispatch record's key ([`super::DispatchStore::get_dispatch`]).
    pub idempotency_key: String,
    pub status: TaskStatus,
    /// sha256 (hex) of the `ASTROLIFT_CLUSTER_KEY` of the latest render; `None` before the
    /// first render with a callback route. The key itself is never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_key_sha256: Option<String>,
    /// Renders so far.
    #[serde(default)]
    pub renders: u64,
    /// The terminal report's `result` as JSON text; `None` when it sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// When the terminal status was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<UnixSeconds>,
    /// When the latest `running` report was recorded: where a workflow stage's
    /// `heartbeat` counts from (docs/reference.md §5.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_at: Option<UnixSeconds>,
    pub updated_at: UnixSeconds,
    /// Optimistic lock: 1 when created, +1 for each update.
    pub version: u64,
}

impl DispatchTask {
    /// The task a new dispatch starts with: `queued`, never rendered.
    pub fn queued(dispatch: &Dispatch) -> Self {
        DispatchTask {
            task_id: dispatch.task_id.clone(),
            dispatch_id: dispatch.id.clone(),
            idempotency_key: dispatch.idempotency_key.clone(),
            status: TaskStatus::Queued,
            cluster_key_sha256: None,
            renders: 0,
            result: None,
            finished_at: None,
            running_at: None,
            updated_at: dispatch.created_at,
            version: 1,
        }
    }
}

/// One callback's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskReport {
    /// `Running` or a terminal status (`Queued` is refused as `Invalid`).
    pub status: TaskStatus,
    /// The result as JSON text, kept with a terminal status only.
    pub result: Option<String>,
}

/// What [`report_task`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportOutcome {
    /// Written; the task as stored.
    Recorded(DispatchTask),
    /// The task had a terminal status already; nothing written.
    AlreadyFinished(DispatchTask),
}

/// Dispatch tasks. Every [`super::StateStore`] offers them through
/// [`super::StateStore::tasks`]; tasks are created by `record_dispatch`.
///
/// Contract (the contract suite runs it on SQLite and DynamoDB):
/// - `update_task` is conditional on the stored `version` and fails with `Conflict`
///   otherwise (a task that does not exist included);
/// - reads see the last write.
pub trait TaskStore: Send + Sync {
    /// A task by its task id.
    fn get_task<'a>(&'a self, task_id: &'a str)
    -> BoxFuture<'a, StoreResult<Option<DispatchTask>>>;
    /// The task of a dispatch, by the dispatch's id.
    fn get_dispatch_task<'a>(
        &'a self,
        dispatch_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<DispatchTask>>>;
    /// Replaces a task whose stored version is `expected_version`; `task.version` must be
    /// `expected_version + 1`.
    fn update_task<'a>(
        &'a self,
        task: &'a DispatchTask,
        expected_version: u64,
    ) -> BoxFuture<'a, StoreResult<()>>;
}

/// Reads the task, decides (`Ok(next)`: write it; `Err(answer)`: answer without writing),
/// writes conditionally and answers `written(stored)`; a lost race decides again.
async fn change_task<T>(
    store: &dyn TaskStore,
    task_id: &str,
    decide: impl Fn(DispatchTask) -> StoreResult<Result<DispatchTask, T>>,
    written: impl Fn(DispatchTask) -> T,
) -> StoreResult<T> {
    for _ in 0..MAX_ATTEMPTS {
        let task = store
            .get_task(task_id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("task {task_id}")))?;
        let expected = task.version;
        let mut next = match decide(task)? {
            Ok(next) => next,
            Err(answer) => return Ok(answer),
        };
        next.version = expected + 1;
        match store.update_task(&next, expected).await {
            Ok(()) => return Ok(written(next)),
            Err(StoreError::Conflict(_)) => continue,
            Err(other) => return Err(other),
        }
    }
    Err(StoreError::Unavailable(format!(
        "task {task_id} changed {MAX_ATTEMPTS} times while being updated"
    )))
}

/// Keeps `key_sha256` as the cluster key hash of the latest render of `task_id` (the one
/// before is dead from now on). `NotFound` for an unknown task; `Conflict` for a finished
/// one (nothing is left to run).
pub async fn record_render(
    store: &dyn TaskStore,
    task_id: &str,
    key_sha256: Option<&str>,
    at: UnixSeconds,
) -> StoreResult<DispatchTask> {
    let decide = |task: DispatchTask| {
        if task.status.is_terminal() {
            return Err(StoreError::Conflict(format!(
                "task {task_id} is {} already",
                task.status.as_str()
            )));
        }
        let mut next = task;
        next.cluster_key_sha256 = key_sha256.map(str::to_owned);
        next.renders += 1;
        next.updated_at = at;
        Ok(Ok(next))
    };
    change_task(store, task_id, decide, |stored| stored).await
}

/// Records one callback report of `task_id` (see the module docs). `NotFound` for an
/// unknown task; `Invalid` for a `queued` report.
pub async fn report_task(
    store: &dyn TaskStore,
    task_id: &str,
    report: &TaskReport,
    at: UnixSeconds,
) -> StoreResult<ReportOutcome> {
    if report.status == TaskStatus::Queued {
        return Err(StoreError::Invalid(
            "a callback reports running, succeeded, failed or cancelled".into(),
        ));
    }
    let decide = |task: DispatchTask| {
        if task.status.is_terminal() {
            return Ok(Err(ReportOutcome::AlreadyFinished(task)));
        }
        let mut next = task;
        next.status = report.status;
        next.updated_at = at;
        if report.status.is_terminal() {
            next.result = report.result.clone();
            next.finished_at = Some(at);
        } else {
            next.running_at = Some(at);
        }
        Ok(Ok(next))
    };
    change_task(store, task_id, decide, ReportOutcome::Recorded).await
}
