//! The WorkflowStore contract, run against SQLite and DynamoDB (moto):
//! conditional registration, runs that move only from the version read, the
//! running runs listed until they end, and a stage attempt's report that is
//! stored once whatever races it.

use std::collections::BTreeMap;
use std::sync::Arc;

use astrolift_store::state::*;
use astrolift_store::{StateStore, StoreError};

use crate::state_contract::{RawKey, Subject, put_raw};

const NOW: UnixSeconds = 1_767_225_600;

fn workflow(repository: &str, name: &str, version: u64) -> WorkflowRecord {
    WorkflowRecord {
        repository: repository.into(),
        name: name.into(),
        path: format!("workflows/{name}.toml"),
        status: WorkflowStatus::Active,
        content_hash: format!("sha256:{name}{version}"),
        definition: format!("{{\"name\":\"{name}\"}}"),
        commit: "c1".into(),
        updated_at: NOW,
        version,
        state_machine_arn: None,
        retired_state_machines: Vec::new(),
    }
}

fn run(id: &str) -> WorkflowRun {
    let stages = BTreeMap::from([
        (
            "collect".to_owned(),
            StageState {
                status: StageStatus::Dispatched,
                attempt: 2,
                dispatch_id: Some("d-1".into()),
                dispatched_at: Some(NOW),
                retry_at: None,
                error: Some("attempt 1 timed out".into()),
                task_token: None,
            },
        ),
        ("report".to_owned(), StageState::waiting()),
    ]);
    WorkflowRun {
        id: id.into(),
        repository: "octo/agents".into(),
        workflow: "triage".into(),
        content_hash: "sha256:x".into(),
        definition: "{}".into(),
        input: "{\"issue\":1}".into(),
        status: RunStatus::Running,
        stages,
        created_at: NOW,
        updated_at: NOW,
        version: 1,
    }
}

fn report(run_id: &str, status: StageStatus, result: &str) -> StageResult {
    StageResult {
        run_id: run_id.into(),
        stage: "collect".into(),
        attempt: 1,
        status,
        result: Some(result.into()),
        error: None,
        reported_at: NOW,
    }
}

pub async fn workflows_are_registered_with_versions(subject: Subject) {
    let store = subject.store.workflows();
    let repository = astrolift_store::testing::unique_name("octo/flows");
    store
        .put_workflow(&workflow(&repository, "zeta", 1), None)
        .await
        .unwrap();
    store
        .put_workflow(&workflow(&repository, "alpha", 1), None)
        .await
        .unwrap();
    let names: Vec<String> = store
        .list_workflows(&repository)
        .await
        .unwrap()
        .into_iter()
        .map(|w| w.name)
        .collect();
    assert_eq!(names, ["alpha", "zeta"]);
    assert!(
        store
            .list_workflows("someone/else")
            .await
            .unwrap()
            .is_empty()
    );

    let again = store
        .put_workflow(&workflow(&repository, "alpha", 1), None)
        .await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    let mut changed = workflow(&repository, "alpha", 2);
    changed.status = WorkflowStatus::Orphaned;
    store.put_workflow(&changed, Some(1)).await.unwrap();
    let stale = store
        .put_workflow(&workflow(&repository, "alpha", 2), Some(1))
        .await;
    assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");
    let stored = store.get_workflow(&repository, "alpha").await.unwrap();
    assert_eq!(stored, Some(changed));
    assert_eq!(store.get_workflow(&repository, "nope").await.unwrap(), None);
}

pub async fn runs_move_only_from_the_version_read(subject: Subject) {
    let store = subject.store.workflows();
    let id = astrolift_store::testing::unique_name("run");
    let first = run(&id);
    store.create_workflow_run(&first).await.unwrap();
    let twice = store.create_workflow_run(&first).await;
    assert!(matches!(twice, Err(StoreError::Conflict(_))), "{twice:?}");

    let mut next = first.clone();
    next.version = 2;
    next.status = RunStatus::Failed;
    store.update_workflow_run(&next, 1).await.unwrap();
    let stale = store.update_workflow_run(&next, 1).await;
    assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");
    assert_eq!(store.get_workflow_run(&id).await.unwrap(), Some(next));
    let missing = store.update_workflow_run(&run("no-such-run"), 0).await;
    assert!(
        matches!(missing, Err(StoreError::Conflict(_))),
        "{missing:?}"
    );
}

/// Two updates from the same version race: exactly one is stored.
pub async fn concurrent_run_updates_store_one(subject: Subject) {
    let store: Arc<dyn StateStore> = subject.store;
    let id = astrolift_store::testing::unique_name("run");
    store
        .workflows()
        .create_workflow_run(&run(&id))
        .await
        .unwrap();
    let attempts: Vec<_> = [RunStatus::Succeeded, RunStatus::Failed]
        .into_iter()
        .map(|status| {
            let store = Arc::clone(&store);
            let mut next = run(&id);
            next.version = 2;
            next.status = status;
            tokio::spawn(async move { store.workflows().update_workflow_run(&next, 1).await })
        })
        .collect();
    let mut stored = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(()) => stored += 1,
            Err(StoreError::Conflict(_)) => {}
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(stored, 1);
    let after = store.workflows().get_workflow_run(&id).await.unwrap();
    assert_eq!(after.map(|r| r.version), Some(2));
}

