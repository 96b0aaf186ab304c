//! Timeouts, retries and cancel on the state-store engine (docs/reference.md §5.6), on
//! both state stores (SQLite; DynamoDB against moto): reconcile's pass fails an attempt
//! past its `timeout` or `heartbeat` once, and a late report of it changes nothing; a
//! failed or timed-out attempt with retries left is dispatched again once due, under a
//! key of its own, and a redelivered order of one attempt records one dispatch; retries
//! exhausted fail the run; a cancelled run skips its waiting stages, twice is once, and a
//! finished run is refused.

use astrolift_dispatch::dispatch::MemoryDispatchQueue;
use astrolift_dispatch::stage_deadlines::{DeadlinePass, enforce_deadlines};
use astrolift_dispatch::workflow::{
    RunProgress, StageDispatch, StageDispatcher, WorkflowError, advance_workflow_on_callback,
    cancel_run, stage_key,
};
use astrolift_manifest::workflow::Stage;
use astrolift_store::state::tasks::report_task;
use astrolift_store::state::{
    Dispatch, RunStatus, StageStatus, TaskReport, TaskStatus, UnixSeconds, WorkflowRecord,
    WorkflowRun,
};
use serde_json::{Value, json};

use crate::support::limits;
use crate::workflow::{
    Subject, dispatched, dynamodb, on_both_stores, register, report, sqlite, stage, start,
    test_dispatcher, triage_of,
};

/// A day and a second: past the default timeout of a run started at 5.
const PAST_A_DAY: UnixSeconds = 5 + 24 * 3600 + 1;

/// `collect` (with `options` applied) → `report`.
async fn two_stages(subject: &Subject, name: &str, options: impl Fn(&mut Stage)) -> WorkflowRecord {
    let mut collect = stage("collect", "triage", &[], None);
    options(&mut collect);
    let mut workflow = triage_of(vec![
        collect,
        stage("report", "reporter", &["collect"], None),
    ]);
    workflow.name = name.to_owned();
    register(subject, &workflow).await
}

async fn deadlines(
    subject: &Subject,
    queue: &MemoryDispatchQueue,
    now: UnixSeconds,
) -> DeadlinePass {
    let dispatcher = test_dispatcher(subject, queue);
    enforce_deadlines(subject.state.as_ref(), &dispatcher, now, &limits())
        .await
        .expect("a pass")
}

async fn run_of(subject: &Subject, run_id: &str) -> WorkflowRun {
    let workflows = subject.state.workflows();
    workflows
        .get_workflow_run(run_id)
        .await
        .expect("read")
        .expect("the run")
}

/// The dispatch of `stage`'s `attempt`, by its key.
async fn attempt_dispatch(subject: &Subject, run_id: &str, stage: &str, attempt: u32) -> Dispatch {
    let key = stage_key(run_id, stage, attempt);
    subject
        .state
        .get_dispatch(&key)
        .await
        .expect("read")
        .expect("the attempt's dispatch")
}

/// The callback of `collect`'s attempt 1, `succeeded`, at `now` (after it timed out).
async fn late_success_of_attempt_1(
    subject: &Subject,
    queue: &MemoryDispatchQueue,
    run_id: &str,
    now: UnixSeconds,
) -> RunProgress {
    let first = attempt_dispatch(subject, run_id, "collect", 1).await;
    callback(subject, queue, &first, StageStatus::Succeeded, now).await
}

/// `collect`'s current attempt reports `failed`, at 10.
async fn fail_collect(subject: &Subject, queue: &MemoryDispatchQueue, run_id: &str) -> RunProgress {
    report(
        subject,
        queue,
        run_id,
        "collect",
        StageStatus::Failed,
        Value::Null,
    )
    .await
}

/// `dispatch`'s callback (what the callback route calls once its task is recorded), at `now`.
async fn callback(
    subject: &Subject,
    queue: &MemoryDispatchQueue,
    dispatch: &Dispatch,
    status: StageStatus,
    now: UnixSeconds,
) -> RunProgress {
    let dispatcher = test_dispatcher(subject, queue);
    let result = json!({"from": dispatch.id});
    advance_workflow_on_callback(
        subject.state.as_ref(),
        &dispatcher,
        dispatch,
        status,
        Some(&result),
        now,
        &limits(),
    )
    .await
    .expect("advances")
    .expect("a workflow dispatch")
}

