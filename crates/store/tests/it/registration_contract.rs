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

/// `previews` is stored and read with the registration: on, off again when the
/// registration is written again without it, and off on a record written before it
/// existed. The record's JSON always names it.
pub async fn registrations_record_whether_they_have_previews(subject: Subject) {
    let store = subject.store;
    let repo = astrolift_store::testing::unique_name("octo/previews");
    let narrow = "agents/a/astrolift.toml";
    let with_previews = RepoRegistration {
        previews: true,
        ..registration(&repo, Some(narrow), "proj-1")
    };
    store.put_registration(&with_previews).await.unwrap();
    assert_eq!(
        store.list_repository_registrations(&repo).await.unwrap(),
        vec![with_previews.clone()]
    );
    let json = serde_json::to_value(&with_previews).unwrap();
    assert_eq!(json["previews"], serde_json::json!(true));
    // Registering again writes the whole record: without the flag, previews are off.
    let without = registration(&repo, Some(narrow), "proj-1");
    store.put_registration(&without).await.unwrap();
    let read = store.list_repository_registrations(&repo).await.unwrap();
    assert_eq!(read, vec![without.clone()]);
    assert!(!read[0].previews);
    assert_eq!(
        serde_json::to_value(&read[0]).unwrap()["previews"],
        serde_json::json!(false)
    );

    // Written before registrations had `previews`: read as off.
    let legacy_repo = astrolift_store::testing::unique_name("octo/legacy-previews");
    let legacy = serde_json::json!({
        "repository": legacy_repo,
        "installation_id": 42,
        "project_id": "proj-1",
        "registered_ref": "main",
        "manifest_path": null,
        "updated_at": NOW,
    });
    put_raw(
        store.as_ref(),
        RawKey {
            sqlite_insert: "INSERT INTO repository_registrations (repository, manifest_path, body)
                            VALUES (?1, ?2, ?3)",
            sqlite_keys: &[&legacy_repo, ""],
            dynamo_pk: "REGISTRATIONS",
            dynamo_sk: &legacy_repo,
        },
        legacy,
    )
    .await;
    let read = store.get_registration(&legacy_repo).await.unwrap().unwrap();
    assert_eq!(read, registration(&legacy_repo, None, "proj-1"));
    assert!(!read.previews);
}

state_contract_tests!(
    registrations_round_trip,
    registrations_are_keyed_by_manifest,
    last_sync_is_recorded_on_existing_registrations_only,
    registrations_record_whether_they_have_previews,
);
