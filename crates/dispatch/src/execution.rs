//! Workflow runs on the Step Functions engine (docs/reference.md §5.6): the execution owns
//! the order of the stages, and this module is what happens at each of its tasks.
//!
//! - [`dispatch_stage_message`]: a stage's task sent `{"run_id","stage","task_token"}` to the
//!   stage queue. The stage's payload is evaluated over `{input, stages}` (results from the
//!   state store, as on the state-store engine), its attempt is dispatched (a message v1,
//!   keyed by run, stage and attempt), and the run records the attempt with its token. A
//!   stage that cannot be dispatched answers the token with `SendTaskFailure` and the reason.
//! - [`answer_stage_callback`]: a stage dispatch's callback answers the attempt's token:
//!   `running` a heartbeat, `succeeded` `SendTaskSuccess` with `{"stage","status"}` (the
//!   result stays in the state store, so no state passes 256 KiB), `failed` or `cancelled`
//!   `SendTaskFailure` (`error` the status).
//!
//! Attempts: a message whose token is the one the stage records is a redelivery of that
//! attempt (its dispatch is the same, by its key); another token while the stage is
//! dispatched is the execution's retry, the next attempt. A stale token (answered, timed
//! out, stopped) changes nothing.

use astrolift_manifest::Limits;
use astrolift_store::state::{
    RunStatus, StageStatus, StateStore, TaskStatus, UnixSeconds, WorkflowRun,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::step_functions::{EngineError, StepFunctions, TaskAnswer};
use crate::workflow::{
    Refusal, StageAttempt, StageDispatcher, WorkflowError, definition, evaluate_payloads, read_run,
    stage_dispatch, write_run,
};

/// How often a stage message re-reads a run that moved under it before giving up.
const MAX_ATTEMPTS: usize = 16;

/// What a stage's task sends to the stage queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageMessage {
    pub run_id: String,
    pub stage: String,
    pub task_token: String,
}

/// What a stage message did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageMessageOutcome {
    /// The attempt's dispatch (a redelivered message finds the same one).
    Dispatched { dispatch_id: String, attempt: u32 },
    /// The stage could not be dispatched; its token was answered with the reason.
    Refused(String),
    /// Nothing to do: the run has ended (its execution's token is stale).
    Ended,
}

