//! The StateStore contract, run against SQLite and DynamoDB (moto).

use std::sync::Arc;
use std::time::Duration;

use astrolift_store::state::*;
use astrolift_store::testing::{FaultPlan, FaultyStateStore};
use astrolift_store::{StateStore, StoreError};

/// A store under test.
pub struct Subject {
    pub store: Arc<dyn StateStore>,
    /// Keeps a temporary directory alive.
    pub _dir: Option<tempfile::TempDir>,
}

const REPO: &str = "octo/agents";
const NOW: UnixSeconds = 1_767_225_600;

fn agent(manifest: &str, name: &str) -> Agent {
    Agent {
        repository: REPO.into(),
        manifest_path: manifest.into(),
        project_id: "proj-1".into(),
        name: name.into(),
        alias: None,
        status: AgentStatus::Active,
        snapshot_hash: format!("snap-{name}"),
        payload_digest: format!("sha256:{name}"),
        commit: "c1".into(),
        version: 0,
        updated_at: NOW,
        bindings_digest: None,
    }
}

pub fn added(manifest: &str, name: &str) -> AgentChange {
    AgentChange::new(
        agent(manifest, name),
        None,
        AuditAction::Added,
        "c1",
        "first registration",
        NOW,
    )
}

fn synced(commit: &str, previous: Option<&str>) -> Option<SyncedCommitUpdate> {
    Some(SyncedCommitUpdate {
        commit: SyncedCommit {
            repository: REPO.into(),
            ref_name: "main".into(),
            commit: commit.into(),
            commit_time: NOW,
            synced_at: NOW,
        },
        expected_previous: previous.map(str::to_owned),
    })
}

fn binding(trigger_id: &str, manifest: &str) -> TriggerBinding {
    TriggerBinding {
        trigger_id: trigger_id.into(),
        repository: REPO.into(),
        manifest_path: manifest.into(),
        agent_name: "triage".into(),
        name: "jira".into(),
        source: "generic".into(),
        definition: serde_json::json!({"filter": ".x == 1", "verify": {"kind": "token", "header": "X-Token"}}),
        snapshot_hash: "snap-triage".into(),
    }
}

fn first_registration() -> ChangeSet {
    let mut triage = added("agents/triage/astrolift.toml", "triage");
    triage
        .put_bindings
        .push(binding("trg-1", "agents/triage/astrolift.toml"));
    ChangeSet {
        repository: REPO.into(),
        agents: vec![
            triage,
            added("agents/review/astrolift.toml", "review"),
            added("astrolift.toml", "root"),
        ],
        synced: synced("c1", None),
    }
}

/// The commit recorded as synced for `REPO`'s `main`.
async fn synced_sha(store: &dyn StateStore) -> String {
    store
        .get_synced_commit(REPO, "main")
        .await
        .unwrap()
        .expect("a synced commit")
        .commit
}

pub async fn catalogue_round_trips(subject: Subject) {
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

    let installation = Installation {
        installation_id: 42,
        account: "octo".into(),
        repositories: vec![REPO.into()],
        suspended: false,
        updated_at: NOW,
    };
    store.put_installation(&installation).await.unwrap();
    assert_eq!(
        store.get_installation(42).await.unwrap(),
        Some(installation)
    );
    store.delete_installation(42).await.unwrap();
    assert_eq!(store.get_installation(42).await.unwrap(), None);

    let spec = EnvSpec {
        name: "triage-prod".into(),
        project_id: Some("proj-a".into()),
        agent_type: Some("claude".into()),
        runtime: Some("claude-code".into()),
        config_repo: "octo/config".into(),
        manifest_path: "envs/prod.yaml".into(),
        updated_at: NOW,
    };
    store.put_env_spec(&spec).await.unwrap();
    assert_eq!(
        store.get_env_spec("triage-prod").await.unwrap(),
        Some(spec.clone())
    );
    assert_eq!(store.list_env_specs().await.unwrap(), vec![spec]);
    assert_eq!(store.get_env_spec("nope").await.unwrap(), None);
}

