//! The PreviewStore contract, run against SQLite and DynamoDB (moto): pull requests'
//! previews keyed by (repository, manifest path, pull request), found by (project, name),
//! torn down with one `preview-closed` event each, and an agent's teardown taking its
//! previews with it.

use astrolift_store::state::*;

use crate::state_contract::*;

const TRIAGE: &str = "agents/triage/astrolift.toml";
const REVIEW: &str = "agents/review/astrolift.toml";

fn preview(repository: &str, manifest: &str, agent: &str, pull_request: u64) -> Preview {
    Preview {
        repository: repository.into(),
        manifest_path: manifest.into(),
        pull_request,
        project_id: "proj-1".into(),
        agent: agent.into(),
        name: preview_name(agent, pull_request),
        head_sha: format!("{pull_request:0>40}"),
        snapshot_hash: format!("snap-{agent}-{pull_request}"),
        payload_digest: format!("sha256:{agent}-{pull_request}"),
        layer_key: None,
        status: PreviewStatus::Active,
        fork_approved_by: None,
        pushed_at: NOW,
        updated_at: NOW,
        version: 1,
    }
}

/// Puts each and returns what was stored.
async fn put_all(store: &dyn PreviewStore, previews: &[Preview]) -> Vec<Preview> {
    let mut stored = Vec::new();
    for preview in previews {
        stored.push(store.put_preview(preview).await.unwrap());
    }
    stored
}

/// A put creates at version 1, a put again replaces at the stored version + 1 and active
/// whatever the record given says; a repository's listing is its previews alone, in (pull
/// request, manifest path) order, read by key.
pub async fn previews_are_put_read_and_listed_by_key(subject: Subject) {
    let state = subject.store.as_ref();
    // An agent in the same repository: the listing reads previews only.
    state.apply(first_registration()).await.unwrap();
    let store = state.previews();
    assert_eq!(store.get_preview(REPO, TRIAGE, 10).await.unwrap(), None);
    let other = astrolift_store::testing::unique_name("octo/other");
    let put = put_all(
        store,
        &[
            preview(REPO, TRIAGE, "triage", 10),
            preview(REPO, REVIEW, "review", 2),
            preview(REPO, TRIAGE, "triage", 2),
            preview(&other, TRIAGE, "triage", 1),
        ],
    )
    .await;
    assert!(put.iter().all(|p| p.version == 1), "{put:?}");
    assert_eq!(
        store.get_preview(REPO, TRIAGE, 10).await.unwrap(),
        Some(put[0].clone())
    );
    // Another pull request, manifest or repository is another record.
    assert_eq!(store.get_preview(REPO, TRIAGE, 3).await.unwrap(), None);
    assert_eq!(
        store.get_preview(REPO, "astrolift.toml", 10).await.unwrap(),
        None
    );

    // The store sets the version and the status, whatever the record says.
    let moved = Preview {
        head_sha: "b".repeat(40),
        snapshot_hash: "snap-triage-10-b".into(),
        layer_key: Some("layer-1".into()),
        fork_approved_by: Some("octocat".into()),
        status: PreviewStatus::TornDown,
        version: 99,
        pushed_at: NOW + 60,
        updated_at: NOW + 60,
        ..put[0].clone()
    };
    let replaced = store.put_preview(&moved).await.unwrap();
    assert_eq!(
        replaced,
        Preview {
            status: PreviewStatus::Active,
            version: 2,
            ..moved
        }
    );
    assert_eq!(
        store.get_preview(REPO, TRIAGE, 10).await.unwrap(),
        Some(replaced.clone())
    );

    let (listed, (reads, records)) = counted(state, store.list_previews(REPO)).await;
    let listed = listed.unwrap();
    // Pull request 2 before 10: numbers, not text, order the listing.
    assert_eq!(listed, vec![put[1].clone(), put[2].clone(), replaced]);
    assert_eq!(
        (reads, records),
        (1, 3),
        "one keyed read of the repository's previews"
    );
    assert_eq!(
        store.list_previews(&other).await.unwrap(),
        vec![put[3].clone()]
    );
    assert_eq!(
        store.list_previews("octo/none").await.unwrap(),
        Vec::<Preview>::new()
    );
    // The agents are as they were.
    assert_eq!(state.list_agents(REPO).await.unwrap().len(), 3);
}

