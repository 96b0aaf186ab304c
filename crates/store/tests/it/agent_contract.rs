//! The AgentStore contract, run against SQLite and DynamoDB (moto): conditional, all-or-nothing change sets, versions and the append-only audit history, the project/name index and teardown.

use astrolift_store::StoreError;
use astrolift_store::state::*;
use astrolift_store::testing::{FaultPlan, FaultyStateStore};

use crate::state_contract::*;

pub async fn apply_registers_and_noop_writes_nothing(subject: Subject) {
    let store = subject.store;
    let report = store.apply(first_registration()).await.unwrap();
    assert_eq!(report.agents_written, 3);
    // On DynamoDB a binding is two items: by id, and its copy under its repository.
    let binding_items = if store.location().starts_with("dynamodb:") {
        2
    } else {
        1
    };
    assert_eq!(
        report.items_written,
        3 * 2 + binding_items + 1,
        "agents, audit events, one binding, synced commit"
    );
    let agents = store.list_agents(REPO).await.unwrap();
    let paths: Vec<&str> = agents.iter().map(|a| a.manifest_path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "agents/review/astrolift.toml",
            "agents/triage/astrolift.toml",
            "astrolift.toml"
        ]
    );
    assert!(
        agents
            .iter()
            .all(|a| a.version == 1 && a.status == AgentStatus::Active)
    );
    let key = AgentKey::new(REPO, "agents/triage/astrolift.toml");
    assert_eq!(store.get_agent(&key).await.unwrap().unwrap().name, "triage");
    let events = store.list_audit_events(&key).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].action, events[0].version),
        (AuditAction::Added, 1)
    );
    assert_eq!(synced_sha(&*store).await, "c1");
    assert_eq!(
        store.get_trigger_binding("trg-1").await.unwrap(),
        Some(binding("trg-1", "agents/triage/astrolift.toml"))
    );
    assert_eq!(store.list_trigger_bindings().await.unwrap().len(), 1);

    let before = store.stats();
    let noop = store.apply(ChangeSet::new(REPO)).await.unwrap();
    assert_eq!(noop, ApplyReport::default());
    assert_eq!(
        store.stats().writes,
        before.writes,
        "0 writes on a no-op re-run"
    );
    assert_eq!(store.stats().transactions, before.transactions);
}

pub async fn change_bumps_version_and_appends_audit(subject: Subject) {
    let store = subject.store;
    store.apply(first_registration()).await.unwrap();
    let key = AgentKey::new(REPO, "agents/review/astrolift.toml");
    let current = store.get_agent(&key).await.unwrap().unwrap();
    let mut next = current.clone();
    next.snapshot_hash = "snap-review-2".into();
    next.commit = "c2".into();
    let mut change = AgentChange::new(
        next,
        Some(current.version),
        AuditAction::Changed,
        "c2",
        "brief changed",
        NOW + 10,
    );
    change.audit.previous_snapshot_hash = Some(current.snapshot_hash.clone());
    store
        .apply(ChangeSet {
            repository: REPO.into(),
            agents: vec![change],
            synced: synced("c2", Some("c1")),
        })
        .await
        .unwrap();
    let stored = store.get_agent(&key).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.version,
            stored.snapshot_hash.as_str(),
            stored.commit.as_str()
        ),
        (2, "snap-review-2", "c2")
    );
    let events = store.list_audit_events(&key).await.unwrap();
    let actions: Vec<(u64, AuditAction)> = events.iter().map(|e| (e.version, e.action)).collect();
    assert_eq!(
        actions,
        [(1, AuditAction::Added), (2, AuditAction::Changed)]
    );
    assert_eq!(
        events[1].previous_snapshot_hash.as_deref(),
        Some("snap-review")
    );
    assert_eq!(synced_sha(&*store).await, "c2");
}