pub async fn the_first_stage_report_wins(subject: Subject) {
    let store = subject.store.workflows();
    let id = astrolift_store::testing::unique_name("run");
    let first = report(&id, StageStatus::Succeeded, "{\"ok\":true}");
    assert_eq!(store.put_stage_result(&first).await.unwrap(), first);
    let late = report(&id, StageStatus::Failed, "{\"ok\":false}");
    assert_eq!(store.put_stage_result(&late).await.unwrap(), first);
    let mut other = report(&id, StageStatus::Cancelled, "null");
    other.stage = "another".into();
    store.put_stage_result(&other).await.unwrap();
    let stages: Vec<String> = store
        .list_stage_results(&id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.stage)
        .collect();
    assert_eq!(stages, ["another", "collect"]);
}

/// Each attempt of a stage keeps its own first report; a report written before attempts
/// were counted is attempt 1's.
pub async fn each_attempt_keeps_its_first_report(subject: Subject) {
    let store = subject.store.workflows();
    let id = astrolift_store::testing::unique_name("run");
    let legacy = serde_json::json!({
        "run_id": id, "stage": "collect", "status": "failed", "reported_at": NOW,
    });
    put_raw(
        subject.store.as_ref(),
        RawKey {
            sqlite_insert: "INSERT INTO workflow_stage_results (run_id, stage, body) VALUES (?1, ?2, ?3)",
            sqlite_keys: &[&id, "collect"],
            dynamo_pk: &format!("WFRUN#{id}"),
            dynamo_sk: "RESULT#collect",
        },
        legacy,
    )
    .await;
    let first = StageResult {
        status: StageStatus::Failed,
        result: None,
        ..report(&id, StageStatus::Failed, "")
    };
    let late = report(&id, StageStatus::Succeeded, "{\"late\":true}");
    assert_eq!(store.put_stage_result(&late).await.unwrap(), first);

    let mut timed_out = report(&id, StageStatus::Failed, "null");
    (timed_out.attempt, timed_out.result) = (2, None);
    timed_out.error = Some("attempt 2 timed out".into());
    assert_eq!(store.put_stage_result(&timed_out).await.unwrap(), timed_out);
    let mut callback = report(&id, StageStatus::Succeeded, "{}");
    callback.attempt = 2;
    assert_eq!(store.put_stage_result(&callback).await.unwrap(), timed_out);
    let mut third = report(&id, StageStatus::Succeeded, "{\"n\":3}");
    third.attempt = 3;
    store.put_stage_result(&third).await.unwrap();
    let mut other = report(&id, StageStatus::Succeeded, "null");
    other.stage = "collect-more".into();
    store.put_stage_result(&other).await.unwrap();
    let listed: Vec<(String, u32)> = store
        .list_stage_results(&id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.stage, r.attempt))
        .collect();
    let expected = [
        ("collect", 1),
        ("collect", 2),
        ("collect", 3),
        ("collect-more", 1),
    ];
    assert_eq!(listed, expected.map(|(s, a)| (s.to_owned(), a)));
}

/// A run is listed as running from its creation until the write that ends it; a run
/// record written before attempts were counted reads as each stage's attempt 1.
pub async fn running_runs_are_listed_until_they_end(subject: Subject) {
    let store = subject.store.workflows();
    let ids: Vec<String> = (0..3)
        .map(|_| astrolift_store::testing::unique_name("run"))
        .collect();
    for id in &ids {
        store.create_workflow_run(&run(id)).await.unwrap();
    }
    let mut ended = run(&ids[1]);
    (ended.version, ended.status) = (2, RunStatus::Cancelled);
    store.update_workflow_run(&ended, 1).await.unwrap();
    let mut moved = run(&ids[2]);
    moved.version = 2;
    moved.stages.insert("report".into(), StageState::waiting());
    store.update_workflow_run(&moved, 1).await.unwrap();
    let running = |runs: Vec<WorkflowRun>| -> Vec<WorkflowRun> {
        runs.into_iter().filter(|r| ids.contains(&r.id)).collect()
    };
    let mut expected = vec![run(&ids[0]), moved.clone()];
    expected.sort_by(|a, b| a.id.cmp(&b.id));
    let listed = store.list_running_workflow_runs().await.unwrap();
    assert_eq!(running(listed), expected);
    let mut done = moved;
    (done.version, done.status) = (3, RunStatus::Succeeded);
    store.update_workflow_run(&done, 2).await.unwrap();
    let listed = store.list_running_workflow_runs().await.unwrap();
    assert_eq!(running(listed), [run(&ids[0])]);

    let legacy_id = astrolift_store::testing::unique_name("run");
    let mut legacy = serde_json::to_value(run(&legacy_id)).unwrap();
    for stage in ["collect", "report"] {
        let fields = legacy["stages"][stage].as_object_mut().unwrap();
        for field in ["attempt", "dispatched_at", "error"] {
            fields.remove(field);
        }
    }
    put_raw(
        subject.store.as_ref(),
        RawKey {
            sqlite_insert: "INSERT INTO workflow_runs (id, version, body) VALUES (?1, 1, ?2)",
            sqlite_keys: &[&legacy_id],
            dynamo_pk: &format!("WFRUN#{legacy_id}"),
            dynamo_sk: "RUN",
        },
        legacy,
    )
    .await;
    let read = store.get_workflow_run(&legacy_id).await.unwrap().unwrap();
    let collect = &read.stages["collect"];
    assert_eq!((collect.attempt, collect.dispatched_at), (1, None));
    assert_eq!(read.stages["report"], StageState::waiting());
}

concurrent_contract_tests!(
    workflows_are_registered_with_versions,
    runs_move_only_from_the_version_read,
    concurrent_run_updates_store_one,
    the_first_stage_report_wins,
    each_attempt_keeps_its_first_report,
    running_runs_are_listed_until_they_end,
);
