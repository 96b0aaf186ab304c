//! The WorkspaceStore contract, run against SQLite and DynamoDB (moto): workspace
//! manifests registered with versions, and drift acceptances kept once per head sha and
//! manifest.

use astrolift_store::StoreError;
use astrolift_store::state::*;

use crate::state_contract::Subject;

const NOW: UnixSeconds = 1_767_225_600;

fn workspace(repository: &str, slug: &str, version: u64) -> WorkspaceRecord {
    WorkspaceRecord {
        repository: repository.into(),
        id: format!("workspace/{slug}"),
        manifest_path: format!("workspaces/{slug}.yaml"),
        status: WorkspaceStatus::Active,
        snapshot_hash: format!("{slug}{version}"),
        commit: "c1".into(),
        updated_at: NOW,
        version,
    }
}

pub async fn workspaces_are_registered_with_versions(subject: Subject) {
    let store = subject.store.workspaces();
    let repository = astrolift_store::testing::unique_name("octo/ws");
    store
        .put_workspace(&workspace(&repository, "triage", 1), None)
        .await
        .unwrap();
    store
        .put_workspace(&workspace(&repository, "brainstorm", 1), None)
        .await
        .unwrap();
    let again = store
        .put_workspace(&workspace(&repository, "triage", 1), None)
        .await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    let stale = store
        .put_workspace(&workspace(&repository, "triage", 3), Some(2))
        .await;
    assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");
    let mut orphaned = workspace(&repository, "triage", 2);
    orphaned.status = WorkspaceStatus::Orphaned;
    store.put_workspace(&orphaned, Some(1)).await.unwrap();

    let listed = store.list_workspaces(&repository).await.unwrap();
    let ids: Vec<(&str, u64)> = listed.iter().map(|w| (w.id.as_str(), w.version)).collect();
    assert_eq!(ids, [("workspace/brainstorm", 1), ("workspace/triage", 2)]);
    assert_eq!(listed[1], orphaned);
    let other = store.list_workspaces("octo/other").await.unwrap();
    assert!(other.is_empty());
}

pub async fn the_first_drift_acceptance_of_a_head_is_kept(subject: Subject) {
    let store = subject.store.workspaces();
    let repository = astrolift_store::testing::unique_name("octo/ws");
    let changes = ["credential-removed GITHUB_TOKEN".to_owned()];
    let accept = |path: &str, head: &str, login: &str| {
        let who = Acceptor {
            login,
            role: "write",
        };
        drift_acceptance(&repository, path, head, who, &changes, NOW)
    };
    let first = accept("workspaces/triage.yaml", "head-1", "mona");
    assert_eq!(store.accept_drift(&first).await.unwrap(), first);
    let late = accept("workspaces/triage.yaml", "head-1", "hubot");
    assert_eq!(store.accept_drift(&late).await.unwrap(), first);
    let other_manifest = accept("astrolift.workspace.yaml", "head-1", "hubot");
    store.accept_drift(&other_manifest).await.unwrap();
    store
        .accept_drift(&accept("workspaces/triage.yaml", "head-2", "mona"))
        .await
        .unwrap();

    let at_head = store
        .list_drift_acceptances(&repository, "head-1")
        .await
        .unwrap();
    assert_eq!(at_head, [other_manifest, first]);
    let logins: Vec<Option<&str>> = at_head.iter().map(accepted_by).collect();
    assert_eq!(logins, [Some("hubot"), Some("mona")]);
    assert_eq!(
        at_head[1].detail,
        "accepted by @mona (write): credential-removed GITHUB_TOKEN"
    );
    assert!(
        at_head
            .iter()
            .all(|event| event.action == AuditAction::DriftAccepted)
    );
    let elsewhere = store
        .list_drift_acceptances(&repository, "head-3")
        .await
        .unwrap();
    assert!(elsewhere.is_empty(), "a new head needs a new acceptance");
}

concurrent_contract_tests!(
    workspaces_are_registered_with_versions,
    the_first_drift_acceptance_of_a_head_is_kept,
);
