//! `POST /callbacks/{task_id}`: a runtime reports its task's status (docs/reference.md §8).
//!
//! `Authorization: Bearer <ASTROLIFT_CLUSTER_KEY>` and a JSON body
//! `{"status":"running"|"succeeded"|"failed"|"cancelled","result":<JSON>}`.
//!
//! | Status | When | Body |
//! |---|---|---|
//! | 202 | `running` recorded (any number of times before a terminal status) | `{"task_id","dispatch_id","status"}` |
//! | 200 | the terminal status recorded, with its result and time | `{"task_id","dispatch_id","status"}` (plus `"workflow_run"` for a workflow stage) |
//! | 400 | the body is not JSON, or `status` is not one of the four, or a packager dispatch's result is malformed ([`crate::layers::parse_packager_result`]; nothing is recorded) | `{"error","task_id"}` |
//! | 401 | no `Bearer` key, or not the key of the task's latest render (an earlier render's key included) | `{"error","task_id"}` |
//! | 404 | no such task | `{"error","task_id"}` |
//! | 409 | the task has a terminal status already; nothing changes | `{"error","task_id","status"}` |
//! | 413 | the body is over [`callback_body_limit`], or `result` is over `Limits::callback_result` as serialized | `{"error","task_id"}` |
//! | 422 | `result` nests deeper than [`MAX_RESULT_DEPTH`]; nothing is recorded | `{"error","task_id"}` |
//! | 503 | the state store is unavailable, or the report was recorded but its workflow run could not advance (a retry, answered 409, advances it) | `{"error","task_id"}` |
//!
//! The key is checked before the body is parsed, and compared as sha256 digests in constant
//! time; no answer or log line carries it. A terminal report of a workflow stage's dispatch
//! advances its run ([`crate::workflow::advance_workflow_on_callback`]) with the status and
//! result the task stores, on the first report and on every repeat (a repeat changes
//! nothing: stage reports are stored once). On the Step Functions engine it is stored as the
//! stage's report and answers the stage attempt's task token instead (`running` sends a
//! heartbeat; a stale token changes nothing): the execution moves the run on.

use astrolift_manifest::Limits;
use astrolift_store::state::tasks::report_task;
use astrolift_store::state::{
    Dispatch, DispatchTask, ReportOutcome, StageResult, StageStatus, TaskReport, TaskStatus,
    UnixSeconds,
};
use astrolift_store::{StateStore, StoreError};
use http::HeaderMap;
use serde_json::{Value, json};
use subtle::ConstantTimeEq;

use crate::answer::Answer;
use crate::execution::{answer_token, stage_token};
use crate::layers::{
    PackagerResult, packager_layer_key, parse_packager_result, record_packager_result,
};
use crate::render::key_hash;
use crate::report::{ResultReporter, report_terminal_task};
use crate::step_functions::StepFunctions;
use crate::workflow::{StageDispatcher, advance_workflow_on_callback, stage_of_dispatch};

/// Bytes a callback body may have besides its `result` (the status and the JSON around it).
pub const CALLBACK_ENVELOPE_BYTES: u64 = 4 * 1024;
/// The deepest nesting of arrays and objects a `result` may have (a scalar is 0 deep,
/// `[1]` is 1). A workflow stage's result reaches its successors' payload programs
/// three levels down (`{input, stages: {NAME: {result}}}`, docs/reference.md §5.6), and
/// the evaluator parses its input to 128 levels: this one bound keeps every result the
/// callback accepts inside what the run can evaluate.
pub const MAX_RESULT_DEPTH: usize = 100;
/// Longer task ids are not ours (ours are GUIDs).
pub const MAX_TASK_ID: usize = 128;

/// The largest callback body read: the result limit plus [`CALLBACK_ENVELOPE_BYTES`].
pub fn callback_body_limit(limits: &Limits) -> u64 {
    limits
        .callback_result
        .saturating_add(CALLBACK_ENVELOPE_BYTES)
}

/// What a callback needs besides the request.
#[derive(Clone, Copy)]
pub struct CallbackContext<'a> {
    pub state: &'a dyn StateStore,
    /// Dispatches the workflow stages a terminal report makes ready.
    pub dispatcher: &'a dyn StageDispatcher,
    pub limits: &'a Limits,
    pub now: UnixSeconds,
    /// Reports terminal results to GitHub for dispatches that ask ([`crate::report`]).
    pub reporter: Option<&'a dyn ResultReporter>,
    /// On the Step Functions engine: a stage's callback answers its task token instead of
    /// advancing the run ([`crate::execution`]). `None`: the state-store engine.
    pub engine: Option<&'a StepFunctions>,
}