/// Why a stage message or callback could not be handled now.
#[derive(Debug, thiserror::Error)]
pub enum ExecutionError {
    #[error(transparent)]
    Workflow(#[from] WorkflowError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Dispatches the attempt `message` asks for (module docs).
pub async fn dispatch_stage_message(
    state: &dyn StateStore,
    dispatcher: &dyn StageDispatcher,
    engine: &StepFunctions,
    message: &StageMessage,
    now: UnixSeconds,
    limits: &Limits,
) -> Result<StageMessageOutcome, ExecutionError> {
    for _ in 0..MAX_ATTEMPTS {
        let run = match read_run(state, &message.run_id).await {
            Err(WorkflowError::UnknownRun(run_id)) => {
                return refuse(engine, message, format!("there is no run {run_id}")).await;
            }
            run => run?,
        };
        if run.status != RunStatus::Running {
            return Ok(StageMessageOutcome::Ended);
        }
        let Some(next) = with_attempt(&run, message) else {
            let reason = format!("run {} has no stage {}", run.id, message.stage);
            return refuse(engine, message, reason).await;
        };
        let workflow = definition(&run.workflow, &run.definition)?;
        let Some(stage) = workflow.stages.iter().find(|s| s.name == message.stage) else {
            let reason = format!("workflow {} has no stage {}", run.workflow, message.stage);
            return refuse(engine, message, reason).await;
        };
        let reports = state
            .workflows()
            .list_stage_results(&run.id)
            .await
            .map_err(WorkflowError::from)?;
        let payload = evaluate_payloads(&next, &reports, &[stage], limits)
            .await?
            .pop()
            .unwrap_or(Ok(None));
        let dispatched = match payload {
            Ok(payload) => {
                let order = stage_dispatch(&next, stage, payload);
                dispatcher.dispatch(&order, now).await?
            }
            Err(refusal) => Err(refusal),
        };
        let (next, outcome) = record(next, message, dispatched, now);
        if write_run(state, run, next, Vec::new(), now)
            .await?
            .is_none()
        {
            continue;
        }
        return match outcome {
            StageMessageOutcome::Refused(reason) => refuse(engine, message, reason).await,
            other => Ok(other),
        };
    }
    Err(WorkflowError::Contention(message.run_id.clone()).into())
}

/// The run with the stage at the attempt `message` runs; `None` when it has no such stage.
fn with_attempt(run: &WorkflowRun, message: &StageMessage) -> Option<WorkflowRun> {
    let mut next = run.clone();
    let slot = next.stages.get_mut(&message.stage)?;
    let same_token = slot.task_token.as_deref() == Some(message.task_token.as_str());
    if !same_token && slot.task_token.is_some() {
        slot.attempt = slot.attempt.saturating_add(1);
        slot.dispatch_id = None;
        slot.error = None;
    }
    Some(next)
}

/// `next` with the attempt's dispatch (or refusal) and token recorded.
fn record(
    mut next: WorkflowRun,
    message: &StageMessage,
    dispatched: Result<String, Refusal>,
    now: UnixSeconds,
) -> (WorkflowRun, StageMessageOutcome) {
    let Some(slot) = next.stages.get_mut(&message.stage) else {
        return (next, StageMessageOutcome::Ended);
    };
    slot.task_token = Some(message.task_token.clone());
    let outcome = match dispatched {
        Ok(dispatch_id) => {
            if slot.dispatch_id.as_deref() != Some(dispatch_id.as_str()) {
                slot.dispatched_at = Some(now);
            }
            slot.status = StageStatus::Dispatched;
            slot.dispatch_id = Some(dispatch_id.clone());
            StageMessageOutcome::Dispatched {
                dispatch_id,
                attempt: slot.attempt,
            }
        }
        Err(Refusal(reason)) => {
            slot.status = StageStatus::Failed;
            slot.error = Some(reason.clone());
            StageMessageOutcome::Refused(reason)
        }
    };
    (next, outcome)
}

async fn refuse(
    engine: &StepFunctions,
    message: &StageMessage,
    reason: String,
) -> Result<StageMessageOutcome, ExecutionError> {
    engine
        .send_task_failure(&message.task_token, StageStatus::Failed.as_str(), &reason)
        .await?;
    Ok(StageMessageOutcome::Refused(reason))
}

/// Answers the token of the attempt `attempt` with the callback's `status` (module docs);
/// `error` is the failure's text. `None` when the run keeps no token for that attempt (a
/// dispatch of the state-store engine, or an earlier attempt: stale).
pub async fn answer_stage_callback(
    state: &dyn StateStore,
    engine: &StepFunctions,
    attempt: &StageAttempt,
    status: TaskStatus,
    error: &str,
) -> Result<Option<TaskAnswer>, ExecutionError> {
    let run = read_run(state, &attempt.run_id).await?;
    let Some(token) = stage_token(&run, attempt) else {
        return Ok(None);
    };
    Ok(answer_token(engine, token, &attempt.stage, status, error).await?)
}

/// The task token `run` keeps for `attempt`, when it is the stage's current attempt.
pub fn stage_token<'r>(run: &'r WorkflowRun, attempt: &StageAttempt) -> Option<&'r str> {
    let slot = run.stages.get(&attempt.stage)?;
    slot.task_token
        .as_deref()
        .filter(|_| slot.attempt == attempt.attempt)
}

/// Answers `token` of stage `stage` with a callback's `status`: a heartbeat, success with
/// `{"stage","status"}`, or failure with `error`; `None` for `queued`, which says nothing.
pub async fn answer_token(
    engine: &StepFunctions,
    token: &str,
    stage: &str,
    status: TaskStatus,
    error: &str,
) -> Result<Option<TaskAnswer>, EngineError> {
    let answer = match status {
        TaskStatus::Succeeded => {
            let output = json!({"stage": stage, "status": status.as_str()});
            engine.send_task_success(token, &output).await?
        }
        TaskStatus::Failed | TaskStatus::Cancelled => {
            engine
                .send_task_failure(token, status.as_str(), error)
                .await?
        }
        TaskStatus::Running => engine.send_task_heartbeat(token).await?,
        TaskStatus::Queued => return Ok(None),
    };
    Ok(Some(answer))
}