/// `find_preview` finds a project's active previews by their name, and nothing else: not
/// another project's, not a torn-down one, not an agent of that name.
pub async fn previews_are_found_by_project_and_name(subject: Subject) {
    let state = subject.store.as_ref();
    let store = state.previews();
    let second = astrolift_store::testing::unique_name("octo/second");
    // An agent named like the preview: agents and previews are looked up apart.
    let mut changes = first_registration();
    changes.agents[0].agent.name = "triage-pr4".into();
    state.apply(changes).await.unwrap();
    let put = put_all(
        store,
        &[
            preview(REPO, TRIAGE, "triage", 4),
            preview(&second, TRIAGE, "triage", 4),
            Preview {
                project_id: "proj-2".into(),
                ..preview(REPO, REVIEW, "triage", 4)
            },
            preview(REPO, TRIAGE, "triage", 5),
        ],
    )
    .await;
    let mut expected = vec![put[0].clone(), put[1].clone()];
    expected.sort_by(|a, b| a.repository.cmp(&b.repository));
    assert_eq!(
        store.find_preview("proj-1", "triage-pr4").await.unwrap(),
        expected
    );
    assert_eq!(
        store.find_preview("proj-2", "triage-pr4").await.unwrap(),
        vec![put[2].clone()]
    );
    assert_eq!(
        store.find_preview("proj-1", "triage").await.unwrap(),
        Vec::<Preview>::new()
    );
    assert_eq!(
        state
            .find_agents("proj-1", "triage-pr4")
            .await
            .unwrap()
            .len(),
        1,
        "the agent of that name, and no preview"
    );
    store
        .tear_down_previews(&second, 4, "the pull request was closed", NOW + 1)
        .await
        .unwrap();
    assert_eq!(
        store.find_preview("proj-1", "triage-pr4").await.unwrap(),
        vec![put[0].clone()]
    );
}

/// Tearing down a pull request's previews marks each active one `torn_down` with one
/// `preview-closed` event, leaves other pull requests' previews alone, and a second
/// teardown writes nothing. A preview put again (a reopened pull request) is active at the
/// next version, and its next teardown is a second event.
pub async fn a_pull_request_is_torn_down_once_with_one_event_per_preview(subject: Subject) {
    let state = subject.store.as_ref();
    state.apply(first_registration()).await.unwrap();
    let agent_history = state
        .list_audit_events(&AgentKey::new(REPO, TRIAGE))
        .await
        .unwrap();
    let store = state.previews();
    let put = put_all(
        store,
        &[
            preview(REPO, TRIAGE, "triage", 5),
            preview(REPO, REVIEW, "review", 5),
            preview(REPO, TRIAGE, "triage", 6),
        ],
    )
    .await;
    assert_eq!(
        store.open_preview_pull_requests(REPO).await.unwrap(),
        vec![5, 6]
    );
    let closed_at = NOW + 100;
    let torn = store
        .tear_down_previews(REPO, 5, "the pull request was closed", closed_at)
        .await
        .unwrap();
    let expected: Vec<Preview> = [&put[1], &put[0]]
        .into_iter()
        .map(|p| Preview {
            status: PreviewStatus::TornDown,
            version: 2,
            updated_at: closed_at,
            ..p.clone()
        })
        .collect();
    assert_eq!(torn, expected);
    assert_eq!(
        store.get_preview(REPO, TRIAGE, 5).await.unwrap(),
        Some(expected[1].clone())
    );
    assert_eq!(
        store.get_preview(REPO, TRIAGE, 6).await.unwrap(),
        Some(put[2].clone())
    );
    assert_eq!(
        store.open_preview_pull_requests(REPO).await.unwrap(),
        vec![6]
    );
    let events = store.list_preview_events(REPO, TRIAGE).await.unwrap();
    assert_eq!(
        events,
        vec![AuditEvent {
            repository: REPO.into(),
            manifest_path: TRIAGE.into(),
            version: 2,
            action: AuditAction::PreviewClosed,
            commit: put[0].head_sha.clone(),
            snapshot_hash: put[0].snapshot_hash.clone(),
            previous_snapshot_hash: None,
            detail: "preview triage-pr5 of pull request #5: the pull request was closed".into(),
            at: closed_at,
        }]
    );
    assert_eq!(
        serde_json::to_value(&events[0]).unwrap()["action"],
        serde_json::json!("preview-closed")
    );
    assert_eq!(
        store.list_preview_events(REPO, REVIEW).await.unwrap().len(),
        1
    );
    // The agent's own history is not the previews'.
    assert_eq!(
        state
            .list_audit_events(&AgentKey::new(REPO, TRIAGE))
            .await
            .unwrap(),
        agent_history
    );

    // Idempotent: nothing active is left of pull request 5.
    let writes = state.stats().writes;
    assert_eq!(
        store
            .tear_down_previews(REPO, 5, "the pull request was closed", closed_at + 1)
            .await
            .unwrap(),
        Vec::<Preview>::new()
    );
    assert_eq!(state.stats().writes, writes);
    assert_eq!(
        store.list_preview_events(REPO, TRIAGE).await.unwrap().len(),
        1
    );

    // Reopened and pushed: active again, at the next version; closed again: a second event.
    let reopened = store
        .put_preview(&preview(REPO, TRIAGE, "triage", 5))
        .await
        .unwrap();
    assert_eq!(
        (reopened.status, reopened.version),
        (PreviewStatus::Active, 3)
    );
    let torn = store
        .tear_down_previews(REPO, 5, "the pull request was merged", closed_at + 2)
        .await
        .unwrap();
    assert_eq!(torn.len(), 1);
    assert_eq!(torn[0].version, 4);
    let versions: Vec<u64> = store
        .list_preview_events(REPO, TRIAGE)
        .await
        .unwrap()
        .iter()
        .map(|e| e.version)
        .collect();
    assert_eq!(versions, [2, 4]);
}

