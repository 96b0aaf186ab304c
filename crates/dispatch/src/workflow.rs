//! Workflow runs on the state-store engine (docs/reference.md §5.6): start a
//! run of a registered workflow, move it on when a stage reports a terminal
//! status, and cancel it.
//!
//! # The state of a run is a function of its stage reports
//! Each advance reads the run and every stored stage report, folds the
//! reports into the stages, and then:
//! - a stage's report of its current attempt ends that attempt; one that did
//!   not succeed (failed, cancelled, timed out) makes the stage wait for its
//!   next attempt while its `retries` allow one, after 30 s doubling each
//!   attempt (the Step Functions engine's `Retry`, [`crate::state_machine`]),
//!   else fails it; a report of an earlier attempt changes nothing;
//! - a failed or cancelled stage fails the run: every waiting stage becomes
//!   `skipped` and nothing more is dispatched;
//! - otherwise every waiting stage whose needs all succeeded (and whose retry,
//!   if it waits for one, is due) is dispatched, its payload evaluated (in the
//!   jq sandbox) over `{input, stages: {NAME: {result}}}` (the stages that
//!   succeeded so far);
//! - when every stage succeeded, the run succeeded.
//!
//! A run that is no longer running (failed, succeeded, [`cancel_run`]) dispatches
//! nothing more; a late report still records its stage's status. Reconcile ends
//! the attempts past their `timeout` or `heartbeat` and dispatches the retries that
//! came due ([`crate::stage_deadlines`]).
//!
//! The new run is written only if it differs, conditional on the version
//! read; a lost race re-reads and folds again. A stage report is stored
//! put-if-absent, so a duplicate or concurrent report of one stage agrees
//! with the first and advances the run exactly once. Dispatches are recorded
//! before the run says `dispatched`, by a [`StageDispatcher`] that must be
//! idempotent on [`StageDispatch::idempotency_key`]: a racing advancer (or a
//! retry after a crash) records the same dispatch again and gets the first
//! one's id. The key names the attempt ([`stage_key`]), so a retry is a new
//! dispatch and never a duplicate of the attempt before it, while a
//! redelivered order of one attempt still records one dispatch.
//!
//! A payload that does not evaluate (a jq error, a non-object output) and an
//! agent that cannot be dispatched (not registered, not active) end their
//! stage's attempt as a failure, with the reason in the stage's `error`.

use std::collections::BTreeMap;
use std::sync::Arc;

use astrolift_manifest::Limits;
use astrolift_manifest::workflow::{Stage, Workflow};
use astrolift_store::state::{
    Agent, AgentKey, AgentStatus, Dispatch, EnvSpec, RunStatus, StageResult, StageState,
    StageStatus, StateStore, UnixSeconds, WorkflowRecord, WorkflowRun, WorkflowStatus,
};
use astrolift_store::{BoxFuture, StoreError};
use serde_json::{Value, json};

use crate::content::env_spec_parts;
use crate::content::{ContentError, ContentSource};
use crate::dispatch::{
    DispatchError, DispatchQueue, DispatchRequest, Origin, new_dispatch_id, record,
    record_and_queue,
};
use crate::message::Source;
use crate::state_machine::RETRY_INTERVAL_SECONDS;
use astrolift_jq::sandbox::{Job, SandboxedProgram, WorkerResult, run_in_worker};

/// How often an advance re-reads a run whose version moved under it before
/// giving up with [`WorkflowError::Contention`] (each retry means another
/// advancer made progress, so this bounds work, not correctness).
const MAX_ATTEMPTS: usize = 16;

/// How a stage's dispatch key starts: `workflow-run:<run id>:<stage>[:<attempt>]`.
const STAGE_KEY_PREFIX: &str = "workflow-run:";

