//! The WorkflowStore contract, run against SQLite and DynamoDB (moto):
//! conditional registration, runs that move only from the version read, and
//! a stage report that is stored once whatever races it.

use std::collections::BTreeMap;
use std::sync::Arc;

use astrolift_store::state::*;
use astrolift_store::{StateStore, StoreError};

use crate::state_contract::Subject;

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
    }
}

fn run(id: &str) -> WorkflowRun {
    let stages = BTreeMap::from([
        (
            "collect".to_owned(),
            StageState {
                status: StageStatus::Dispatched,
                dispatch_id: Some("d-1".into()),
                error: None,
            },
        ),
        (
            "report".to_owned(),
            StageState {
                status: StageStatus::Waiting,
                dispatch_id: None,
                error: None,
            },
        ),
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
        status,
        result: Some(result.into()),
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

concurrent_contract_tests!(
    workflows_are_registered_with_versions,
    runs_move_only_from_the_version_read,
    concurrent_run_updates_store_one,
    the_first_stage_report_wins,
);