/// `close_preview` tears a preview down only as it was read: a record written since, or
/// one already torn down, is left as it is and nothing is written.
pub async fn a_preview_is_closed_only_as_it_was_read(subject: Subject) {
    let state = subject.store.as_ref();
    let store = state.previews();
    let first = store
        .put_preview(&preview(REPO, TRIAGE, "triage", 8))
        .await
        .unwrap();
    let pushed = store
        .put_preview(&Preview {
            head_sha: "c".repeat(40),
            ..first.clone()
        })
        .await
        .unwrap();
    assert_eq!(pushed.version, 2);
    let writes = state.stats().writes;
    assert_eq!(
        store.close_preview(&first, "stale", NOW + 5).await.unwrap(),
        None
    );
    assert_eq!(state.stats().writes, writes, "a stale read writes nothing");
    assert_eq!(
        store.get_preview(REPO, TRIAGE, 8).await.unwrap(),
        Some(pushed.clone())
    );
    let torn = store
        .close_preview(&pushed, "no push for 7 days", NOW + 5)
        .await
        .unwrap()
        .expect("torn down as read");
    assert_eq!((torn.status, torn.version), (PreviewStatus::TornDown, 3));
    assert_eq!(
        store.close_preview(&torn, "again", NOW + 6).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .close_preview(&pushed, "again", NOW + 6)
            .await
            .unwrap(),
        None
    );
    let events = store.list_preview_events(REPO, TRIAGE).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].detail,
        "preview triage-pr8 of pull request #8: no push for 7 days"
    );
    assert_eq!(events[0].commit, "c".repeat(40));
}

/// The pull requests with an active preview: each once, ascending, of that repository only.
pub async fn open_pull_requests_are_those_with_an_active_preview(subject: Subject) {
    let store = subject.store.previews();
    let other = astrolift_store::testing::unique_name("octo/other");
    assert_eq!(
        store.open_preview_pull_requests(REPO).await.unwrap(),
        Vec::<u64>::new()
    );
    put_all(
        store,
        &[
            preview(REPO, TRIAGE, "triage", 12),
            preview(REPO, TRIAGE, "triage", 3),
            preview(REPO, REVIEW, "review", 3),
            preview(REPO, TRIAGE, "triage", 7),
            preview(&other, TRIAGE, "triage", 1),
        ],
    )
    .await;
    store
        .tear_down_previews(REPO, 7, "the pull request was closed", NOW + 1)
        .await
        .unwrap();
    assert_eq!(
        store.open_preview_pull_requests(REPO).await.unwrap(),
        vec![3, 12]
    );
    assert_eq!(
        store.open_preview_pull_requests(&other).await.unwrap(),
        vec![1]
    );
}

/// `teardown` of an agent tears down its active previews, each with its event, and no
/// other manifest's.
pub async fn an_agents_teardown_tears_down_its_previews(subject: Subject) {
    let state = subject.store.as_ref();
    state.apply(first_registration()).await.unwrap();
    let store = state.previews();
    let put = put_all(
        store,
        &[
            preview(REPO, TRIAGE, "triage", 1),
            preview(REPO, TRIAGE, "triage", 2),
            preview(REPO, REVIEW, "review", 1),
        ],
    )
    .await;
    store
        .tear_down_previews(REPO, 2, "the pull request was closed", NOW + 1)
        .await
        .unwrap();
    let torn = state
        .teardown(&AgentKey::new(REPO, TRIAGE), NOW + 10, "retired by ops")
        .await
        .unwrap();
    assert_eq!(torn.status, AgentStatus::TornDown);
    let previews = store.list_previews(REPO).await.unwrap();
    let statuses: Vec<(u64, &str, PreviewStatus)> = previews
        .iter()
        .map(|p| (p.pull_request, p.manifest_path.as_str(), p.status))
        .collect();
    assert_eq!(
        statuses,
        [
            (1, REVIEW, PreviewStatus::Active),
            (1, TRIAGE, PreviewStatus::TornDown),
            (2, TRIAGE, PreviewStatus::TornDown),
        ]
    );
    assert_eq!(previews[0], put[2]);
    let details: Vec<String> = store
        .list_preview_events(REPO, TRIAGE)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.detail)
        .collect();
    assert_eq!(
        details,
        [
            "preview triage-pr1 of pull request #1: its agent was torn down (retired by ops)",
            "preview triage-pr2 of pull request #2: the pull request was closed",
        ]
    );
    assert_eq!(
        store.open_preview_pull_requests(REPO).await.unwrap(),
        vec![1]
    );
}

state_contract_tests!(
    previews_are_put_read_and_listed_by_key,
    previews_are_found_by_project_and_name,
    a_pull_request_is_torn_down_once_with_one_event_per_preview,
    a_preview_is_closed_only_as_it_was_read,
    open_pull_requests_are_those_with_an_active_preview,
    an_agents_teardown_tears_down_its_previews,
);
