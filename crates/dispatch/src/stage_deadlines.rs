//! The deadlines of workflow stages on the state-store engine (docs/reference.md §5.6):
//! reconcile's pass over the running runs, which ends each attempt that ran past its
//! stage's `timeout` (or, with a `heartbeat`, went that long without a `running` report)
//! and dispatches the retries that came due.
//!
//! # A timeout is the attempt's report
//! An attempt is timed out by storing its terminal report (`failed`, with the reason in
//! `error`) through the same put-if-absent as its runtime's report
//! ([`astrolift_store::state::WorkflowStore::put_stage_result`]): whichever is stored first
//! ends the attempt, so an attempt times out once, and a report of its runtime's that
//! arrives later changes nothing. The run then advances as on any report
//! ([`crate::workflow`]): a stage with retries left waits for its next attempt, else the
//! run fails.
//!
//! # Clocks
//! An attempt's `timeout` and `heartbeat` count from its dispatch (the stage's
//! `dispatched_at`); a `running` report restarts the `heartbeat` (the task's
//! `running_at`). A stage dispatched before `dispatched_at` was kept counts from the run's
//! last update, which is never earlier than its dispatch (a compatibility shim:
//! docs/operations.md, "Compatibility shims"). Nothing here keeps time of its own: a
//! deadline is seen by the first pass after it, so it ends up to one reconcile interval
//! late, and so does a retry's dispatch.

use astrolift_manifest::Limits;
use astrolift_manifest::workflow::Stage;
use astrolift_manifest::workflow::options::format_duration;
use astrolift_store::StoreError;
use astrolift_store::state::{
    RunStatus, StageResult, StageState, StageStatus, StateStore, UnixSeconds, WorkflowRun,
};

use crate::workflow::{StageDispatcher, WorkflowError, advance_run, definition};

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeadlinePass {
    /// Attempts ended for running past their `timeout` or `heartbeat`.
    pub timed_out: usize,
    /// Stages dispatched again: retries that came due.
    pub retried: usize,
}

/// Why an attempt is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// No terminal report within the stage's `timeout` (seconds) of its dispatch.
    Timeout(u32),
    /// No `running` report within the stage's `heartbeat` (seconds).
    Heartbeat(u32),
}

impl Expiry {
    /// The attempt's `error`, as `workflow-run show` prints it.
    pub fn reason(self, attempt: u32) -> String {
        match self {
            Expiry::Timeout(seconds) => format!(
                "attempt {attempt} timed out: no terminal report within its timeout of {}",
                format_duration(seconds)
            ),
            Expiry::Heartbeat(seconds) => format!(
                "attempt {attempt} timed out: no running report within its heartbeat of {}",
                format_duration(seconds)
            ),
        }
    }
}

/// Whether an attempt dispatched at `dispatched_at` is over at `now`: past the stage's
/// `timeout`, or, with a `heartbeat`, that long after its latest `running` report
/// (`running_at`) or its dispatch, whichever is later.
pub fn expiry(
    stage: &Stage,
    dispatched_at: UnixSeconds,
    running_at: Option<UnixSeconds>,
    now: UnixSeconds,
) -> Option<Expiry> {
    let past = |since: UnixSeconds, seconds: u32| now.saturating_sub(since) > i64::from(seconds);
    if past(dispatched_at, stage.timeout_seconds) {
        return Some(Expiry::Timeout(stage.timeout_seconds));
    }
    let beat = stage.heartbeat_seconds?;
    let since = running_at.map_or(dispatched_at, |at| at.max(dispatched_at));
    past(since, beat).then_some(Expiry::Heartbeat(beat))
}

/// One pass over every running run (see the module docs). A run that cannot be read or
/// advanced is logged and left to the next pass; only the listing failing is `Err`.
pub async fn enforce_deadlines(
    state: &dyn StateStore,
    dispatcher: &dyn StageDispatcher,
    now: UnixSeconds,
    limits: &Limits,
) -> Result<DeadlinePass, StoreError> {
    let runs = state.workflows().list_running_workflow_runs().await?;
    let mut pass = DeadlinePass::default();
    for listed in runs {
        match enforce_run(state, dispatcher, &listed.id, now, limits).await {
            Ok(one) => {
                pass.timed_out += one.timed_out;
                pass.retried += one.retried;
            }
            Err(error) => tracing::warn!(
                run_id = %listed.id,
                %error,
                "a workflow run's deadlines were not enforced; the next reconcile tries again"
            ),
        }
    }
    Ok(pass)
}