impl std::fmt::Debug for CallbackContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackContext")
            .field("state", &self.state)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

/// One `POST /callbacks/{task_id}` (see the module docs for every answer).
pub async fn handle_callback(
    context: CallbackContext<'_>,
    task_id: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Answer {
    match accept(context, task_id, headers, body).await {
        Ok(answer) | Err(answer) => answer,
    }
}

/// A recorded report, or the refusal that ends the request early.
type Accepted = Result<Answer, Answer>;

async fn accept(
    context: CallbackContext<'_>,
    task_id: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Accepted {
    let refuse = |status: u16, error: &str| refusal(status, error, task_id);
    let task = authenticated_task(context, task_id, headers, body).await?;
    let report =
        parse_report(body, context.limits).map_err(|(status, error)| refuse(status, &error))?;
    let packager = packager_result(context, &task, &report).await?;
    let outcome = report_task(context.state.tasks(), task_id, &report, context.now)
        .await
        .map_err(|e| store_refusal(&e, task_id))?;
    let (task, recorded) = match outcome {
        ReportOutcome::Recorded(task) => (task, true),
        ReportOutcome::AlreadyFinished(task) => (task, false),
    };
    let answered = match context.engine {
        Some(engine) => answer_execution(context, engine, &task).await?,
        None => None,
    };
    let workflow_run = match answered {
        Some(run_id) => Some(run_id),
        None => advance_workflow(context, &task).await?,
    };
    // The stored report decides (on a repeat, the first one), as for a workflow stage.
    if let Some((layer_key, dispatch_id, _)) = packager
        && let Ok(stored) = parse_packager_result(task.status, task.result.as_deref())
    {
        record_layers(context, &task, &layer_key, &dispatch_id, stored).await?;
    }
    if !recorded {
        let mut answer = refuse(409, "the task has a terminal status already");
        answer.body["status"] = json!(task.status.as_str());
        return Err(answer);
    }
    if task.status.is_terminal() {
        report_terminal_task(context.state, context.reporter, &task).await;
    }
    Ok(recorded_answer(&task, workflow_run))
}

/// The task, once the request is within its bounds and carries the key of the task's
/// latest render: checked before the body is parsed.
async fn authenticated_task(
    context: CallbackContext<'_>,
    task_id: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<DispatchTask, Answer> {
    let refuse = |status: u16, error: &str| refusal(status, error, task_id);
    if task_id.is_empty() || task_id.len() > MAX_TASK_ID {
        return Err(refusal(404, "no such task", ""));
    }
    if body.len() as u64 > callback_body_limit(context.limits) {
        return Err(refuse(413, "the callback body is over its limit"));
    }
    let key = bearer_key(headers).ok_or_else(|| refuse(401, "a Bearer cluster key is required"))?;
    let task = context
        .state
        .tasks()
        .get_task(task_id)
        .await
        .map_err(|e| store_refusal(&e, task_id))?
        .ok_or_else(|| refuse(404, "no such task"))?;
    if !key_matches(&task, key) {
        return Err(refuse(
            401,
            "the cluster key is not the one of the task's latest render",
        ));
    }
    Ok(task)
}

/// 202 for `running`, 200 for a terminal status (with the workflow run it advanced).
fn recorded_answer(task: &DispatchTask, workflow_run: Option<String>) -> Answer {
    let mut body = json!({
        "task_id": task.task_id,
        "dispatch_id": task.dispatch_id,
        "status": task.status.as_str(),
    });
    if let Some(run_id) = workflow_run {
        body["workflow_run"] = json!(run_id);
    }
    let status = if task.status.is_terminal() { 200 } else { 202 };
    Answer { status, body }
}

/// The key of `Authorization: Bearer <key>` (the scheme in any case), if any.
fn bearer_key(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, key) = value.trim().split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !key.is_empty()).then_some(key)
}

/// Whether `key` hashes to the task's latest render's key hash, compared in constant time.
fn key_matches(task: &DispatchTask, key: &str) -> bool {
    let Some(expected) = task
        .cluster_key_sha256
        .as_deref()
        .and_then(|h| hex::decode(h).ok())
    else {
        return false;
    };
    let presented = hex::decode(key_hash(key)).unwrap_or_default();
    expected.len() == presented.len() && bool::from(expected.ct_eq(&presented))
}

/// The report of a body: its status, and its result as compact JSON within the limit.
fn parse_report(body: &[u8], limits: &Limits) -> Result<TaskReport, (u16, String)> {
    #[derive(serde::Deserialize)]
    struct Body {
        status: String,
        #[serde(default)]
        result: Option<Value>,
    }
    let parsed: Body = serde_json::from_slice(body)
        .map_err(|e| (400, format!("the body is not a callback report: {e}")))?;
    let status = TaskStatus::parse(&parsed.status)
        .filter(|s| *s != TaskStatus::Queued)
        .ok_or_else(|| {
            (
                400,
                "status must be running, succeeded, failed or cancelled".to_owned(),
            )
        })?;
    if let Some(value) = parsed.result.as_ref().filter(|_| status.is_terminal()) {
        let depth = nesting_depth(value);
        if depth > MAX_RESULT_DEPTH {
            return Err((
                422,
                format!(
                    "result nests {depth} levels deep; a result may nest at most {MAX_RESULT_DEPTH}"
                ),
            ));
        }
    }
    let result = parsed
        .result
        .map(|value| value.to_string())
        .filter(|_| status.is_terminal());
    if let Some(text) = &result
        && text.len() as u64 > limits.callback_result
    {
        return Err((
            413,
            format!(
                "result is {} bytes as serialized, over the {}-byte limit",
                text.len(),
                limits.callback_result
            ),
        ));
    }
    Ok(TaskReport { status, result })
}

/// How deep arrays and objects nest in `value` (0 for a scalar). Iterative: the depth
/// of any value serde_json parsed is bounded, but this never recurses anyway.
pub fn nesting_depth(value: &Value) -> usize {
    let mut deepest = 0;
    // Each container with its own depth (a top-level array or object is 1).
    let mut pending = vec![(value, 1usize)];
    while let Some((value, depth)) = pending.pop() {
        let below = |child| (child, depth + 1);
        match value {
            Value::Array(items) => pending.extend(items.iter().map(below)),
            Value::Object(members) => pending.extend(members.values().map(below)),
            _ => continue,
        }
        deepest = deepest.max(depth);
    }
    deepest
}

/// For a terminal report of a packager dispatch (docs/reference.md "Dependency layers"):
/// its layer key, dispatch id and checked result; a malformed result is 400 before
/// anything is recorded. `None` for any other report.
async fn packager_result(
    context: CallbackContext<'_>,
    task: &DispatchTask,
    report: &TaskReport,
) -> Result<Option<(String, String, PackagerResult)>, Answer> {
    if !report.status.is_terminal() {
        return Ok(None);
    }
    let dispatch = context
        .state
        .get_dispatch(&task.idempotency_key)
        .await
        .map_err(|e| store_refusal(&e, &task.task_id))?;
    let Some(dispatch) = dispatch else {
        return Ok(None);
    };
    let Some(layer_key) = packager_layer_key(&dispatch.trigger_id) else {
        return Ok(None);
    };
    let result = parse_packager_result(report.status, report.result.as_deref()).map_err(|e| {
        refusal(
            400,
            &format!("the packager's result is malformed: {e}"),
            &task.task_id,
        )
    })?;
    Ok(Some((layer_key.to_owned(), dispatch.id, result)))
}

/// Records a packager's checked result on its layer build, on the first report and on a
/// repeat (a repeat changes nothing once the build has left `pending`).
async fn record_layers(
    context: CallbackContext<'_>,
    task: &DispatchTask,
    layer_key: &str,
    dispatch_id: &str,
    result: PackagerResult,
) -> Result<(), Answer> {
    record_packager_result(context.state, layer_key, dispatch_id, result, context.now)
        .await
        .map(|_| ())
        .map_err(|error| {
            tracing::warn!(task_id = %task.task_id, %error, "a packager result was not recorded on its layers");
            refusal(
                503,
                "the report is recorded, but its layers could not be: retry",
                &task.task_id,
            )
        })
}

/// For a terminal task of a workflow stage's dispatch: advances its run with the stored
/// status and result, and returns the run's id (`None` for any other dispatch).
async fn advance_workflow(
    context: CallbackContext<'_>,
    task: &DispatchTask,
) -> Result<Option<String>, Answer> {
    let Some(status) = stage_status(task.status) else {
        return Ok(None);
    };
    let unavailable = |why: &str| {
        tracing::warn!(task_id = %task.task_id, why, "a workflow run did not advance");
        refusal(
            503,
            "the report is recorded, but its workflow run could not advance: retry",
            &task.task_id,
        )
    };
    let Some(dispatch) = dispatch_of_task(context, task, unavailable).await? else {
        return Ok(None);
    };
    let result: Option<Value> = task
        .result
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok());
    let progress = advance_workflow_on_callback(
        context.state,
        context.dispatcher,
        &dispatch,
        status,
        result.as_ref(),
        context.now,
        context.limits,
    )
    .await
    .map_err(|error| unavailable(&error.to_string()))?;
    Ok(progress.map(|p| p.run.id))
}

