//! The RegistrationStore contract, run against SQLite and DynamoDB (moto): registrations keyed by repository and manifest, and the last sync recorded on existing ones only.

use astrolift_store::StoreError;
use astrolift_store::state::*;

use crate::state_contract::*;

/// A registration and one of another repository, read back and listed in order.
pub async fn registrations_round_trip(subject: Subject) {
    let store = subject.store;
    assert_eq!(store.get_registration(REPO).await.unwrap(), None);
    let registration = RepoRegistration {
        repository: REPO.into(),
        installation_id: Some(42),
        project_id: "proj-1".into(),
        registered_ref: "main".into(),
        manifest_path: None,
        updated_at: NOW,
        last_sync: None,
        previews: false,
    };
    store.put_registration(&registration).await.unwrap();
    let other = RepoRegistration {
        repository: "a/b".into(),
        manifest_path: Some("x/astrolift.toml".into()),
        ..registration.clone()
    };
    store.put_registration(&other).await.unwrap();
    assert_eq!(
        store.get_registration(REPO).await.unwrap(),
        Some(registration.clone())
    );
    assert_eq!(
        store.list_registrations().await.unwrap(),
        vec![other, registration]
    );
}

/// Registrations are keyed by (repository, manifest path): a monorepo holds one per manifest,
/// a manifest is covered by at most one, and an overlapping write is refused with nothing
/// written.
pub async fn registrations_are_keyed_by_manifest(subject: Subject) {
    let store = subject.store;
    let repo = astrolift_store::testing::unique_name("mono/repo");
    let a = registration(&repo, Some("agents/a/astrolift.toml"), "proj-a");
    let b = registration(&repo, Some("agents/b/astrolift.toml"), "proj-b");
    store.put_registration(&b).await.unwrap();
    store.put_registration(&a).await.unwrap();
    assert_eq!(
        store.list_repository_registrations(&repo).await.unwrap(),
        vec![a.clone(), b.clone()]
    );
    assert_eq!(store.get_registration(&repo).await.unwrap(), None);
    let listed: Vec<_> = store
        .list_registrations()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.repository == repo)
        .collect();
    assert_eq!(listed, vec![a.clone(), b.clone()]);

    // Every manifest would cover a and b: refused, nothing written.
    let whole = registration(&repo, None, "proj-c");
    let writes = store.stats().writes;
    let err = store.put_registration(&whole).await.unwrap_err();
    assert!(matches!(err, StoreError::Overlap(_)), "{err:?}");
    assert!(err.to_string().contains("agents/"), "{err}");
    assert_eq!(store.stats().writes, writes);
    // The same key replaces.
    let moved = RepoRegistration {
        registered_ref: "release".into(),
        ..a.clone()
    };
    store.put_registration(&moved).await.unwrap();
    let registrations = store.list_repository_registrations(&repo).await.unwrap();
    assert_eq!(registrations, vec![moved.clone(), b.clone()]);
    assert_eq!(
        covering_registration(&registrations, "agents/b/astrolift.toml"),
        Some(&b)
    );
    assert_eq!(
        covering_registration(&registrations, "astrolift.toml"),
        None
    );

    assert!(
        store
            .delete_registration(&repo, Some("agents/a/astrolift.toml"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_registration(&repo, Some("agents/a/astrolift.toml"))
            .await
            .unwrap()
    );
    assert!(
        store
            .delete_registration(&repo, Some("agents/b/astrolift.toml"))
            .await
            .unwrap()
    );
    store.put_registration(&whole).await.unwrap();
    assert_eq!(
        store.get_registration(&repo).await.unwrap(),
        Some(whole.clone())
    );
    let err = store.put_registration(&a).await.unwrap_err();
    assert!(matches!(err, StoreError::Overlap(_)), "{err:?}");
    assert_eq!(
        store.list_repository_registrations(&repo).await.unwrap(),
        vec![whole.clone()]
    );
    // Another repository is not affected by this one's registrations.
    let other = registration(
        &format!("{repo}-other"),
        Some("agents/a/astrolift.toml"),
        "x",
    );
    store.put_registration(&other).await.unwrap();
    assert!(store.delete_registration(&repo, None).await.unwrap());
}

/// `record_last_sync` sets what a sync learnt on an existing registration, leaves the rest of
/// it as stored, and never creates one (a registration removed meanwhile stays removed).
pub async fn last_sync_is_recorded_on_existing_registrations_only(subject: Subject) {
    let store = subject.store;
    let repo = "octo/last-sync";
    let whole = registration(repo, None, "proj-1");
    store.put_registration(&whole).await.unwrap();
    let last_sync = LastSync {
        repository_id: 77,
        skill_sources: vec![SkillSource {
            repository: "steadymd/runbooks".into(),
            git_ref: "main".into(),
        }],
    };
    assert!(
        store
            .record_last_sync(repo, None, &last_sync)
            .await
            .unwrap()
    );
    let read = store.get_registration(repo).await.unwrap().unwrap();
    let expected = RepoRegistration {
        last_sync: Some(last_sync.clone()),
        ..whole.clone()
    };
    assert_eq!(read, expected);
    assert_eq!(store.list_registrations().await.unwrap(), vec![expected]);
    // Another key: none there, none created.
    let narrow = Some("agents/a/astrolift.toml");
    assert!(
        !store
            .record_last_sync(repo, narrow, &last_sync)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_last_sync("octo/none", None, &last_sync)
            .await
            .unwrap()
    );
    assert_eq!(store.list_registrations().await.unwrap().len(), 1);
    // Registering again replaces it whole: the next sync records it again.
    store.put_registration(&whole).await.unwrap();
    let read = store.get_registration(repo).await.unwrap().unwrap();
    assert_eq!(read.last_sync, None);
    assert!(store.delete_registration(repo, None).await.unwrap());
    assert!(
        !store
            .record_last_sync(repo, None, &last_sync)
            .await
            .unwrap()
    );
    assert_eq!(store.get_registration(repo).await.unwrap(), None);
}

state_contract_tests!(
    registrations_round_trip,
    registrations_are_keyed_by_manifest,
    last_sync_is_recorded_on_existing_registrations_only,
);