pub async fn env_specs_are_usable_only_by_their_project(subject: Subject) {
    let store = subject.store.as_ref();
    let spec = |name: &str, project: Option<&str>| EnvSpec {
        name: name.into(),
        project_id: project.map(str::to_owned),
        agent_type: Some("claude".into()),
        runtime: Some("claude-code".into()),
        config_repo: "octo/config".into(),
        manifest_path: "envs/prod.toml".into(),
        updated_at: NOW,
    };
    store
        .put_env_spec(&spec("a-prod", Some("proj-a")))
        .await
        .unwrap();
    store
        .put_env_spec(&spec("b-prod", Some("proj-b")))
        .await
        .unwrap();
    // Written before env specs had projects: the field is absent.
    store.put_env_spec(&spec("legacy", None)).await.unwrap();
    let check =
        async |name: &str, project: &str| env_spec_for_project(store, name, project).await.unwrap();
    assert_eq!(
        check("a-prod", "proj-a").await,
        Ok(spec("a-prod", Some("proj-a")))
    );
    assert_eq!(
        check("b-prod", "proj-a").await,
        Err(EnvSpecRefusal::OtherProject)
    );
    assert_eq!(
        check("a-prod", "proj-b").await,
        Err(EnvSpecRefusal::OtherProject)
    );
    assert_eq!(check("nope", "proj-a").await, Err(EnvSpecRefusal::Missing));
    assert_eq!(
        check("legacy", "proj-a").await,
        Err(EnvSpecRefusal::NoProject)
    );
    assert_eq!(check("legacy", "").await, Err(EnvSpecRefusal::NoProject));
    // Re-upserting with a project migrates a legacy spec.
    store
        .put_env_spec(&spec("legacy", Some("proj-a")))
        .await
        .unwrap();
    assert!(check("legacy", "proj-a").await.is_ok());
}

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

pub async fn deliveries_are_deduplicated_until_expiry(subject: Subject) {
    let store = subject.store;
    let ttl = Duration::from_secs(3600);
    assert_eq!(
        store.record_delivery("d-1", NOW, ttl).await.unwrap(),
        DeliveryOutcome::New
    );
    assert_eq!(
        store.record_delivery("d-1", NOW + 5, ttl).await.unwrap(),
        DeliveryOutcome::Duplicate
    );
    assert_eq!(
        store.record_delivery("d-2", NOW + 5, ttl).await.unwrap(),
        DeliveryOutcome::New
    );
    assert_eq!(
        store.record_delivery("d-1", NOW + 3601, ttl).await.unwrap(),
        DeliveryOutcome::New,
        "an expired id is new again"
    );
    store.forget_delivery("d-2").await.unwrap();
    assert_eq!(
        store.record_delivery("d-2", NOW + 6, ttl).await.unwrap(),
        DeliveryOutcome::New,
        "a forgotten id is new again"
    );
    store.forget_delivery("never-seen").await.unwrap();
}

pub async fn dispatches_are_idempotent(subject: Subject) {
    let store = subject.store;
    let dispatch = Dispatch {
        id: "disp-1".into(),
        idempotency_key: "trg-1:delivery-9".into(),
        trigger_id: "trg-1".into(),
        repository: REPO.into(),
        manifest_path: "agents/triage/astrolift.toml".into(),
        snapshot_hash: "snap-triage".into(),
        payload: Some("{\"mode\":\"triage\"}".into()),
        created_at: NOW,
        status: DispatchStatus::Pending,
        sender: Some("octocat".into()),
        trusted: true,
        task_id: "0b0e7e57-0000-4000-8000-000000000001".into(),
        env_spec: Some("triage-prod".into()),
        message: Some("{\"schema\":\"astrolift.dispatch/v1\"}".into()),
        // Kept as it is, numbers and all, on both stores.
        report: Some(ReportTarget {
            kind: "check".into(),
            repository: "octo/agents".into(),
            installation_id: 31,
            number: 7,
            head_sha: Some("a".repeat(40)),
        }),
    };
    assert_eq!(
        store.record_dispatch(&dispatch).await.unwrap(),
        DispatchOutcome::New
    );
    let retry = Dispatch {
        id: "disp-2".into(),
        created_at: NOW + 1,
        ..dispatch.clone()
    };
    assert_eq!(
        store.record_dispatch(&retry).await.unwrap(),
        DispatchOutcome::Existing("disp-1".into())
    );
    assert_eq!(
        store.get_dispatch("trg-1:delivery-9").await.unwrap(),
        Some(dispatch)
    );
    assert_eq!(store.get_dispatch("other").await.unwrap(), None);
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

fn registration(repository: &str, manifest: Option<&str>, project: &str) -> RepoRegistration {
    RepoRegistration {
        repository: repository.into(),
        installation_id: Some(42),
        project_id: project.into(),
        registered_ref: "main".into(),
        manifest_path: manifest.map(str::to_owned),
        updated_at: NOW,
        last_sync: None,
    }
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

/// Runs each named contract test against each backend.
macro_rules! state_contract_tests {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test(super::sqlite_subject().await).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test]
                async fn $test() {
                    if let Some(subject) = super::dynamo_subject(stringify!($test)).await {
                        super::$test(subject).await;
                    }
                }
            )*
        }
    };
}

