//! Workflow runs (docs/reference.md, "Workflows"): start a run of a
//! registered workflow, and move it on when a stage reports a terminal
//! status.
//!
//! # The state of a run is a function of its stage reports
//! Each advance reads the run and every stored stage report, folds the
//! reports into the stages, and then:
//! - a failed or cancelled stage fails the run: every waiting stage becomes
//!   `skipped` and nothing more is dispatched;
//! - otherwise every waiting stage whose needs all succeeded is dispatched,
//!   its payload evaluated (in the jq sandbox) over
//!   `{input, stages: {NAME: {result}}}` (the stages that succeeded so far);
//! - when every stage succeeded, the run succeeded.
//!
//! The new run is written only if it differs, conditional on the version
//! read; a lost race re-reads and folds again. A stage report is stored
//! put-if-absent, so a duplicate or concurrent report of one stage agrees
//! with the first and advances the run exactly once. Dispatches are recorded
//! before the run says `dispatched`, by a [`StageDispatcher`] that must be
//! idempotent on [`StageDispatch::idempotency_key`]: a racing advancer (or a
//! retry after a crash) records the same dispatch again and gets the first
//! one's id.
//!
//! A payload that does not evaluate (a jq error, a non-object output) and an
//! agent that cannot be dispatched (not registered, not active) fail their
//! stage, and so the run, with the reason in the stage's `error`.

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
use astrolift_jq::sandbox::{Job, SandboxedProgram, WorkerResult, run_in_worker};

/// How often an advance re-reads a run whose version moved under it before
/// giving up with [`WorkflowError::Contention`] (each retry means another
/// advancer made progress, so this bounds work, not correctness).
const MAX_ATTEMPTS: usize = 16;

/// The part of a manual dispatch's idempotency key that names a workflow
/// stage: `…:key:workflow-run:<run id>:<stage>`.
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
    /// Stable per (run, stage): recording it twice gives one dispatch.
    pub idempotency_key: String,
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

/// Starts a run of `record` with `input`: stores the run, then dispatches
/// every stage without needs.
pub async fn start_run(
    state: &dyn StateStore,
    dispatcher: &dyn StageDispatcher,
    record: &WorkflowRecord,
    input: &Value,
    now: UnixSeconds,
    limits: &Limits,
) -> Result<RunProgress, WorkflowError> {
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
        .map(|stage| (stage.name.clone(), waiting()))
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
    advance_run(state, dispatcher, &run.id, now, limits).await
}

/// Records `stage`'s terminal report for run `run_id` and advances the run.
/// A second report of the stage changes nothing (the first one stands).
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
    if !matches!(
        status,
        StageStatus::Succeeded | StageStatus::Failed | StageStatus::Cancelled
    ) {
        return Err(WorkflowError::NotTerminal(status.as_str()));
    }
    let run = state
        .workflows()
        .get_workflow_run(run_id)
        .await?
        .ok_or_else(|| WorkflowError::UnknownRun(run_id.to_owned()))?;
    if !run.stages.contains_key(stage) {
        return Err(WorkflowError::UnknownStage {
            run: run_id.to_owned(),
            stage: stage.to_owned(),
        });
    }
    let report = StageResult {
        run_id: run_id.to_owned(),
        stage: stage.to_owned(),
        status,
        result: result.map(Value::to_string),
        reported_at: now,
    };
    state.workflows().put_stage_result(&report).await?;
    advance_run(state, dispatcher, run_id, now, limits).await
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
    let Some((run_id, stage)) = stage_of_dispatch(dispatch) else {
        return Ok(None);
    };
    report_stage(
        state, dispatcher, &run_id, &stage, status, result, now, limits,
    )
    .await
    .map(Some)
}

/// The run id and stage a workflow dispatch runs, from the source its record
/// keeps (`workflow:<run>:<stage>`, [`Source::record_id`]).
pub fn stage_of_dispatch(dispatch: &Dispatch) -> Option<(String, String)> {
    let tail = dispatch.trigger_id.strip_prefix("workflow:")?;
    let (run_id, stage) = tail.split_once(':')?;
    let plain = |s: &str| !s.is_empty() && !s.contains(':');
    (plain(run_id) && plain(stage)).then(|| (run_id.to_owned(), stage.to_owned()))
}

/// The key a stage's dispatch is recorded under (inside the manual scope of
/// its agent, so it never equals a key a person chose for another dispatch
/// unless they copy it).
pub fn stage_key(run_id: &str, stage: &str) -> String {
    format!("{STAGE_KEY_PREFIX}{run_id}:{stage}")
}

