//! Workflows and workflow runs (docs/reference.md, "Workflows"): registered
//! definitions per repository, runs, and each stage's terminal report.
//!
//! Kept apart from the agent change sets: a workflow is registered by its own
//! conditional write after the agents of its sync (it names agents, never the
//! other way round), and a run advances by conditional updates of one record.
//!
//! # Exactly-once advancement
//! A stage's terminal report is stored put-if-absent ([`WorkflowStore::put_stage_result`]
//! returns whichever report was stored first), and the run record carries a
//! `version` that every update must match ([`WorkflowStore::update_workflow_run`]).
//! Two concurrent reports of one stage therefore agree on one result, and only
//! one of them moves the run; the other re-reads it, finds the stage done and
//! changes nothing.
//!
//! # Attempts
//! A stage that is dispatched again (its `retries`, docs/reference.md §5.6) keeps one
//! report per attempt: the key of a report is its stage and attempt
//! ([`result_key`]), so an attempt's report never answers for the attempt after it,
//! and a timeout that reconcile records for an attempt races its runtime's report
//! under the same put-if-absent: whichever is stored first is the attempt's end.
//!
//! # Running runs
//! [`WorkflowStore::list_running_workflow_runs`] is what reconcile reads to time
//! stages out and dispatch due retries: on SQLite a partial index over the runs whose
//! status is `running`, on DynamoDB a sparse index that a run is in only while it is
//! `running` (the run's own item carries the index key, so it leaves with the write
//! that ends it).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::model::UnixSeconds;
use crate::{BoxFuture, StoreResult};

/// A registered workflow: the newest definition of `name` in `repository`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowRecord {
    pub repository: String,
    /// The workflow's `name`, unique in the repository.
    pub name: String,
    /// Repo-relative path of its file.
    pub path: String,
    pub status: WorkflowStatus,
    /// `sha256:<hex>` of `definition`.
    pub content_hash: String,
    /// The validated workflow as canonical JSON (the manifest crate's
    /// `workflow::Workflow`): what a run executes.
    pub definition: String,
    /// The commit it was registered from.
    pub commit: String,
    pub updated_at: UnixSeconds,
    /// Optimistic lock: 1 for the first write, +1 for each later one.
    pub version: u64,
    /// On the Step Functions engine: the state machine of `content_hash` (docs/reference.md
    /// §5.6). `None` on the state-store engine, and until the sync after registration made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_machine_arn: Option<String>,
    /// State machines of earlier contents still to delete once none of their executions
    /// runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retired_state_machines: Vec<String>,
}

/// Whether a registered workflow can be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowStatus {
    /// Its file is in the repository.
    Active,
    /// Its file is gone: kept, not startable.
    Orphaned,
}

impl WorkflowStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkflowStatus::Active => "active",
            WorkflowStatus::Orphaned => "orphaned",
        }
    }
}

/// One run of a workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowRun {
    /// Random, minted when the run starts.
    pub id: String,
    pub repository: String,
    /// The workflow's name.
    pub workflow: String,
    /// The definition the run executes (fixed at start, whatever later syncs do).
    pub content_hash: String,
    pub definition: String,
    /// The run's input as JSON text (`null` for none).
    pub input: String,
    pub status: RunStatus,
    /// Every stage of the definition, by name.
    pub stages: BTreeMap<String, StageState>,
    pub created_at: UnixSeconds,
    pub updated_at: UnixSeconds,
    /// Optimistic lock: 1 when created, +1 for each update.
    pub version: u64,
}

/// A run's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Succeeded,
    /// A stage failed or was cancelled; nothing after it is dispatched.
    Failed,
    /// `workflow-run cancel`: its waiting stages were skipped, nothing more is dispatched.
    Cancelled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        self != RunStatus::Running
    }
}

/// Where one stage of a run is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageState {
    pub status: StageStatus,
    /// Its attempt: 1, then +1 each time it is dispatched again (docs/reference.md §5.6,
    /// `retries`); a waiting stage's is the attempt it dispatches next. A record written
    /// before attempts were counted reads as 1.
    #[serde(default = "first_attempt")]
    pub attempt: u32,
    /// The dispatch that runs the attempt, once dispatched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_id: Option<String>,
    /// When the attempt was dispatched: where its `timeout` and `heartbeat` count from
    /// (`None` on a record written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatched_at: Option<UnixSeconds>,
    /// When a waiting stage's next attempt is due (set while it waits for a retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<UnixSeconds>,
    /// Why its last attempt ended, when its runtime did not report it: its payload did not
    /// evaluate, its agent could not be dispatched, or it timed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// On the Step Functions engine: the task token of the attempt, which its callbacks
    /// answer (docs/reference.md §5.6). Never logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_token: Option<String>,
}