/// Times out the run's expired attempts, then advances it when one timed out or a retry
/// is due. The run is read afresh: the listing may lag behind it.
async fn enforce_run(
    state: &dyn StateStore,
    dispatcher: &dyn StageDispatcher,
    run_id: &str,
    now: UnixSeconds,
    limits: &Limits,
) -> Result<DeadlinePass, WorkflowError> {
    let Some(run) = state.workflows().get_workflow_run(run_id).await? else {
        return Ok(DeadlinePass::default());
    };
    if run.status != RunStatus::Running {
        return Ok(DeadlinePass::default());
    }
    let workflow = definition(&run.workflow, &run.definition)?;
    let mut timed_out = 0;
    for stage in &workflow.stages {
        let Some(slot) = run.stages.get(&stage.name) else {
            continue;
        };
        if slot.status == StageStatus::Dispatched && time_out(state, &run, stage, slot, now).await?
        {
            timed_out += 1;
        }
    }
    let retry_due = run
        .stages
        .values()
        .any(|s| s.status == StageStatus::Waiting && s.retry_at.is_some_and(|at| at <= now));
    if timed_out == 0 && !retry_due {
        return Ok(DeadlinePass::default());
    }
    let progress = advance_run(state, dispatcher, run_id, now, limits).await?;
    let retried = progress
        .dispatched
        .iter()
        .filter(|(order, _)| order.attempt > 1)
        .count();
    Ok(DeadlinePass { timed_out, retried })
}

/// Ends `slot`'s attempt when it is expired: true when this call's report is the one
/// stored (not one its runtime, or another pass, stored first).
async fn time_out(
    state: &dyn StateStore,
    run: &WorkflowRun,
    stage: &Stage,
    slot: &StageState,
    now: UnixSeconds,
) -> Result<bool, WorkflowError> {
    let dispatched_at = slot.dispatched_at.unwrap_or(run.updated_at);
    let running_at = match (&stage.heartbeat_seconds, &slot.dispatch_id) {
        (Some(_), Some(dispatch_id)) => state
            .tasks()
            .get_dispatch_task(dispatch_id)
            .await?
            .and_then(|task| task.running_at),
        _ => None,
    };
    let Some(expired) = expiry(stage, dispatched_at, running_at, now) else {
        return Ok(false);
    };
    let report = StageResult {
        run_id: run.id.clone(),
        stage: stage.name.clone(),
        attempt: slot.attempt,
        status: StageStatus::Failed,
        result: None,
        error: Some(expired.reason(slot.attempt)),
        reported_at: now,
    };
    let stored = state.workflows().put_stage_result(&report).await?;
    if stored == report {
        tracing::info!(
            run_id = %run.id,
            stage = %stage.name,
            attempt = slot.attempt,
            "a workflow stage timed out"
        );
    }
    Ok(stored == report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(timeout: u32, heartbeat: Option<u32>) -> Stage {
        Stage {
            timeout_seconds: timeout,
            heartbeat_seconds: heartbeat,
            ..Stage::default()
        }
    }

    #[test]
    fn an_attempt_is_over_only_past_its_timeout() {
        let stage = stage(3_600, None);
        assert_eq!(expiry(&stage, 100, None, 3_700), None);
        assert_eq!(
            expiry(&stage, 100, None, 3_701),
            Some(Expiry::Timeout(3_600))
        );
        // A clock that went backwards is never past anything.
        assert_eq!(expiry(&stage, 100, None, 50), None);
    }

    #[test]
    fn a_running_report_restarts_the_heartbeat_but_not_the_timeout() {
        let stage = stage(3_600, Some(600));
        assert_eq!(expiry(&stage, 0, None, 601), Some(Expiry::Heartbeat(600)));
        assert_eq!(expiry(&stage, 0, Some(500), 1_000), None);
        assert_eq!(
            expiry(&stage, 0, Some(500), 1_101),
            Some(Expiry::Heartbeat(600))
        );
        // A running report stamped before the dispatch (a clock that moved) counts from it.
        assert_eq!(
            expiry(&stage, 1_000, Some(10), 1_601),
            Some(Expiry::Heartbeat(600))
        );
        assert_eq!(
            expiry(&stage, 0, Some(3_500), 3_601),
            Some(Expiry::Timeout(3_600))
        );
    }

    #[test]
    fn the_reason_names_the_attempt_and_the_option() {
        assert_eq!(
            Expiry::Timeout(7_200).reason(2),
            "attempt 2 timed out: no terminal report within its timeout of 2h"
        );
        assert_eq!(
            Expiry::Heartbeat(90).reason(1),
            "attempt 1 timed out: no running report within its heartbeat of 90s"
        );
    }
}
