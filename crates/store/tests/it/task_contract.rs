//! The TaskStore contract, run against SQLite and DynamoDB (moto): a dispatch's task is
//! created with it, found by task id and by dispatch id, follows the callback lifecycle
//! (`running` any number of times, one terminal report), keeps the hash of the latest
//! render's key, and of two concurrent terminal reports exactly one wins.

use std::sync::Arc;

use astrolift_store::state::tasks::{record_render, report_task};
use astrolift_store::state::*;
use astrolift_store::{StateStore, StoreError};

use crate::state_contract::Subject;

const NOW: UnixSeconds = 1_767_225_600;

pub fn dispatch(name: &str) -> Dispatch {
    let id = astrolift_store::testing::unique_name(name);
    Dispatch {
        id: format!("d-{id}"),
        idempotency_key: format!("manual:octo/agents:a.toml:key:{id}"),
        trigger_id: "manual".into(),
        repository: "octo/agents".into(),
        manifest_path: "agents/triage/astrolift.toml".into(),
        snapshot_hash: "snap-triage".into(),
        payload: None,
        created_at: NOW,
        status: DispatchStatus::Pending,
        sender: None,
        trusted: true,
        task_id: format!("task-{id}"),
        env_spec: None,
        message: Some("{\"schema\":\"astrolift.dispatch/v1\"}".into()),
        report: None,
    }
}

fn report(status: TaskStatus, result: Option<&str>) -> TaskReport {
    TaskReport {
        status,
        result: result.map(str::to_owned),
    }
}

async fn recorded(store: &dyn StateStore, name: &str) -> Dispatch {
    let dispatch = dispatch(name);
    assert_eq!(
        store.record_dispatch(&dispatch).await.unwrap(),
        DispatchOutcome::New
    );
    dispatch
}

pub async fn a_dispatch_has_a_queued_task(subject: Subject) {
    let store = subject.store;
    let dispatch = recorded(store.as_ref(), "queued").await;
    let task = store.tasks().get_task(&dispatch.task_id).await.unwrap();
    assert_eq!(task, Some(DispatchTask::queued(&dispatch)));
    let by_id = store.tasks().get_dispatch_task(&dispatch.id).await.unwrap();
    assert_eq!(by_id, task);
    assert_eq!(store.tasks().get_task("no-such-task").await.unwrap(), None);
    assert_eq!(
        store.tasks().get_dispatch_task("d-none").await.unwrap(),
        None
    );
    // A duplicate records no second task.
    let retry = Dispatch {
        id: "d-retry".into(),
        task_id: "task-retry".into(),
        ..dispatch.clone()
    };
    assert_eq!(
        store.record_dispatch(&retry).await.unwrap(),
        DispatchOutcome::Existing(dispatch.id.clone())
    );
    assert_eq!(store.tasks().get_task("task-retry").await.unwrap(), None);
    assert_eq!(
        store.tasks().get_dispatch_task("d-retry").await.unwrap(),
        None
    );
}

pub async fn renders_keep_the_latest_key_hash(subject: Subject) {
    let store = subject.store;
    let dispatch = recorded(store.as_ref(), "render").await;
    let tasks = store.tasks();
    let first = record_render(tasks, &dispatch.task_id, Some("aa"), NOW + 1)
        .await
        .unwrap();
    assert_eq!(
        (
            first.cluster_key_sha256.as_deref(),
            first.renders,
            first.version
        ),
        (Some("aa"), 1, 2)
    );
    let second = record_render(tasks, &dispatch.task_id, Some("bb"), NOW + 2)
        .await
        .unwrap();
    assert_eq!(
        (second.cluster_key_sha256.as_deref(), second.renders),
        (Some("bb"), 2)
    );
    assert_eq!(
        tasks.get_task(&dispatch.task_id).await.unwrap(),
        Some(second)
    );
    let missing = record_render(tasks, "no-such-task", Some("cc"), NOW).await;
    assert!(
        matches!(missing, Err(StoreError::NotFound(_))),
        "{missing:?}"
    );
}