/// On the Step Functions engine, for the dispatch of a stage attempt that an execution
/// waits on (the run keeps its task token): a terminal report is stored as the attempt's
/// stage report (for the next stages' payloads), then the token is answered; `running` is its
/// heartbeat. Returns the run's id; `None` for any other dispatch, a run of the state-store
/// engine included (it advances as on that engine).
async fn answer_execution(
    context: CallbackContext<'_>,
    engine: &StepFunctions,
    task: &DispatchTask,
) -> Result<Option<String>, Answer> {
    let unavailable = |why: &str| {
        tracing::warn!(task_id = %task.task_id, why, "a stage's task token was not answered");
        refusal(
            503,
            "the report is recorded, but its stage's execution could not be told: retry",
            &task.task_id,
        )
    };
    let Some(dispatch) = dispatch_of_task(context, task, unavailable).await? else {
        return Ok(None);
    };
    let Some(attempt) = stage_of_dispatch(&dispatch) else {
        return Ok(None);
    };
    let run = match context
        .state
        .workflows()
        .get_workflow_run(&attempt.run_id)
        .await
    {
        Ok(run) => run,
        Err(error) => return Err(unavailable(&error.to_string())),
    };
    let waits = run
        .as_ref()
        .and_then(|run| run.stages.get(&attempt.stage))
        .is_some_and(|slot| slot.task_token.is_some());
    if !waits {
        return Ok(None);
    }
    if let Some(status) = stage_status(task.status) {
        let report = StageResult {
            run_id: attempt.run_id.clone(),
            stage: attempt.stage.clone(),
            attempt: attempt.attempt,
            status,
            result: task.result.clone(),
            error: None,
            reported_at: context.now,
        };
        context
            .state
            .workflows()
            .put_stage_result(&report)
            .await
            .map_err(|error| unavailable(&error.to_string()))?;
    }
    // The run read above: its token of this attempt, if the attempt is still the current one.
    let token = run.as_ref().and_then(|run| stage_token(run, &attempt));
    let error = task.result.as_deref().unwrap_or(task.status.as_str());
    let answer = match token {
        Some(token) => answer_token(engine, token, &attempt.stage, task.status, error)
            .await
            .map_err(|error| unavailable(&error.to_string()))?,
        None => None,
    };
    tracing::info!(task_id = %task.task_id, run_id = %attempt.run_id, stage = %attempt.stage, ?answer, "stage token answered");
    Ok(Some(attempt.run_id))
}