/// Why a workflow could not be started or advanced.
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    #[error("no workflow `{name}` is registered for {repository}")]
    UnknownWorkflow { repository: String, name: String },
    #[error("workflow `{0}` is orphaned (its file is gone): only an active workflow can start")]
    Orphaned(String),
    #[error("the registered definition of workflow `{0}` does not parse: {1}")]
    Definition(String, String),
    #[error("no workflow run `{0}`")]
    UnknownRun(String),
    #[error("workflow run `{run}` has no stage `{stage}`")]
    UnknownStage { run: String, stage: String },
    #[error("`{0}` is not a terminal status: report succeeded, failed or cancelled")]
    NotTerminal(&'static str),
    #[error("workflow run `{run}` is {status}: only a running run can be cancelled")]
    Finished { run: String, status: &'static str },
    #[error("the input must be a JSON object or null")]
    Input,
    #[error("workflow run `{0}` kept changing under this advance; retry")]
    Contention(String),
    #[error("every jq evaluation slot is taken; retry")]
    Busy,
    #[error("cannot mint a run id: {0}")]
    Random(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Dispatch(#[from] DispatchError),
}

impl WorkflowError {
    /// True when the same call may succeed later.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            WorkflowError::Contention(_)
                | WorkflowError::Busy
                | WorkflowError::Store(StoreError::Unavailable(_) | StoreError::Conflict(_))
        )
    }
}

/// One stage to dispatch: what the dispatch record and message need.
#[derive(Debug, Clone, PartialEq)]
pub struct StageDispatch {
    pub run_id: String,
    pub workflow: String,
    pub repository: String,
    pub stage: String,
    /// The agent as the stage names it, and its manifest.
    pub agent: String,
    pub manifest: String,
    /// The stage's skill references, to add after the agent's own skills
    /// (the dispatch's ordered `skill_refs`).
    pub skill_refs: Vec<String>,
    /// The evaluated payload; `None` for the empty payload.
    pub payload: Option<Value>,
    pub env_spec: Option<String>,
    /// The stage's attempt this dispatch runs (1, then one more per retry).
    pub attempt: u32,
    /// [`stage_key`] of the run, stage and attempt: recording it twice gives one dispatch.
    pub idempotency_key: String,
}

/// The run, stage and attempt a workflow dispatch runs ([`stage_of_dispatch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageAttempt {
    pub run_id: String,
    pub stage: String,
    pub attempt: u32,
}

/// Why a stage cannot be dispatched: it fails, with this reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// Records (and sends) one stage's dispatch. Must be idempotent on
/// `stage.idempotency_key`: the same key gives the same dispatch id.
pub trait StageDispatcher: Send + Sync {
    /// The dispatch id; `Ok(Err(_))` when the stage cannot run (it fails);
    /// `Err` when the dispatch could not be recorded (nothing is advanced).
    fn dispatch<'a>(
        &'a self,
        stage: &'a StageDispatch,
        now: UnixSeconds,
    ) -> BoxFuture<'a, Result<Result<String, Refusal>, WorkflowError>>;
}

/// What one start or advance did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunProgress {
    /// The run as stored after the call.
    pub run: WorkflowRun,
    /// The stages this call dispatched (with their dispatch ids).
    pub dispatched: Vec<(StageDispatch, String)>,
    /// False when the call changed nothing (a duplicate report).
    pub changed: bool,
}

/// Starts a run of `record` with `input`: stores the run ([`create_run`]), then
/// dispatches every stage without needs.
pub async fn start_run(
    state: &dyn StateStore,
    dispatcher: &dyn StageDispatcher,
    record: &WorkflowRecord,
    input: &Value,
    now: UnixSeconds,
    limits: &Limits,
) -> Result<RunProgress, WorkflowError> {
    let run = create_run(state, record, input, now).await?;
    advance_run(state, dispatcher, &run.id, now, limits).await
}

/// Stores a new run of the active workflow `record` with `input` (an object or null),
/// every stage waiting: what either engine starts from.
pub async fn create_run(
    state: &dyn StateStore,
    record: &WorkflowRecord,
    input: &Value,
    now: UnixSeconds,
) -> Result<WorkflowRun, WorkflowError> {
    if record.status != WorkflowStatus::Active {
        return Err(WorkflowError::Orphaned(record.name.clone()));
    }
    if !(input.is_object() || input.is_null()) {
        return Err(WorkflowError::Input);
    }
    let workflow = definition(&record.name, &record.definition)?;
    let id = new_dispatch_id().map_err(|e| WorkflowError::Random(e.to_string()))?;
    let stages = workflow
        .stages
        .iter()
        .map(|stage| (stage.name.clone(), StageState::waiting()))
        .collect();
    let run = WorkflowRun {
        id: format!("run-{id}"),
        repository: record.repository.clone(),
        workflow: record.name.clone(),
        content_hash: record.content_hash.clone(),
        definition: record.definition.clone(),
        input: input.to_string(),
        status: RunStatus::Running,
        stages,
        created_at: now,
        updated_at: now,
        version: 1,
    };
    state.workflows().create_workflow_run(&run).await?;
    Ok(run)
}

/// Records `stage`'s terminal report for run `run_id`, of the stage's current
/// attempt (`workflow-run report`), and advances the run. A second report of
/// the attempt changes nothing (the first one stands).
#[allow(clippy::too_many_arguments)] // Each is one fact of the report.
pub async fn report_stage(
    state: &dyn StateStore,
    dispatcher: &dyn StageDispatcher,
    run_id: &str,
    stage: &str,
    status: StageStatus,
    result: Option<&Value>,
    now: UnixSeconds,
    limits: &Limits,
) -> Result<RunProgress, WorkflowError> {
    let report = AttemptReport {
        run_id,
        stage,
        attempt: None,
        status,
        result,
    };
    report_attempt(state, dispatcher, &report, now, limits).await
}