state_contract_tests!(
    registrations_are_keyed_by_manifest,
    last_sync_is_recorded_on_existing_registrations_only,
    repository_bindings_are_read_by_key,
    catalogue_round_trips,
    env_specs_are_usable_only_by_their_project,
    apply_registers_and_noop_writes_nothing,
    change_bumps_version_and_appends_audit,
    stale_version_is_a_conflict,
    a_conflict_writes_nothing_of_the_transaction,
    big_change_sets_are_split_per_agent,
    find_agents_by_project_and_name,
    deliveries_are_deduplicated_until_expiry,
    dispatches_are_idempotent,
    teardown_keeps_history,
    failed_apply_leaves_nothing,
    invalid_change_sets_are_rejected_before_writing,
);

/// Bindings per agent in [`bindings_of`]: on DynamoDB a `github` binding with one event is
/// three items (by id, repository copy, event copy), and an agent's change is one
/// transaction of at most 100 items.
const BINDINGS_PER_AGENT: usize = 30;

/// `count` GitHub bindings of `repository` on `issues.opened`, [`BINDINGS_PER_AGENT`] per
/// agent.
fn bindings_of(repository: &str, count: usize) -> ChangeSet {
    let mut changes = ChangeSet::new(repository);
    for agent_index in 0..count.div_ceil(BINDINGS_PER_AGENT) {
        let name = format!("a{agent_index:03}");
        let mut change = added(&format!("agents/{name}/astrolift.toml"), &name);
        change.agent.repository = repository.into();
        change.audit.repository = repository.into();
        let first = agent_index * BINDINGS_PER_AGENT;
        change.put_bindings = (first..count.min(first + BINDINGS_PER_AGENT))
            .map(|i| TriggerBinding {
                trigger_id: format!("{repository}-trg-{i:04}").replace('/', "-"),
                repository: repository.into(),
                manifest_path: change.agent.manifest_path.clone(),
                agent_name: name.clone(),
                name: format!("t{i}"),
                source: "github".into(),
                definition: serde_json::json!({"events": ["issues.opened"]}),
                snapshot_hash: change.agent.snapshot_hash.clone(),
            })
            .collect();
        changes.agents.push(change);
    }
    changes
}

/// The busy repository's bindings: 1,000 on SQLite. On DynamoDB 90 (three agents) make the
/// same proof, since the store counts every record it reads: moto copies the whole table
/// for each transaction, so 1,000 bindings (3,000 items in 34 transactions) took minutes.
fn busy_binding_count(store: &dyn StateStore) -> usize {
    if store.location().starts_with("dynamodb:") {
        3 * BINDINGS_PER_AGENT
    } else {
        1000
    }
}

/// Reads and records read by `read`, counted by the store.
async fn counted<T, F: std::future::Future<Output = T>>(
    store: &dyn StateStore,
    read: F,
) -> (T, (u64, u64)) {
    let before = store.stats();
    let value = read.await;
    let after = store.stats();
    (
        value,
        (
            after.reads - before.reads,
            after.records_read - before.records_read,
        ),
    )
}