/// The dispatch of `task`; a store failure is `unavailable`'s answer.
async fn dispatch_of_task(
    context: CallbackContext<'_>,
    task: &DispatchTask,
    unavailable: impl Fn(&str) -> Answer,
) -> Result<Option<Dispatch>, Answer> {
    context
        .state
        .get_dispatch(&task.idempotency_key)
        .await
        .map_err(|error| unavailable(&error.to_string()))
}

fn stage_status(status: TaskStatus) -> Option<StageStatus> {
    match status {
        TaskStatus::Succeeded => Some(StageStatus::Succeeded),
        TaskStatus::Failed => Some(StageStatus::Failed),
        TaskStatus::Cancelled => Some(StageStatus::Cancelled),
        TaskStatus::Queued | TaskStatus::Running => None,
    }
}

fn refusal(status: u16, error: &str, task_id: &str) -> Answer {
    Answer {
        status,
        body: json!({"error": error, "task_id": task_id}),
    }
}

fn store_refusal(error: &StoreError, task_id: &str) -> Answer {
    tracing::warn!(%task_id, %error, "a callback could not be recorded");
    match error {
        StoreError::NotFound(_) => refusal(404, "no such task", task_id),
        StoreError::Invalid(_) => refusal(400, "the report is not valid", task_id),
        _ => refusal(503, "the state store is unavailable; retry", task_id),
    }
}