/// One terminal report of a stage's attempt.
struct AttemptReport<'a> {
    run_id: &'a str,
    stage: &'a str,
    /// `None`: the stage's current attempt.
    attempt: Option<u32>,
    status: StageStatus,
    result: Option<&'a Value>,
}

/// Stores `report` put-if-absent under its attempt and advances the run: the report of an
/// attempt that has ended already (its first report, or reconcile's timeout) stands.
async fn report_attempt(
    state: &dyn StateStore,
    dispatcher: &dyn StageDispatcher,
    report: &AttemptReport<'_>,
    now: UnixSeconds,
    limits: &Limits,
) -> Result<RunProgress, WorkflowError> {
    let AttemptReport { run_id, stage, .. } = *report;
    if !matches!(
        report.status,
        StageStatus::Succeeded | StageStatus::Failed | StageStatus::Cancelled
    ) {
        return Err(WorkflowError::NotTerminal(report.status.as_str()));
    }
    let run = read_run(state, run_id).await?;
    let slot = run
        .stages
        .get(stage)
        .ok_or_else(|| WorkflowError::UnknownStage {
            run: run_id.to_owned(),
            stage: stage.to_owned(),
        })?;
    let stored = StageResult {
        run_id: run_id.to_owned(),
        stage: stage.to_owned(),
        attempt: report.attempt.unwrap_or(slot.attempt),
        status: report.status,
        result: report.result.map(Value::to_string),
        error: None,
        reported_at: now,
    };
    state.workflows().put_stage_result(&stored).await?;
    advance_run(state, dispatcher, run_id, now, limits).await
}

/// Cancels run `run_id` (`workflow-run cancel`, docs/reference.md §5.6): its waiting
/// stages are skipped and it is `cancelled`, with a conditional write; its dispatched
/// stages run on, and their reports dispatch nothing. Cancelling a cancelled run changes
/// nothing (`changed: false`); a run that succeeded or failed is [`WorkflowError::Finished`].
pub async fn cancel_run(
    state: &dyn StateStore,
    run_id: &str,
    now: UnixSeconds,
) -> Result<RunProgress, WorkflowError> {
    for _ in 0..MAX_ATTEMPTS {
        let run = read_run(state, run_id).await?;
        match run.status {
            RunStatus::Running | RunStatus::Cancelled => {}
            finished => {
                return Err(WorkflowError::Finished {
                    run: run_id.to_owned(),
                    status: finished.as_str(),
                });
            }
        }
        let mut next = run.clone();
        next.status = RunStatus::Cancelled;
        skip_waiting(&mut next);
        if let Some(progress) = write_run(state, run, next, Vec::new(), now).await? {
            return Ok(progress);
        }
    }
    Err(WorkflowError::Contention(run_id.to_owned()))
}

/// The one call the callback route makes after it recorded a dispatch's
/// terminal status: when `dispatch` runs a workflow stage, its report
/// advances the run (`Ok(None)` for any other dispatch).
///
/// The run and stage are read from the dispatch record's source (see
/// [`stage_of_dispatch`]).
#[allow(clippy::too_many_arguments)] // Each is one fact of the callback.
pub async fn advance_workflow_on_callback(
    state: &dyn StateStore,
    dispatcher: &dyn StageDispatcher,
    dispatch: &Dispatch,
    status: StageStatus,
    result: Option<&Value>,
    now: UnixSeconds,
    limits: &Limits,
) -> Result<Option<RunProgress>, WorkflowError> {
    let Some(attempt) = stage_of_dispatch(dispatch) else {
        return Ok(None);
    };
    let report = AttemptReport {
        run_id: &attempt.run_id,
        stage: &attempt.stage,
        attempt: Some(attempt.attempt),
        status,
        result,
    };
    report_attempt(state, dispatcher, &report, now, limits)
        .await
        .map(Some)
}

/// The run, stage and attempt a workflow dispatch runs: the run and stage from
/// the source its record keeps (`workflow:<run>:<stage>`, [`Source::record_id`]),
/// the attempt from its idempotency key ([`stage_key`]).
pub fn stage_of_dispatch(dispatch: &Dispatch) -> Option<StageAttempt> {
    let tail = dispatch.trigger_id.strip_prefix("workflow:")?;
    let (run_id, stage) = tail.split_once(':')?;
    let plain = |s: &str| !s.is_empty() && !s.contains(':');
    if !(plain(run_id) && plain(stage)) {
        return None;
    }
    let first = stage_key(run_id, stage, 1);
    let attempt = match dispatch.idempotency_key.strip_prefix(first.as_str())? {
        "" => 1,
        later => later
            .strip_prefix(':')?
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 1)?,
    };
    Some(StageAttempt {
        run_id: run_id.to_owned(),
        stage: stage.to_owned(),
        attempt,
    })
}