/// A delivery reads only the bindings of its repository and its event, by key: with many
/// bindings in another repository, none of them is read, and a delivery of another event
/// of the busy repository reads none either (records counted by the store).
pub async fn repository_bindings_are_read_by_key(subject: Subject) {
    let store = subject.store;
    let busy = astrolift_store::testing::unique_name("busy/repo");
    let quiet = astrolift_store::testing::unique_name("quiet/repo");
    let count = busy_binding_count(store.as_ref());
    // A first read migrates older bindings once (DynamoDB); not what is measured here.
    store
        .list_repository_trigger_bindings("warm/up")
        .await
        .unwrap();
    store
        .list_event_trigger_bindings("warm/up", "issues")
        .await
        .unwrap();
    store.apply(bindings_of(&busy, count)).await.unwrap();
    store.apply(bindings_of(&quiet, 1)).await.unwrap();

    let (found, calls) = counted(
        store.as_ref(),
        store.list_event_trigger_bindings(&quiet, "issues"),
    )
    .await;
    let found = found.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].repository, quiet);
    assert_eq!(
        calls,
        (1, 1),
        "one keyed read returning the quiet repository's one binding, none of the busy one's"
    );
    let (found, calls) = counted(
        store.as_ref(),
        store.list_event_trigger_bindings(&busy, "pull_request"),
    )
    .await;
    assert_eq!(found.unwrap(), vec![]);
    assert_eq!(
        calls,
        (1, 0),
        "a delivery of another event reads none of the busy repository's bindings"
    );
    let (found, calls) = counted(
        store.as_ref(),
        store.list_repository_trigger_bindings(&quiet),
    )
    .await;
    assert_eq!(found.unwrap().len(), 1);
    assert_eq!(calls, (1, 1), "the repository listing is keyed too");

    let busy_bindings = store
        .list_event_trigger_bindings(&busy, "issues")
        .await
        .unwrap();
    assert_eq!(busy_bindings.len(), count);
    assert!(
        busy_bindings
            .windows(2)
            .all(|w| w[0].trigger_id < w[1].trigger_id)
    );
    assert_eq!(
        store.list_repository_trigger_bindings(&busy).await.unwrap(),
        busy_bindings
    );

    // A binding that moves to another event leaves the first event's lookup.
    let moved_agent = AgentKey::new(&busy, "agents/a001/astrolift.toml");
    let current = store.get_agent(&moved_agent).await.unwrap().unwrap();
    let mut change = AgentChange::new(
        current.clone(),
        Some(current.version),
        AuditAction::Changed,
        "c2",
        "events changed",
        NOW + 1,
    );
    let mut moved = busy_bindings[BINDINGS_PER_AGENT].clone();
    assert_eq!(moved.manifest_path, moved_agent.manifest_path);
    moved.definition = serde_json::json!({"events": ["push", "issue_comment.created"]});
    change.put_bindings = vec![moved.clone()];
    store
        .apply(ChangeSet {
            repository: busy.clone(),
            agents: vec![change],
            synced: None,
        })
        .await
        .unwrap();
    let issues = store
        .list_event_trigger_bindings(&busy, "issues")
        .await
        .unwrap();
    assert_eq!(issues.len(), count - 1);
    assert!(issues.iter().all(|b| b.trigger_id != moved.trigger_id));
    for event in ["push", "issue_comment"] {
        assert_eq!(
            store
                .list_event_trigger_bindings(&busy, event)
                .await
                .unwrap(),
            vec![moved.clone()],
            "{event}"
        );
    }

    // Teardown deletes every key of its agent's bindings.
    store.teardown(&moved_agent, NOW + 2, "test").await.unwrap();
    let left = store.list_repository_trigger_bindings(&busy).await.unwrap();
    assert_eq!(left.len(), count - BINDINGS_PER_AGENT);
    assert!(
        left.iter()
            .all(|b| b.manifest_path != moved_agent.manifest_path)
    );
    assert_eq!(
        store
            .list_event_trigger_bindings(&busy, "issues")
            .await
            .unwrap(),
        left
    );
    assert_eq!(
        store
            .list_event_trigger_bindings(&busy, "push")
            .await
            .unwrap(),
        vec![]
    );
    assert_eq!(
        store.get_trigger_binding(&moved.trigger_id).await.unwrap(),
        None
    );
}

pub(crate) async fn sqlite_subject() -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStateStore::open(dir.path().join("nested/state.db"))
        .await
        .unwrap();
    Subject {
        store: Arc::new(store),
        _dir: Some(dir),
    }
}

pub async fn dynamo_store(test: &str) -> Option<DynamoStateStore> {
    crate::support::aws_endpoint(test)?;
    let shared = crate::support::shared_resource(crate::support::SHARED_TABLE);
    let table = shared
        .clone()
        .unwrap_or_else(|| crate::support::unique_name("state"));
    let store = DynamoStateStore::from_env(&table).await.unwrap();
    match shared {
        Some(_) => crate::support::shared_table(&store).await,
        None => store.create_table().await.unwrap(),
    }
    Some(store)
}

pub(crate) async fn dynamo_subject(test: &str) -> Option<Subject> {
    Some(Subject {
        store: Arc::new(dynamo_store(test).await?),
        _dir: None,
    })
}