async fn a_stage_past_its_timeout_fails_once_and_a_late_report_changes_nothing(subject: Subject) {
    let record = two_stages(&subject, "timeout", |_| {}).await;
    let queue = MemoryDispatchQueue::new();
    let run_id = start(&subject, &queue, &record).await.run.id;
    assert_eq!(
        deadlines(&subject, &queue, PAST_A_DAY - 1).await,
        DeadlinePass::default()
    );

    let pass = deadlines(&subject, &queue, PAST_A_DAY).await;
    assert_eq!(
        pass,
        DeadlinePass {
            timed_out: 1,
            retried: 0
        }
    );
    let failed = run_of(&subject, &run_id).await;
    assert_eq!(failed.status, RunStatus::Failed);
    let collect = &failed.stages["collect"];
    assert_eq!((collect.status, collect.attempt), (StageStatus::Failed, 1));
    assert_eq!(
        collect.error.as_deref(),
        Some("attempt 1 timed out: no terminal report within its timeout of 24h")
    );
    assert_eq!(failed.stages["report"].status, StageStatus::Skipped);
    assert_eq!(
        deadlines(&subject, &queue, PAST_A_DAY + 60).await,
        DeadlinePass::default()
    );

    let late = late_success_of_attempt_1(&subject, &queue, &run_id, PAST_A_DAY + 61).await;
    assert!(!late.changed, "{late:#?}");
    assert!(late.dispatched.is_empty());
    assert_eq!(late.run, failed);
    assert_eq!(
        queue.messages().len(),
        1,
        "nothing dispatched after the timeout"
    );
}

/// Without a `running` report within the `heartbeat`, an attempt times out long before its
/// `timeout`; each `running` report restarts that clock.
async fn a_stage_without_a_heartbeat_times_out(subject: Subject) {
    let record = two_stages(&subject, "heartbeat", |s| s.heartbeat_seconds = Some(600)).await;
    let queue = MemoryDispatchQueue::new();
    let run_id = start(&subject, &queue, &record).await.run.id;
    let first = attempt_dispatch(&subject, &run_id, "collect", 1).await;
    let running = TaskReport {
        status: TaskStatus::Running,
        result: None,
    };
    report_task(subject.state.tasks(), &first.task_id, &running, 500)
        .await
        .expect("running");
    assert_eq!(
        deadlines(&subject, &queue, 1_100).await,
        DeadlinePass::default()
    );
    let pass = deadlines(&subject, &queue, 1_101).await;
    assert_eq!(pass.timed_out, 1);
    let collect = &run_of(&subject, &run_id).await.stages["collect"];
    assert_eq!(
        collect.error.as_deref(),
        Some("attempt 1 timed out: no running report within its heartbeat of 10m")
    );
}

/// A failed attempt with a retry left waits 30 s, then reconcile dispatches attempt 2
/// under a key of its own; the order of attempt 2 again records nothing new.
async fn a_retry_dispatches_attempt_2_under_a_new_key_once(subject: Subject) {
    let record = two_stages(&subject, "retry", |s| s.retries = 1).await;
    let queue = MemoryDispatchQueue::new();
    let run_id = start(&subject, &queue, &record).await.run.id;
    let failed = fail_collect(&subject, &queue, &run_id).await;
    assert_eq!(failed.run.status, RunStatus::Running);
    assert!(failed.dispatched.is_empty(), "the retry waits");
    let collect = &failed.run.stages["collect"];
    assert_eq!(
        (collect.status, collect.attempt, collect.retry_at),
        (StageStatus::Waiting, 2, Some(40))
    );
    assert_eq!(
        deadlines(&subject, &queue, 39).await,
        DeadlinePass::default()
    );

    let pass = deadlines(&subject, &queue, 40).await;
    assert_eq!(
        pass,
        DeadlinePass {
            timed_out: 0,
            retried: 1
        }
    );
    let second = attempt_dispatch(&subject, &run_id, "collect", 2).await;
    let first = attempt_dispatch(&subject, &run_id, "collect", 1).await;
    assert_ne!(first.id, second.id, "a retry is a new dispatch");
    assert_eq!(
        second.idempotency_key,
        format!("workflow-run:{run_id}:collect:2")
    );
    let retried = run_of(&subject, &run_id).await;
    let collect = &retried.stages["collect"];
    assert_eq!(
        (
            collect.status,
            collect.attempt,
            collect.dispatch_id.as_deref(),
            collect.dispatched_at
        ),
        (
            StageStatus::Dispatched,
            2,
            Some(second.id.as_str()),
            Some(40)
        )
    );
    assert_eq!(queue.messages().len(), 2);

    // The same order of attempt 2 (a redelivery, a racing advancer): one dispatch.
    let dispatcher = test_dispatcher(&subject, &queue);
    let order = StageDispatch {
        run_id: run_id.clone(),
        workflow: record.name.clone(),
        repository: record.repository.clone(),
        stage: "collect".to_owned(),
        agent: "triage".to_owned(),
        manifest: "agents/triage/astrolift.toml".to_owned(),
        skill_refs: Vec::new(),
        payload: None,
        env_spec: None,
        attempt: 2,
        idempotency_key: stage_key(&run_id, "collect", 2),
    };
    let again = dispatcher.dispatch(&order, 41).await.expect("recorded");
    assert_eq!(again, Ok(second.id.clone()));
    assert_eq!(queue.messages().len(), 2, "redelivered: nothing new queued");
    assert_eq!(
        deadlines(&subject, &queue, 41).await,
        DeadlinePass::default()
    );

    let done = callback(&subject, &queue, &second, StageStatus::Succeeded, 50).await;
    assert_eq!(
        dispatched(&done).len(),
        1,
        "the next stage, with attempt 2's result"
    );
    assert_eq!(done.run.stages["collect"].status, StageStatus::Succeeded);
}