/// The key the dispatch of a stage's attempt is recorded under:
/// `workflow-run:<run id>:<stage>` for attempt 1 (the key of every stage dispatch
/// recorded before attempts were counted), `workflow-run:<run id>:<stage>:<attempt>`
/// for a later one. A manual dispatch's key starts `manual:` ([`crate::dispatch::manual_key`]),
/// so no key a person chooses equals it.
pub fn stage_key(run_id: &str, stage: &str, attempt: u32) -> String {
    match attempt {
        0 | 1 => format!("{STAGE_KEY_PREFIX}{run_id}:{stage}"),
        later => format!("{STAGE_KEY_PREFIX}{run_id}:{stage}:{later}"),
    }
}

/// Folds the stored reports into the run and dispatches what is ready,
/// retrying on a lost conditional write.
pub(crate) async fn advance_run(
    state: &dyn StateStore,
    dispatcher: &dyn StageDispatcher,
    run_id: &str,
    now: UnixSeconds,
    limits: &Limits,
) -> Result<RunProgress, WorkflowError> {
    for _ in 0..MAX_ATTEMPTS {
        let run = read_run(state, run_id).await?;
        let workflow = definition(&run.workflow, &run.definition)?;
        let reports = state.workflows().list_stage_results(run_id).await?;
        let mut next = run.clone();
        fold_reports(&mut next, &workflow, &reports);
        let mut dispatched = Vec::new();
        if !fail_if_stopped(&mut next) {
            let ready = ready_stages(&workflow, &next, now);
            let payloads = evaluate_payloads(&next, &reports, &ready, limits).await?;
            for (stage, payload) in ready.into_iter().zip(payloads) {
                let order = payload.map(|payload| stage_dispatch(&next, stage, payload));
                let outcome = match order {
                    Ok(order) => dispatcher
                        .dispatch(&order, now)
                        .await?
                        .map(|id| (order, id)),
                    Err(refusal) => Err(refusal),
                };
                let slot = next
                    .stages
                    .entry(stage.name.clone())
                    .or_insert_with(StageState::waiting);
                match outcome {
                    Ok((order, id)) => {
                        slot.status = StageStatus::Dispatched;
                        slot.dispatch_id = Some(id.clone());
                        slot.dispatched_at = Some(now);
                        slot.retry_at = None;
                        dispatched.push((order, id));
                    }
                    Err(Refusal(reason)) => {
                        end_attempt(slot, stage, StageStatus::Failed, Some(reason), now);
                    }
                }
            }
            fail_if_stopped(&mut next);
        }
        if next.status == RunStatus::Running
            && next
                .stages
                .values()
                .all(|s| s.status == StageStatus::Succeeded)
        {
            next.status = RunStatus::Succeeded;
        }
        if let Some(progress) = write_run(state, run, next, dispatched, now).await? {
            return Ok(progress);
        }
    }
    Err(WorkflowError::Contention(run_id.to_owned()))
}

/// Writes `next` over `run` when they differ, conditional on `run`'s version: the
/// progress (`changed: false` when nothing differs), or `None` when another writer moved
/// the run first (the caller reads it again).
pub(crate) async fn write_run(
    state: &dyn StateStore,
    run: WorkflowRun,
    mut next: WorkflowRun,
    dispatched: Vec<(StageDispatch, String)>,
    now: UnixSeconds,
) -> Result<Option<RunProgress>, WorkflowError> {
    if next == run {
        return Ok(Some(RunProgress {
            run,
            dispatched,
            changed: false,
        }));
    }
    next.version = run.version.saturating_add(1);
    next.updated_at = now;
    match state
        .workflows()
        .update_workflow_run(&next, run.version)
        .await
    {
        Ok(()) => Ok(Some(RunProgress {
            run: next,
            dispatched,
            changed: true,
        })),
        Err(StoreError::Conflict(_)) => Ok(None),
        Err(other) => Err(other.into()),
    }
}

pub(crate) async fn read_run(
    state: &dyn StateStore,
    run_id: &str,
) -> Result<WorkflowRun, WorkflowError> {
    state
        .workflows()
        .get_workflow_run(run_id)
        .await?
        .ok_or_else(|| WorkflowError::UnknownRun(run_id.to_owned()))
}

pub(crate) fn definition(name: &str, text: &str) -> Result<Workflow, WorkflowError> {
    serde_json::from_str(text)
        .map_err(|e| WorkflowError::Definition(name.to_owned(), e.to_string()))
}

