//! The SeenHeadStore contract, run against SQLite and DynamoDB (moto): the head (and its
//! `ETag`) reconcile last saw, keyed by (repository, ref).

use astrolift_store::state::*;

use crate::state_contract::Subject;

const NOW: UnixSeconds = 1_767_225_600;

fn seen(repository: &str, git_ref: &str, commit: &str, etag: Option<&str>) -> SeenHead {
    SeenHead {
        repository: repository.into(),
        git_ref: git_ref.into(),
        commit: commit.into(),
        etag: etag.map(str::to_owned),
        checked_at: NOW,
    }
}

/// A head put, read back, replaced; other refs and repositories are other records.
pub async fn seen_heads_are_keyed_by_repository_and_ref(subject: Subject) {
    let store = subject.store.seen_heads();
    let repo = astrolift_store::testing::unique_name("acme/agents");
    let other = astrolift_store::testing::unique_name("acme/other");
    assert_eq!(store.get_seen_head(&repo, "main").await.unwrap(), None);
    let main = seen(&repo, "main", &"a".repeat(40), Some("\"etag-a\""));
    let feature = seen(&repo, "feature/x", &"b".repeat(40), None);
    let elsewhere = seen(&other, "main", &"c".repeat(40), Some("W/\"c\""));
    for head in [&main, &feature, &elsewhere] {
        store.put_seen_head(head).await.unwrap();
    }
    assert_eq!(
        store.get_seen_head(&repo, "main").await.unwrap(),
        Some(main.clone())
    );
    assert_eq!(
        store.get_seen_head(&repo, "feature/x").await.unwrap(),
        Some(feature)
    );
    assert_eq!(
        store.get_seen_head(&other, "main").await.unwrap(),
        Some(elsewhere)
    );
    assert_eq!(store.get_seen_head(&repo, "Main").await.unwrap(), None);
    let moved = SeenHead {
        commit: "d".repeat(40),
        etag: Some("\"etag-d\"".into()),
        checked_at: NOW + 600,
        ..main
    };
    store.put_seen_head(&moved).await.unwrap();
    assert_eq!(
        store.get_seen_head(&repo, "main").await.unwrap(),
        Some(moved)
    );
}

concurrent_contract_tests!(seen_heads_are_keyed_by_repository_and_ref,);