/// A timed-out attempt is retried like a failed one; attempt 1's late report then changes
/// nothing, and attempt 2 running out of retries fails the run.
async fn retries_exhausted_fail_the_run(subject: Subject) {
    let record = two_stages(&subject, "exhausted", |s| s.retries = 1).await;
    let queue = MemoryDispatchQueue::new();
    let run_id = start(&subject, &queue, &record).await.run.id;
    assert_eq!(deadlines(&subject, &queue, PAST_A_DAY).await.timed_out, 1);
    let waiting = &run_of(&subject, &run_id).await.stages["collect"];
    assert_eq!((waiting.status, waiting.attempt), (StageStatus::Waiting, 2));
    assert_eq!(
        deadlines(&subject, &queue, PAST_A_DAY + 30).await.retried,
        1
    );

    let late = late_success_of_attempt_1(&subject, &queue, &run_id, PAST_A_DAY + 31).await;
    assert!(!late.changed);
    assert_eq!(late.run.stages["collect"].status, StageStatus::Dispatched);

    let second = attempt_dispatch(&subject, &run_id, "collect", 2).await;
    let failed = callback(
        &subject,
        &queue,
        &second,
        StageStatus::Failed,
        PAST_A_DAY + 40,
    )
    .await;
    assert_eq!(failed.run.status, RunStatus::Failed);
    let collect = &failed.run.stages["collect"];
    assert_eq!((collect.status, collect.attempt), (StageStatus::Failed, 2));
    assert_eq!(failed.run.stages["report"].status, StageStatus::Skipped);
    assert_eq!(
        deadlines(&subject, &queue, PAST_A_DAY + 3600).await,
        DeadlinePass::default()
    );
    assert_eq!(queue.messages().len(), 2);
}

/// Cancel skips the waiting stages of a running run; again it changes nothing; the
/// dispatched stage's late report dispatches nothing; a finished run is refused.
async fn cancel_skips_the_waiting_stages_once(subject: Subject) {
    let record = two_stages(&subject, "cancel", |s| s.retries = 2).await;
    let queue = MemoryDispatchQueue::new();
    let run_id = start(&subject, &queue, &record).await.run.id;
    let cancelled = cancel_run(subject.state.as_ref(), &run_id, 20)
        .await
        .expect("cancelled");
    assert!(cancelled.changed);
    assert_eq!(cancelled.run.status, RunStatus::Cancelled);
    assert_eq!(
        cancelled.run.stages["collect"].status,
        StageStatus::Dispatched
    );
    assert_eq!(cancelled.run.stages["report"].status, StageStatus::Skipped);
    let again = cancel_run(subject.state.as_ref(), &run_id, 21)
        .await
        .expect("idempotent");
    assert!(!again.changed);
    assert_eq!(again.run, cancelled.run);

    let first = attempt_dispatch(&subject, &run_id, "collect", 1).await;
    let late = callback(&subject, &queue, &first, StageStatus::Failed, 30).await;
    assert!(late.dispatched.is_empty(), "no retry in a cancelled run");
    assert_eq!(late.run.status, RunStatus::Cancelled);
    assert_eq!(late.run.stages["collect"].status, StageStatus::Failed);
    assert_eq!(
        deadlines(&subject, &queue, PAST_A_DAY).await,
        DeadlinePass::default()
    );
    assert_eq!(queue.messages().len(), 1);

    let finished = two_stages(&subject, "finished", |_| {}).await;
    let run_id = start(&subject, &queue, &finished).await.run.id;
    fail_collect(&subject, &queue, &run_id).await;
    let refused = cancel_run(subject.state.as_ref(), &run_id, 40).await;
    assert!(
        matches!(
            refused,
            Err(WorkflowError::Finished {
                status: "failed",
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(run_of(&subject, &run_id).await.status, RunStatus::Failed);
}

on_both_stores!(
    a_stage_past_its_timeout_fails_once_and_a_late_report_changes_nothing,
    a_stage_without_a_heartbeat_times_out,
    a_retry_dispatches_attempt_2_under_a_new_key_once,
    retries_exhausted_fail_the_run,
    cancel_skips_the_waiting_stages_once,
);