/// Each stored report of a stage's current attempt ends that attempt, unless the stage
/// has a terminal status already (a skipped stage stays skipped): a success, or any
/// report once the run is no longer running, sets the stage's status; any other report
/// goes through [`end_attempt`]. A report of an earlier attempt changes nothing.
fn fold_reports(run: &mut WorkflowRun, workflow: &Workflow, reports: &[StageResult]) {
    let running = run.status == RunStatus::Running;
    for report in reports {
        let Some(slot) = run.stages.get_mut(&report.stage) else {
            continue;
        };
        if slot.status.is_terminal() || slot.attempt != report.attempt {
            continue;
        }
        let stage = workflow.stages.iter().find(|s| s.name == report.stage);
        match stage {
            Some(stage) if running && report.status != StageStatus::Succeeded => {
                let error = report.error.clone();
                end_attempt(slot, stage, report.status, error, report.reported_at);
            }
            _ => {
                slot.status = report.status;
                slot.error = report.error.clone();
                slot.retry_at = None;
            }
        }
    }
}

/// An attempt of `stage` ended `at` other than in success (`status`, with `error` when its
/// runtime did not say why): while the stage's `retries` allow another attempt, it waits
/// for it, due [`retry_delay`] later; else the stage ends with `status`.
fn end_attempt(
    slot: &mut StageState,
    stage: &Stage,
    status: StageStatus,
    error: Option<String>,
    at: UnixSeconds,
) {
    slot.error = error;
    if slot.attempt > u32::from(stage.retries) {
        slot.status = status;
        return;
    }
    slot.retry_at = Some(at.saturating_add(retry_delay(slot.attempt)));
    slot.attempt = slot.attempt.saturating_add(1);
    slot.status = StageStatus::Waiting;
    slot.dispatch_id = None;
    slot.dispatched_at = None;
}

/// Seconds between the end of attempt `ended` and the next one: 30, then doubling
/// (docs/reference.md §5.6), as the Step Functions engine's `Retry` waits
/// ([`RETRY_INTERVAL_SECONDS`], `BackoffRate` 2).
pub fn retry_delay(ended: u32) -> UnixSeconds {
    let doublings = ended.saturating_sub(1).min(16);
    UnixSeconds::from(RETRY_INTERVAL_SECONDS) << doublings
}

/// When a stage failed or was cancelled: the run fails and every waiting
/// stage is skipped. Returns whether the run is over (it failed, or it was
/// over already): nothing more is dispatched.
fn fail_if_stopped(run: &mut WorkflowRun) -> bool {
    if run.status != RunStatus::Running {
        return true;
    }
    let stopped = run
        .stages
        .values()
        .any(|s| matches!(s.status, StageStatus::Failed | StageStatus::Cancelled));
    if stopped {
        run.status = RunStatus::Failed;
        skip_waiting(run);
    }
    stopped
}

/// Every waiting stage of a run that is over becomes `skipped`.
fn skip_waiting(run: &mut WorkflowRun) {
    for stage in run.stages.values_mut() {
        if stage.status == StageStatus::Waiting {
            stage.status = StageStatus::Skipped;
            stage.retry_at = None;
        }
    }
}

/// The waiting stages whose needs all succeeded and whose retry, if they wait for one,
/// is due at `now`, in definition order.
pub fn ready_stages<'w>(
    workflow: &'w Workflow,
    run: &WorkflowRun,
    now: UnixSeconds,
) -> Vec<&'w Stage> {
    let status = |name: &str| run.stages.get(name).map(|s| s.status);
    let due = |name: &str| {
        run.stages
            .get(name)
            .is_some_and(|s| s.retry_at.is_none_or(|at| at <= now))
    };
    workflow
        .stages
        .iter()
        .filter(|stage| status(&stage.name) == Some(StageStatus::Waiting) && due(&stage.name))
        .filter(|stage| {
            stage
                .needs
                .iter()
                .all(|need| status(need) == Some(StageStatus::Succeeded))
        })
        .collect()
}

/// `{input, stages: {NAME: {result}}}`: the run's input and the result of
/// every stage that succeeded so far (`null` when it sent none), as the report of
/// the stage's current attempt says.
pub fn payload_input(run: &WorkflowRun, reports: &[StageResult]) -> Value {
    let input: Value = serde_json::from_str(&run.input).unwrap_or(Value::Null);
    let current = |r: &StageResult| run.stages.get(&r.stage).map(|s| s.attempt) == Some(r.attempt);
    let stages: serde_json::Map<String, Value> = reports
        .iter()
        .filter(|r| r.status == StageStatus::Succeeded && current(r))
        .map(|r| {
            let result = r
                .result
                .as_deref()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or(Value::Null);
            (r.stage.clone(), json!({ "result": result }))
        })
        .collect();
    json!({ "input": input, "stages": stages })
}