pub async fn stale_version_is_a_conflict(subject: Subject) {
    let store = subject.store;
    store.apply(first_registration()).await.unwrap();
    // Re-adding an existing agent (expected: absent) conflicts.
    let err = store
        .apply(ChangeSet {
            agents: vec![added("astrolift.toml", "root")],
            ..ChangeSet::new(REPO)
        })
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err:?}");
    // A stale expected version conflicts.
    let mut stale = agent("astrolift.toml", "root");
    stale.snapshot_hash = "snap-x".into();
    let change = AgentChange::new(stale, Some(7), AuditAction::Changed, "c2", "", NOW);
    let err = store
        .apply(ChangeSet {
            agents: vec![change],
            ..ChangeSet::new(REPO)
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    // A synced commit that moved meanwhile conflicts.
    let err = store
        .apply(ChangeSet {
            synced: synced("c3", Some("c0")),
            ..ChangeSet::new(REPO)
        })
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err:?}");
    let root = store
        .get_agent(&AgentKey::new(REPO, "astrolift.toml"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (root.version, root.snapshot_hash.as_str()),
        (1, "snap-root")
    );
    assert_eq!(synced_sha(&*store).await, "c1");
}

pub async fn a_conflict_writes_nothing_of_the_transaction(subject: Subject) {
    let store = subject.store;
    store.apply(first_registration()).await.unwrap();
    let before = store.stats().writes;
    let mut fresh = added("agents/new/astrolift.toml", "new");
    fresh
        .put_bindings
        .push(binding("trg-new", "agents/new/astrolift.toml"));
    let stale = AgentChange::new(
        agent("astrolift.toml", "root"),
        Some(5),
        AuditAction::Changed,
        "c2",
        "",
        NOW,
    );
    let mut removed_binding = AgentChange::new(
        agent("agents/triage/astrolift.toml", "triage"),
        Some(1),
        AuditAction::Changed,
        "c2",
        "",
        NOW,
    );
    removed_binding.delete_bindings.push("trg-1".into());
    let changes = ChangeSet {
        repository: REPO.into(),
        agents: vec![fresh, removed_binding, stale],
        synced: synced("c2", Some("c1")),
    };
    let err = store.apply(changes).await.unwrap_err();
    assert!(err.is_conflict(), "{err:?}");
    assert_eq!(store.stats().writes, before, "nothing counted as written");
    assert_eq!(
        store
            .get_agent(&AgentKey::new(REPO, "agents/new/astrolift.toml"))
            .await
            .unwrap(),
        None
    );
    assert!(
        store
            .list_audit_events(&AgentKey::new(REPO, "agents/new/astrolift.toml"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.get_trigger_binding("trg-new").await.unwrap(), None);
    assert!(
        store.get_trigger_binding("trg-1").await.unwrap().is_some(),
        "the delete was rolled back"
    );
    let triage = store
        .get_agent(&AgentKey::new(REPO, "agents/triage/astrolift.toml"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(triage.version, 1);
    assert_eq!(synced_sha(&*store).await, "c1");
}

pub async fn big_change_sets_are_split_per_agent(subject: Subject) {
    let store = subject.store;
    let agents: Vec<AgentChange> = (0..120)
        .map(|i| {
            added(
                &format!("agents/a{i:03}/astrolift.toml"),
                &format!("a{i:03}"),
            )
        })
        .collect();
    let report = store
        .apply(ChangeSet {
            repository: REPO.into(),
            agents,
            synced: synced("c1", None),
        })
        .await
        .unwrap();
    assert_eq!((report.agents_written, report.items_written), (120, 241));
    assert_eq!(store.list_agents(REPO).await.unwrap().len(), 120);
    assert_eq!(store.stats().transactions, report.transactions);
    assert_eq!(synced_sha(&*store).await, "c1");
}

pub async fn find_agents_by_project_and_name(subject: Subject) {
    let store = subject.store;
    store.apply(first_registration()).await.unwrap();
    let mut elsewhere = agent("agents/triage/astrolift.toml", "triage");
    elsewhere.repository = "octo/other".into();
    let change = AgentChange::new(elsewhere, None, AuditAction::Added, "c9", "", NOW);
    store
        .apply(ChangeSet {
            repository: "octo/other".into(),
            agents: vec![change],
            synced: None,
        })
        .await
        .unwrap();
    let found = store.find_agents("proj-1", "triage").await.unwrap();
    let repos: Vec<&str> = found.iter().map(|a| a.repository.as_str()).collect();
    assert_eq!(repos, ["octo/agents", "octo/other"]);
    assert!(
        store
            .find_agents("proj-2", "triage")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store.find_agents("proj-1", "tri").await.unwrap().is_empty(),
        "names match exactly"
    );
}

pub async fn teardown_keeps_history(subject: Subject) {
    let store = subject.store;
    store.apply(first_registration()).await.unwrap();
    let key = AgentKey::new(REPO, "agents/triage/astrolift.toml");
    let torn = store.teardown(&key, NOW + 100, "by alice").await.unwrap();
    assert_eq!((torn.status, torn.version), (AgentStatus::TornDown, 2));
    assert_eq!(store.get_agent(&key).await.unwrap(), Some(torn));
    assert_eq!(
        store.get_trigger_binding("trg-1").await.unwrap(),
        None,
        "its bindings are removed"
    );
    let actions: Vec<AuditAction> = store
        .list_audit_events(&key)
        .await
        .unwrap()
        .iter()
        .map(|e| e.action)
        .collect();
    assert_eq!(actions, [AuditAction::Added, AuditAction::TornDown]);
    assert!(
        store
            .teardown(&key, NOW, "")
            .await
            .unwrap_err()
            .is_conflict()
    );
    assert!(
        store
            .teardown(&AgentKey::new(REPO, "nope"), NOW, "")
            .await
            .unwrap_err()
            .is_not_found()
    );
}

pub async fn failed_apply_leaves_nothing(subject: Subject) {
    let faulty = FaultyStateStore::new(subject.store.clone(), FaultPlan::nth_write(1));
    let err = faulty.apply(first_registration()).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(subject.store.list_agents(REPO).await.unwrap().is_empty());
    faulty.apply(first_registration()).await.unwrap();
    assert_eq!(subject.store.list_agents(REPO).await.unwrap().len(), 3);
}

pub async fn invalid_change_sets_are_rejected_before_writing(subject: Subject) {
    let store = subject.store;
    let mut wrong_version = added("astrolift.toml", "root");
    wrong_version.agent.version = 3;
    let err = store
        .apply(ChangeSet {
            agents: vec![wrong_version],
            ..ChangeSet::new(REPO)
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    let err = store
        .apply(ChangeSet {
            agents: vec![added("astrolift.toml", "root")],
            ..ChangeSet::new("someone/else")
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    assert_eq!(store.stats().writes, 0);
}

state_contract_tests!(
    apply_registers_and_noop_writes_nothing,
    change_bumps_version_and_appends_audit,
    stale_version_is_a_conflict,
    a_conflict_writes_nothing_of_the_transaction,
    big_change_sets_are_split_per_agent,
    find_agents_by_project_and_name,
    teardown_keeps_history,
    failed_apply_leaves_nothing,
    invalid_change_sets_are_rejected_before_writing,
);