/// Folds the stored reports into the run and dispatches what is ready,
/// retrying on a lost conditional write.
async fn advance_run(
    state: &dyn StateStore,
    dispatcher: &dyn StageDispatcher,
    run_id: &str,
    now: UnixSeconds,
    limits: &Limits,
) -> Result<RunProgress, WorkflowError> {
    for _ in 0..MAX_ATTEMPTS {
        let run = state
            .workflows()
            .get_workflow_run(run_id)
            .await?
            .ok_or_else(|| WorkflowError::UnknownRun(run_id.to_owned()))?;
        let workflow = definition(&run.workflow, &run.definition)?;
        let reports = state.workflows().list_stage_results(run_id).await?;
        let mut next = run.clone();
        fold_reports(&mut next, &reports);
        let mut dispatched = Vec::new();
        if !fail_if_stopped(&mut next) {
            let ready = ready_stages(&workflow, &next);
            let payloads = evaluate_payloads(&next, &reports, &ready, limits).await?;
            for (stage, payload) in ready.into_iter().zip(payloads) {
                let outcome = match payload {
                    Ok(payload) => {
                        let order = stage_dispatch(&next, stage, payload);
                        dispatcher
                            .dispatch(&order, now)
                            .await?
                            .map(|id| (order, id))
                    }
                    Err(refusal) => Err(refusal),
                };
                let slot = next
                    .stages
                    .entry(stage.name.clone())
                    .or_insert_with(waiting);
                match outcome {
                    Ok((order, id)) => {
                        slot.status = StageStatus::Dispatched;
                        slot.dispatch_id = Some(id.clone());
                        dispatched.push((order, id));
                    }
                    Err(Refusal(reason)) => {
                        slot.status = StageStatus::Failed;
                        slot.error = Some(reason);
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
        if next == run {
            return Ok(RunProgress {
                run,
                dispatched,
                changed: false,
            });
        }
        next.version = run.version.saturating_add(1);
        next.updated_at = now;
        match state
            .workflows()
            .update_workflow_run(&next, run.version)
            .await
        {
            Ok(()) => {
                return Ok(RunProgress {
                    run: next,
                    dispatched,
                    changed: true,
                });
            }
            Err(StoreError::Conflict(_)) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(WorkflowError::Contention(run_id.to_owned()))
}

fn waiting() -> StageState {
    StageState {
        status: StageStatus::Waiting,
        dispatch_id: None,
        error: None,
    }
}

fn definition(name: &str, text: &str) -> Result<Workflow, WorkflowError> {
    serde_json::from_str(text)
        .map_err(|e| WorkflowError::Definition(name.to_owned(), e.to_string()))
}

/// Each stored report sets its stage's status, unless the stage already has
/// a terminal one (a skipped stage stays skipped).
fn fold_reports(run: &mut WorkflowRun, reports: &[StageResult]) {
    for report in reports {
        if let Some(stage) = run.stages.get_mut(&report.stage)
            && !stage.status.is_terminal()
        {
            stage.status = report.status;
        }
    }
}

/// When a stage failed or was cancelled: the run fails and every waiting
/// stage is skipped. Returns whether the run is stopped (failed).
fn fail_if_stopped(run: &mut WorkflowRun) -> bool {
    let stopped = run.status == RunStatus::Failed
        || run
            .stages
            .values()
            .any(|s| matches!(s.status, StageStatus::Failed | StageStatus::Cancelled));
    if !stopped {
        return false;
    }
    run.status = RunStatus::Failed;
    for stage in run.stages.values_mut() {
        if stage.status == StageStatus::Waiting {
            stage.status = StageStatus::Skipped;
        }
    }
    true
}

/// The waiting stages whose needs all succeeded, in definition order.
pub fn ready_stages<'w>(workflow: &'w Workflow, run: &WorkflowRun) -> Vec<&'w Stage> {
    let status = |name: &str| run.stages.get(name).map(|s| s.status);
    workflow
        .stages
        .iter()
        .filter(|stage| status(&stage.name) == Some(StageStatus::Waiting))
        .filter(|stage| {
            stage
                .needs
                .iter()
                .all(|need| status(need) == Some(StageStatus::Succeeded))
        })
        .collect()
}

/// `{input, stages: {NAME: {result}}}`: the run's input and the result of
/// every stage that succeeded so far (`null` when it sent none).
pub fn payload_input(run: &WorkflowRun, reports: &[StageResult]) -> Value {
    let input: Value = serde_json::from_str(&run.input).unwrap_or(Value::Null);
    let stages: serde_json::Map<String, Value> = reports
        .iter()
        .filter(|r| r.status == StageStatus::Succeeded)
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
async fn evaluate_payloads(
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

fn stage_dispatch(run: &WorkflowRun, stage: &Stage, payload: Option<Value>) -> StageDispatch {
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
        idempotency_key: stage_key(&run.id, &stage.name),
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