/// Each ready stage's payload, in order: evaluated in the jq sandbox in one
/// batch (an object is the payload; `null`, `{}` or nothing is none), or the
/// refusal that fails the stage.
pub(crate) async fn evaluate_payloads(
    run: &WorkflowRun,
    reports: &[StageResult],
    ready: &[&Stage],
    limits: &Limits,
) -> Result<Vec<Result<Option<Value>, Refusal>>, WorkflowError> {
    let mut out: Vec<Result<Option<Value>, Refusal>> = Vec::with_capacity(ready.len());
    let mut jobs = Vec::new();
    let mut job_of = Vec::new();
    for (index, stage) in ready.iter().enumerate() {
        out.push(Ok(None));
        let Some(text) = &stage.payload else {
            continue;
        };
        match SandboxedProgram::compile(text) {
            Ok(program) => {
                jobs.push(Job {
                    program: Arc::new(program),
                    max_outputs: 1,
                    gate: false,
                });
                job_of.push(index);
            }
            Err(error) => {
                out[index] = Err(Refusal(format!(
                    "`payload` does not compile: {}",
                    error.message
                )));
            }
        }
    }
    if jobs.is_empty() {
        return Ok(out);
    }
    let body = payload_input(run, reports).to_string().into_bytes();
    let results = match run_in_worker(body, jobs, &limits.jq()).await {
        WorkerResult::Busy => return Err(WorkflowError::Busy),
        // The run's input and results do not parse back in the evaluator (a result
        // stored before the callback bounded its nesting): the stages that would read
        // them fail with the reason, so the run ends rather than waits for ever.
        WorkerResult::BadJson(reason) => {
            for index in job_of {
                out[index] = Err(Refusal(format!(
                    "the run's input and stage results cannot be evaluated: {reason}"
                )));
            }
            return Ok(out);
        }
        WorkerResult::Ran(results) => results,
    };
    for (index, result) in job_of.into_iter().zip(results) {
        out[index] = match result {
            Ok(outputs) => payload_of(outputs),
            Err(error) => Err(Refusal(format!("`payload` failed: {error}"))),
        };
    }
    Ok(out)
}

/// An object is the payload; `null`, `{}` or nothing is the empty payload.
fn payload_of(outputs: Vec<Value>) -> Result<Option<Value>, Refusal> {
    match outputs.into_iter().next() {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) if map.is_empty() => Ok(None),
        Some(object @ Value::Object(_)) => Ok(Some(object)),
        Some(_) => Err(Refusal("`payload` must yield an object or null".to_owned())),
    }
}

pub(crate) fn stage_dispatch(
    run: &WorkflowRun,
    stage: &Stage,
    payload: Option<Value>,
) -> StageDispatch {
    let attempt = run.stages.get(&stage.name).map_or(1, |s| s.attempt);
    StageDispatch {
        run_id: run.id.clone(),
        workflow: run.workflow.clone(),
        repository: run.repository.clone(),
        stage: stage.name.clone(),
        agent: stage.agent.clone(),
        manifest: stage.manifest.clone(),
        skill_refs: stage.skills.clone(),
        payload,
        env_spec: stage.env_spec.clone(),
        attempt,
        idempotency_key: stage_key(&run.id, &stage.name, attempt),
    }
}

/// The dispatcher of `astrolift dispatch --workflow` and of the callback
/// route: the stage's agent must be registered and active; the dispatch is
/// a message v1 with source `workflow` (run and stage), recorded through
/// [`record`] under the stage's key and published to `queue` when it is new.
/// The stage's skills follow the agent's own in the message's `skill_refs`.
#[derive(Debug, Clone, Copy)]
pub struct RecordingDispatcher<'a> {
    pub state: &'a dyn StateStore,
    pub queue: Option<&'a dyn DispatchQueue>,
    /// The package URL and prompt texts of the stage's agent.
    pub content: &'a dyn ContentSource,
    /// `ASTROLIFT_CALLBACK_BASE_URL`, when a callback route is configured.
    pub callback_base: Option<&'a str>,
}