pub async fn a_task_runs_then_finishes_once(subject: Subject) {
    let store = subject.store;
    let dispatch = recorded(store.as_ref(), "lifecycle").await;
    let tasks = store.tasks();
    let task_id = dispatch.task_id.as_str();
    for at in [NOW + 1, NOW + 2] {
        let outcome = report_task(tasks, task_id, &report(TaskStatus::Running, None), at)
            .await
            .unwrap();
        let ReportOutcome::Recorded(task) = outcome else {
            panic!("running is recorded before a terminal status: {outcome:?}");
        };
        assert_eq!(
            (task.status, task.updated_at, task.running_at),
            (TaskStatus::Running, at, Some(at))
        );
    }
    let done = report_task(
        tasks,
        task_id,
        &report(TaskStatus::Succeeded, Some("{\"ok\":true}")),
        NOW + 3,
    )
    .await
    .unwrap();
    let ReportOutcome::Recorded(done) = done else {
        panic!("the first terminal report is recorded: {done:?}");
    };
    assert_eq!(
        (done.status, done.result.as_deref(), done.finished_at),
        (TaskStatus::Succeeded, Some("{\"ok\":true}"), Some(NOW + 3))
    );
    // A terminal report keeps the time of the last `running` one (a stage's heartbeat).
    assert_eq!(done.running_at, Some(NOW + 2));
    for late in [
        report(TaskStatus::Failed, Some("{}")),
        report(TaskStatus::Running, None),
        report(TaskStatus::Succeeded, None),
    ] {
        let outcome = report_task(tasks, task_id, &late, NOW + 4).await.unwrap();
        assert_eq!(outcome, ReportOutcome::AlreadyFinished(done.clone()));
    }
    assert_eq!(tasks.get_task(task_id).await.unwrap(), Some(done));
    let render = record_render(tasks, task_id, Some("dd"), NOW + 5).await;
    assert!(matches!(render, Err(StoreError::Conflict(_))), "{render:?}");
    let queued = report_task(tasks, task_id, &report(TaskStatus::Queued, None), NOW).await;
    assert!(matches!(queued, Err(StoreError::Invalid(_))), "{queued:?}");
    let unknown = report_task(
        tasks,
        "no-such-task",
        &report(TaskStatus::Failed, None),
        NOW,
    )
    .await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound(_))),
        "{unknown:?}"
    );
}

pub async fn updates_are_conditional_on_the_version(subject: Subject) {
    let store = subject.store;
    let dispatch = recorded(store.as_ref(), "version").await;
    let mut next = DispatchTask::queued(&dispatch);
    next.version = 2;
    next.status = TaskStatus::Running;
    store.tasks().update_task(&next, 1).await.unwrap();
    let stale = store.tasks().update_task(&next, 1).await;
    assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");
    let mut absent = next.clone();
    absent.task_id = "no-such-task".into();
    let missing = store.tasks().update_task(&absent, 1).await;
    assert!(
        matches!(missing, Err(StoreError::Conflict(_))),
        "{missing:?}"
    );
}

/// Two terminal reports race: exactly one is recorded, the other finds it finished.
pub async fn concurrent_terminal_reports_record_one(subject: Subject) {
    let store: Arc<dyn StateStore> = subject.store;
    let dispatch = recorded(store.as_ref(), "race").await;
    let attempts: Vec<_> = [TaskStatus::Succeeded, TaskStatus::Failed]
        .into_iter()
        .map(|status| {
            let store = Arc::clone(&store);
            let task_id = dispatch.task_id.clone();
            tokio::spawn(async move {
                report_task(store.tasks(), &task_id, &report(status, Some("1")), NOW).await
            })
        })
        .collect();
    let mut winners = Vec::new();
    let mut finished = Vec::new();
    for attempt in attempts {
        match attempt.await.unwrap().unwrap() {
            ReportOutcome::Recorded(task) => winners.push(task),
            ReportOutcome::AlreadyFinished(task) => finished.push(task),
        }
    }
    assert_eq!((winners.len(), finished.len()), (1, 1));
    assert_eq!(winners, finished, "the loser sees the winner's report");
    let stored = store.tasks().get_task(&dispatch.task_id).await.unwrap();
    assert_eq!(stored.as_ref(), winners.first());
}

concurrent_contract_tests!(
    a_dispatch_has_a_queued_task,
    renders_keep_the_latest_key_hash,
    a_task_runs_then_finishes_once,
    updates_are_conditional_on_the_version,
    concurrent_terminal_reports_record_one,
);