impl StageState {
    /// A stage that has not been dispatched yet: `waiting`, at its first attempt.
    pub fn waiting() -> Self {
        StageState {
            status: StageStatus::Waiting,
            attempt: 1,
            dispatch_id: None,
            dispatched_at: None,
            retry_at: None,
            error: None,
            task_token: None,
        }
    }
}

/// The attempt of a record written before attempts were counted.
fn first_attempt() -> u32 {
    1
}

/// A stage's status in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    /// Its needs are not all done yet.
    Waiting,
    /// Its dispatch is recorded; no terminal report yet.
    Dispatched,
    Succeeded,
    Failed,
    Cancelled,
    /// Never dispatched because the run failed or was cancelled first.
    Skipped,
}

impl StageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StageStatus::Waiting => "waiting",
            StageStatus::Dispatched => "dispatched",
            StageStatus::Succeeded => "succeeded",
            StageStatus::Failed => "failed",
            StageStatus::Cancelled => "cancelled",
            StageStatus::Skipped => "skipped",
        }
    }

    /// Succeeded, failed, cancelled or skipped.
    pub fn is_terminal(self) -> bool {
        !matches!(self, StageStatus::Waiting | StageStatus::Dispatched)
    }
}

/// The terminal report of one attempt of a stage, stored once per (run, stage, attempt).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageResult {
    pub run_id: String,
    pub stage: String,
    /// The attempt it ends (1 on a report written before attempts were counted).
    #[serde(default = "first_attempt")]
    pub attempt: u32,
    /// `Succeeded`, `Failed` or `Cancelled`.
    pub status: StageStatus,
    /// The callback's `result` as JSON text (at most 256 KiB, checked by the
    /// callback route); `None` when it sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Why the attempt ended without its runtime's report (reconcile timed it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub reported_at: UnixSeconds,
}

/// Where a report is kept within its run: the stage's name for attempt 1 (as reports were
/// kept before attempts were counted), `<stage>#<attempt>` for a later one. A stage name
/// is a slug, so it never holds `#`.
pub(crate) fn result_key(stage: &str, attempt: u32) -> String {
    match attempt {
        0 | 1 => stage.to_owned(),
        later => format!("{stage}#{later}"),
    }
}

/// `reports` in the order of [`WorkflowStore::list_stage_results`]: by stage, then attempt.
pub(crate) fn by_stage_and_attempt(reports: &mut [StageResult]) {
    reports.sort_by(|a, b| (&a.stage, a.attempt).cmp(&(&b.stage, b.attempt)));
}

/// Workflow state. Every [`super::StateStore`] offers it through
/// [`super::StateStore::workflows`].
///
/// Contract (the contract suite runs it on SQLite and DynamoDB):
/// - `put_workflow` and `update_workflow_run` are conditional on the stored
///   `version` (`None`: must not exist) and fail with `Conflict` otherwise;
/// - `create_workflow_run` fails with `Conflict` when the id exists;
/// - `put_stage_result` stores the first report of a stage's attempt and returns
///   the stored one, whatever later reports of that attempt say;
/// - `list_running_workflow_runs` lists the runs whose stored status is `running`
///   (on DynamoDB from an index: a run may still be listed for a moment after it
///   ended, so a caller re-reads a run before it acts on it);
/// - the other reads see the last write.
pub trait WorkflowStore: Send + Sync {
    /// The workflows of a repository (every status), ordered by name.
    fn list_workflows<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<WorkflowRecord>>>;
    /// One workflow.
    fn get_workflow<'a>(
        &'a self,
        repository: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<WorkflowRecord>>>;
    /// Creates (`expected_version: None`) or replaces a workflow whose stored
    /// version is `expected_version`; `record.version` is the new version.
    fn put_workflow<'a>(
        &'a self,
        record: &'a WorkflowRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// Stores a new run; `Conflict` if its id exists.
    fn create_workflow_run<'a>(&'a self, run: &'a WorkflowRun) -> BoxFuture<'a, StoreResult<()>>;
    /// A run by id.
    fn get_workflow_run<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<WorkflowRun>>>;
    /// Replaces a run whose stored version is `expected_version`;
    /// `run.version` must be `expected_version + 1`.
    fn update_workflow_run<'a>(
        &'a self,
        run: &'a WorkflowRun,
        expected_version: u64,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// The runs whose status is `running`, by id: what reconcile times out and retries.
    fn list_running_workflow_runs(&self) -> BoxFuture<'_, StoreResult<Vec<WorkflowRun>>>;

    /// Stores the terminal report of a stage's attempt unless one is stored; returns the
    /// stored one.
    fn put_stage_result<'a>(
        &'a self,
        result: &'a StageResult,
    ) -> BoxFuture<'a, StoreResult<StageResult>>;
    /// Every stored stage report of a run (each attempt's), by stage name, then attempt.
    fn list_stage_results<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<StageResult>>>;
}