impl StageDispatcher for RecordingDispatcher<'_> {
    fn dispatch<'a>(
        &'a self,
        stage: &'a StageDispatch,
        now: UnixSeconds,
    ) -> BoxFuture<'a, Result<Result<String, Refusal>, WorkflowError>> {
        Box::pin(async move {
            let agent = match active_agent(self.state, stage).await? {
                Ok(agent) => agent,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let env_spec = match stage_env_spec(self.state, stage, &agent).await? {
                Ok(spec) => spec,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let cannot = |e: ContentError| {
                Ok(Err(Refusal(format!(
                    "cannot dispatch agent `{}`: {e}",
                    stage.agent
                ))))
            };
            let mut content = match self.content.content(&agent, now).await {
                Ok(content) => content,
                Err(e) => return cannot(e),
            };
            let layers = crate::layers::attach_layers(
                self.state,
                self.content,
                &agent,
                &mut content,
                false,
                now,
            );
            if let Err(e) = layers.await {
                return cannot(e);
            }
            let parts = env_spec_parts(self.content, self.state, env_spec.as_ref(), now);
            let (env_spec, config) = match parts.await {
                Ok(parts) => parts,
                Err(e) => return cannot(e),
            };
            content
                .snapshot
                .skills
                .extend(stage.skill_refs.iter().cloned().map(Value::String));
            let request = DispatchRequest {
                source: Source::Workflow {
                    workflow_run: stage.run_id.clone(),
                    stage: stage.stage.clone(),
                },
                repository: &agent.repository,
                manifest_path: &agent.manifest_path,
                snapshot_hash: &agent.snapshot_hash,
                idempotency_key: Some(stage.idempotency_key.clone()),
                payload: crate::prompts::non_empty_payload(stage.payload.as_ref()),
                origin: &Origin::TRUSTED,
                env_spec,
                config: config.as_ref(),
                content: &content,
                callback_base: self.callback_base,
                now,
            };
            let recorded = match self.queue {
                Some(queue) => record_and_queue(self.state, queue, &request).await?,
                None => record(self.state, &request).await?,
            };
            Ok(Ok(recorded.id))
        })
    }
}

/// The stage's agent, if it is registered and active.
async fn active_agent(
    state: &dyn StateStore,
    stage: &StageDispatch,
) -> Result<Result<Agent, Refusal>, WorkflowError> {
    let key = AgentKey::new(&stage.repository, &stage.manifest);
    Ok(match state.get_agent(&key).await? {
        Some(agent) if agent.status == AgentStatus::Active => Ok(agent),
        Some(agent) => Err(Refusal(format!(
            "agent `{}` is {}: only an active agent can be dispatched",
            stage.agent,
            agent.status.as_str()
        ))),
        None => Err(Refusal(format!(
            "agent `{}` ({}) is not registered",
            stage.agent, stage.manifest
        ))),
    })
}

/// The stage's env spec, if it names one that the agent's project may use.
async fn stage_env_spec(
    state: &dyn StateStore,
    stage: &StageDispatch,
    agent: &Agent,
) -> Result<Result<Option<EnvSpec>, Refusal>, WorkflowError> {
    let Some(name) = stage.env_spec.as_deref() else {
        return Ok(Ok(None));
    };
    Ok(
        match astrolift_store::state::env_spec_for_project(state, name, &agent.project_id).await? {
            Ok(spec) => Ok(Some(spec)),
            Err(refusal) => Err(Refusal(format!(
                "env spec `{name}` of stage `{}`: {refusal}",
                stage.stage
            ))),
        },
    )
}

/// The run's stages by name with their status words, for printing.
pub fn stage_statuses(run: &WorkflowRun) -> BTreeMap<&str, &'static str> {
    run.stages
        .iter()
        .map(|(name, state)| (name.as_str(), state.status.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatch(trigger_id: &str, idempotency_key: &str) -> Dispatch {
        let record = json!({
            "id": "d-1", "idempotency_key": idempotency_key, "trigger_id": trigger_id,
            "repository": "octo/flows", "manifest_path": "astrolift.toml",
            "snapshot_hash": "s", "created_at": 1, "status": "pending",
        });
        serde_json::from_value(record).expect("a dispatch record")
    }

    fn attempt(run_id: &str, stage: &str, attempt: u32) -> Option<StageAttempt> {
        Some(StageAttempt {
            run_id: run_id.to_owned(),
            stage: stage.to_owned(),
            attempt,
        })
    }

    #[test]
    fn the_key_names_the_attempt_and_attempt_1_keeps_the_key_it_had() {
        assert_eq!(
            stage_key("run-1", "collect", 1),
            "workflow-run:run-1:collect"
        );
        assert_eq!(
            stage_key("run-1", "collect", 2),
            "workflow-run:run-1:collect:2"
        );
        for n in 1..=6 {
            let record = dispatch("workflow:run-1:collect", &stage_key("run-1", "collect", n));
            assert_eq!(stage_of_dispatch(&record), attempt("run-1", "collect", n));
        }
    }

    #[test]
    fn a_dispatch_that_is_no_stage_attempt_of_ours_is_none() {
        for (trigger, key) in [
            ("manual", "workflow-run:run-1:collect"),
            ("workflow:run-1", "workflow-run:run-1"),
            ("workflow:run-1:collect", "workflow-run:run-1:report"),
            ("workflow:run-1:collect", "workflow-run:run-1:collect:1"),
            ("workflow:run-1:collect", "workflow-run:run-1:collect:x"),
            ("workflow:run-1:collect", "workflow-run:run-1:collect-2"),
            ("workflow:run-1:a:b", "workflow-run:run-1:a:b"),
        ] {
            assert_eq!(stage_of_dispatch(&dispatch(trigger, key)), None, "{key}");
        }
    }

    #[test]
    fn retries_wait_30_seconds_doubling() {
        let waits: Vec<UnixSeconds> = (1..=5).map(retry_delay).collect();
        assert_eq!(waits, [30, 60, 120, 240, 480]);
    }

    fn retried(retries: u8) -> Stage {
        Stage {
            name: "collect".to_owned(),
            retries,
            ..Stage::default()
        }
    }

    #[test]
    fn an_attempt_with_retries_left_waits_for_the_next_one() {
        let stage = retried(2);
        let mut slot = StageState {
            status: StageStatus::Dispatched,
            dispatch_id: Some("d-1".to_owned()),
            dispatched_at: Some(90),
            ..StageState::waiting()
        };
        end_attempt(&mut slot, &stage, StageStatus::Failed, None, 100);
        let waiting = StageState {
            attempt: 2,
            retry_at: Some(130),
            ..StageState::waiting()
        };
        assert_eq!(slot, waiting);
        slot.status = StageStatus::Dispatched;
        end_attempt(&mut slot, &stage, StageStatus::Cancelled, None, 200);
        assert_eq!(
            (slot.status, slot.attempt, slot.retry_at),
            (StageStatus::Waiting, 3, Some(260))
        );
        slot.status = StageStatus::Dispatched;
        let reason = Some("attempt 3 timed out".to_owned());
        end_attempt(&mut slot, &stage, StageStatus::Failed, reason.clone(), 300);
        assert_eq!((slot.status, slot.attempt), (StageStatus::Failed, 3));
        assert_eq!(slot.error, reason);
    }

    fn run_of(stages: &[(&str, StageState)]) -> WorkflowRun {
        WorkflowRun {
            id: "run-1".to_owned(),
            repository: "octo/flows".to_owned(),
            workflow: "triage".to_owned(),
            content_hash: "sha256:x".to_owned(),
            definition: "{}".to_owned(),
            input: "null".to_owned(),
            status: RunStatus::Running,
            stages: stages
                .iter()
                .map(|(name, state)| ((*name).to_owned(), state.clone()))
                .collect(),
            created_at: 1,
            updated_at: 1,
            version: 1,
        }
    }

    fn result(attempt: u32, status: StageStatus) -> StageResult {
        StageResult {
            run_id: "run-1".to_owned(),
            stage: "collect".to_owned(),
            attempt,
            status,
            result: None,
            error: None,
            reported_at: 100,
        }
    }

    fn one_stage(retries: u8) -> Workflow {
        Workflow {
            path: "workflows/triage.toml".to_owned(),
            name: "triage".to_owned(),
            description: None,
            stages: vec![retried(retries)],
        }
    }

    #[test]
    fn only_the_current_attempts_report_moves_a_stage() {
        let at_two = StageState {
            status: StageStatus::Dispatched,
            attempt: 2,
            ..StageState::waiting()
        };
        let mut run = run_of(&[("collect", at_two.clone())]);
        let late = [result(1, StageStatus::Succeeded)];
        fold_reports(&mut run, &one_stage(1), &late);
        assert_eq!(run.stages["collect"], at_two);
        let both = [
            result(1, StageStatus::Failed),
            result(2, StageStatus::Succeeded),
        ];
        fold_reports(&mut run, &one_stage(1), &both);
        assert_eq!(run.stages["collect"].status, StageStatus::Succeeded);
    }

    #[test]
    fn a_run_that_is_over_takes_a_late_report_as_it_is() {
        let dispatched = StageState {
            status: StageStatus::Dispatched,
            ..StageState::waiting()
        };
        let mut run = run_of(&[("collect", dispatched)]);
        run.status = RunStatus::Cancelled;
        fold_reports(&mut run, &one_stage(3), &[result(1, StageStatus::Failed)]);
        assert_eq!(run.stages["collect"].status, StageStatus::Failed);
        assert!(fail_if_stopped(&mut run));
        assert_eq!(run.status, RunStatus::Cancelled);
    }

    #[test]
    fn a_retry_is_ready_once_it_is_due() {
        let workflow = one_stage(1);
        let waiting = StageState {
            attempt: 2,
            retry_at: Some(130),
            ..StageState::waiting()
        };
        let run = run_of(&[("collect", waiting)]);
        assert!(ready_stages(&workflow, &run, 129).is_empty());
        assert_eq!(ready_stages(&workflow, &run, 130).len(), 1);
        let order = stage_dispatch(&run, &workflow.stages[0], None);
        assert_eq!(
            (order.attempt, order.idempotency_key.as_str()),
            (2, "workflow-run:run-1:collect:2")
        );
    }
}
