//! Plan and apply scenarios, each run on both backends.

use astrolift_manifest::SourceTree;
use astrolift_store::state::{
    AgentChange, AgentKey, AgentStatus, AuditAction, ChangeSet, TriggerBinding,
};
use astrolift_sync::bindings::legacy_trigger_id;
use astrolift_sync::{DriftSeverity, Stores};

use crate::harness::{
    REPO, apply, both_enabled, edit, monorepo, on_both_backends, remove_dir, statuses,
};

on_both_backends!(
    first_registration,
    noop_rerun_writes_nothing,
    changed_brief,
    changed_skill_version_is_a_drift_warning,
    removed_manifest_is_orphaned_then_reactivated,
    disabled_in_the_federation_file,
    failing_agent_beside_healthy_ones,
    teardown_keeps_the_audit_trail,
    trigger_bindings_follow_the_manifest,
    trigger_ids_are_random_and_kept,
    legacy_trigger_ids_keep_working,
);

const TRIAGE: &str = "agents/triage/astrolift.toml";
const REPORTER: &str = "agents/reporter/astrolift.toml";

fn key(manifest: &str) -> AgentKey {
    AgentKey::new(REPO, manifest)
}

fn entry(manifest: &str, status: &'static str) -> (String, &'static str) {
    (manifest.to_owned(), status)
}

async fn status_of(stores: &Stores, manifest: &str) -> Option<AgentStatus> {
    stores
        .state
        .get_agent(&key(manifest))
        .await
        .expect("read")
        .map(|a| a.status)
}

async fn first_registration(stores: &Stores) {
    let report = apply(stores, &monorepo(), "c1", 100).await;
    assert_eq!(
        report.counts.diagnostics.errors, 0,
        "{:#?}",
        report.diagnostics
    );
    assert_eq!(
        statuses(&report),
        [entry(REPORTER, "disabled"), entry(TRIAGE, "added")]
    );
    assert!(report.applied);
    // One archive and one snapshot for the one registered agent (whose record
    // carries the build that lets a re-run skip building the archive), and the
    // snapshot of the workspace manifest `workspaces/triage.yaml`.
    assert_eq!(report.counts.blob_puts, 3);
    let agents = stores.state.list_agents(REPO).await.expect("list");
    assert_eq!(
        agents.len(),
        1,
        "a disabled agent that was never registered stays unregistered"
    );
    assert_eq!(agents[0].status, AgentStatus::Active);
    assert_eq!(agents[0].project_id, "proj-1");
    assert_eq!(
        Some(&agents[0].payload_digest),
        report.plan[1].digest.as_ref()
    );
}

async fn noop_rerun_writes_nothing(stores: &Stores) {
    let tree = monorepo();
    apply(stores, &tree, "c1", 100).await;
    let (blobs_before, state_before) = (stores.blobs.stats(), stores.state.stats());
    let report = apply(stores, &tree, "c1", 100).await;
    assert_eq!(
        statuses(&report),
        [entry(REPORTER, "disabled"), entry(TRIAGE, "unchanged")]
    );
    assert_eq!(
        (report.counts.blob_puts, report.counts.state_writes),
        (0, 0)
    );
    assert_eq!(
        stores.blobs.stats().puts,
        blobs_before.puts,
        "no blob PUT on a no-op re-run"
    );
    assert_eq!(
        stores.state.stats().writes,
        state_before.writes,
        "no state write on a no-op re-run"
    );
}

async fn changed_brief(stores: &Stores) {
    let mut tree = monorepo();
    apply(stores, &tree, "c1", 100).await;
    let before = stores
        .state
        .get_agent(&key(TRIAGE))
        .await
        .expect("read")
        .expect("registered");
    let brief = "agents/triage/brief/README.md";
    let text = tree.read_text(brief, u64::MAX).expect("brief");
    tree.insert(brief, format!("{text}\nAlways cite the runbook.\n"), false);
    let report = apply(stores, &tree, "c2", 200).await;
    assert_eq!(
        statuses(&report),
        [entry(REPORTER, "disabled"), entry(TRIAGE, "changed")]
    );
    let drift: Vec<_> = report.plan[1]
        .drift
        .iter()
        .map(|d| d.kind.as_str())
        .collect();
    assert!(drift.contains(&"brief-changed"), "{drift:?}");
    let after = stores
        .state
        .get_agent(&key(TRIAGE))
        .await
        .expect("read")
        .expect("registered");
    assert_eq!(after.version, before.version + 1);
    assert_ne!(after.snapshot_hash, before.snapshot_hash);
    assert_eq!(after.commit, "c2");
}

async fn changed_skill_version_is_a_drift_warning(stores: &Stores) {
    let mut tree = monorepo();
    apply(stores, &tree, "c1", 100).await;
    edit(&mut tree, TRIAGE, "pr-review@1.2.0", "pr-review@1.3.0");
    let report = apply(stores, &tree, "c2", 200).await;
    assert_eq!(report.plan[1].status.as_str(), "changed");
    let drift: Vec<_> = report.plan[1]
        .drift
        .iter()
        .map(|d| (d.kind.as_str(), d.severity))
        .collect();
    assert!(
        drift.contains(&("skill-version-changed", DriftSeverity::Warning)),
        "{drift:?}"
    );
}

fn without_triage() -> astrolift_manifest::MemTree {
    let mut tree = remove_dir(&monorepo(), "agents/triage");
    edit(
        &mut tree,
        "astrolift.agents.toml",
        "[[agents]]\nmanifest = \"agents/triage/astrolift.toml\"\nalias = \"triage\"\n",
        "",
    );
    tree
}

async fn removed_manifest_is_orphaned_then_reactivated(stores: &Stores) {
    apply(stores, &monorepo(), "c1", 100).await;
    let report = apply(stores, &without_triage(), "c2", 200).await;
    assert_eq!(
        report.counts.diagnostics.errors, 0,
        "{:#?}",
        report.diagnostics
    );
    assert_eq!(
        statuses(&report),
        [entry(REPORTER, "disabled"), entry(TRIAGE, "orphaned")]
    );
    assert_eq!(status_of(stores, TRIAGE).await, Some(AgentStatus::Orphaned));
    // Orphaned stays orphaned, with nothing written again.
    let again = apply(stores, &without_triage(), "c2", 200).await;
    assert_eq!(again.counts.state_writes, 0);
    // The manifest comes back: reactivated.
    let back = apply(stores, &monorepo(), "c3", 300).await;
    assert_eq!(
        statuses(&back),
        [entry(REPORTER, "disabled"), entry(TRIAGE, "added")]
    );
    assert_eq!(status_of(stores, TRIAGE).await, Some(AgentStatus::Active));
    let audit = stores
        .state
        .list_audit_events(&key(TRIAGE))
        .await
        .expect("audit");
    let actions: Vec<_> = audit.iter().map(|e| e.action).collect();
    assert_eq!(
        actions,
        [
            AuditAction::Added,
            AuditAction::Orphaned,
            AuditAction::Reactivated
        ]
    );
}

async fn disabled_in_the_federation_file(stores: &Stores) {
    let report = apply(stores, &both_enabled(), "c1", 100).await;
    assert_eq!(
        statuses(&report),
        [entry(REPORTER, "added"), entry(TRIAGE, "added")]
    );
    let report = apply(stores, &monorepo(), "c2", 200).await;
    assert_eq!(
        statuses(&report),
        [entry(REPORTER, "disabled"), entry(TRIAGE, "unchanged")]
    );
    assert_eq!(
        status_of(stores, REPORTER).await,
        Some(AgentStatus::Disabled)
    );
}

async fn failing_agent_beside_healthy_ones(stores: &Stores) {
    let mut tree = both_enabled();
    edit(&mut tree, REPORTER, "max_retries = 1", "max_retries = -1");
    let report = apply(stores, &tree, "c1", 100).await;
    assert!(report.counts.diagnostics.errors > 0);
    assert_eq!(
        statuses(&report),
        [entry(REPORTER, "failed"), entry(TRIAGE, "added")]
    );
    assert_eq!(
        status_of(stores, REPORTER).await,
        None,
        "a failed agent is not registered"
    );
    assert_eq!(status_of(stores, TRIAGE).await, Some(AgentStatus::Active));
}

async fn teardown_keeps_the_audit_trail(stores: &Stores) {
    apply(stores, &without_triage(), "c0", 50).await;
    apply(stores, &monorepo(), "c1", 100).await;
    apply(stores, &without_triage(), "c2", 200).await;
    let torn = stores
        .state
        .teardown(&key(TRIAGE), 300, "retired by ops")
        .await
        .expect("teardown");
    assert_eq!(torn.status, AgentStatus::TornDown);
    let actions: Vec<_> = stores
        .state
        .list_audit_events(&key(TRIAGE))
        .await
        .expect("audit")
        .iter()
        .map(|e| e.action)
        .collect();
    assert_eq!(
        actions,
        [
            AuditAction::Added,
            AuditAction::Orphaned,
            AuditAction::TornDown
        ]
    );
    // A torn-down agent is no longer planned while its manifest stays removed.
    let report = apply(stores, &without_triage(), "c3", 400).await;
    assert_eq!(statuses(&report), [entry(REPORTER, "disabled")]);
}

/// The repository's stored trigger bindings.
async fn stored_bindings(stores: &Stores) -> Vec<TriggerBinding> {
    stores
        .state
        .list_trigger_bindings()
        .await
        .expect("bindings")
        .into_iter()
        .filter(|b| b.repository == REPO)
        .collect()
}

/// The names of the repository's stored trigger bindings, each with one
/// more field, sorted.
async fn named(stores: &Stores, field: fn(TriggerBinding) -> String) -> Vec<(String, String)> {
    let mut found: Vec<_> = stored_bindings(stores)
        .await
        .into_iter()
        .map(|b| (b.name.clone(), field(b)))
        .collect();
    found.sort();
    found
}

/// The names of the repository's stored trigger bindings, with their snapshots.
async fn bindings(stores: &Stores) -> Vec<(String, String)> {
    named(stores, |b| b.snapshot_hash).await
}

async fn trigger_bindings_follow_the_manifest(stores: &Stores) {
    let report = apply(stores, &monorepo(), "c1", 100).await;
    let snapshot = report.plan[1].snapshot.clone().expect("packaged");
    let expected = |names: &[&str]| -> Vec<(String, String)> {
        names
            .iter()
            .map(|n| ((*n).to_owned(), snapshot.clone()))
            .collect()
    };
    assert_eq!(
        bindings(stores).await,
        expected(&["jira-high-priority", "new-issue"])
    );
    // The ids are stable: a no-op re-run writes nothing.
    let again = apply(stores, &monorepo(), "c1", 100).await;
    assert_eq!(again.counts.state_writes, 0);
    // Removing a trigger changes the agent and drops its binding; the
    // remaining binding follows the new snapshot.
    let mut fewer = monorepo();
    let manifest = fewer.read_text(TRIAGE, u64::MAX).expect("manifest");
    let cut = manifest
        .find("[[triggers]]\nname = \"new-issue\"")
        .expect("second trigger");
    fewer.insert(TRIAGE, manifest[..cut].to_owned(), false);
    let report = apply(stores, &fewer, "c2", 200).await;
    assert_eq!(
        report.counts.diagnostics.errors, 0,
        "{:#?}",
        report.diagnostics
    );
    assert_eq!(report.plan[1].status.as_str(), "changed");
    let new_snapshot = report.plan[1].snapshot.clone().expect("packaged");
    assert_eq!(
        bindings(stores).await,
        [("jira-high-priority".to_owned(), new_snapshot)]
    );
    // An orphaned agent's triggers stop dispatching.
    apply(stores, &without_triage(), "c3", 300).await;
    assert!(bindings(stores).await.is_empty());
}

/// The monorepo with a line added to the triage agent's brief: a new snapshot.
fn with_longer_brief() -> astrolift_manifest::MemTree {
    let mut tree = monorepo();
    let brief = "agents/triage/brief/README.md";
    let text = tree.read_text(brief, u64::MAX).expect("brief");
    tree.insert(brief, format!("{text}\nAlways cite the runbook.\n"), false);
    tree
}

/// The names of the repository's stored trigger bindings, with their ids.
async fn binding_ids(stores: &Stores) -> Vec<(String, String)> {
    named(stores, |b| b.trigger_id).await
}

/// Ids are minted at first registration (96 random bits, not the derived
/// id), kept by a re-sync with a new snapshot, and new for a renamed trigger.
async fn trigger_ids_are_random_and_kept(stores: &Stores) {
    apply(stores, &monorepo(), "c1", 100).await;
    let first = binding_ids(stores).await;
    assert_eq!(first.len(), 2, "{first:?}");
    for (name, id) in &first {
        assert!(id.starts_with("trg_") && id.len() == 28, "{id}");
        assert_ne!(id, &legacy_trigger_id(REPO, TRIAGE, name), "not derivable");
    }
    let changed = with_longer_brief();
    let report = apply(stores, &changed, "c2", 200).await;
    assert_eq!(report.plan[1].status.as_str(), "changed", "{report:#?}");
    assert_eq!(
        binding_ids(stores).await,
        first,
        "a new snapshot keeps the ids"
    );
    let mut renamed = changed.clone();
    edit(
        &mut renamed,
        TRIAGE,
        "name = \"new-issue\"",
        "name = \"new-issues\"",
    );
    apply(stores, &renamed, "c3", 300).await;
    let after = binding_ids(stores).await;
    assert_eq!(after[0], first[0], "the other trigger keeps its id");
    assert_eq!(after[1].0, "new-issues");
    assert_ne!(after[1].1, first[1].1, "a renamed trigger gets a new id");
}

/// A binding registered before ids were random keeps its derived id through
/// later syncs: the sender's configured URL keeps working (no migration).
async fn legacy_trigger_ids_keep_working(stores: &Stores) {
    apply(stores, &monorepo(), "c1", 100).await;
    let stored = stored_bindings(stores).await;
    let legacy: Vec<TriggerBinding> = stored
        .iter()
        .map(|b| TriggerBinding {
            trigger_id: legacy_trigger_id(REPO, &b.manifest_path, &b.name),
            ..b.clone()
        })
        .collect();
    let agent = stores
        .state
        .get_agent(&key(TRIAGE))
        .await
        .expect("read")
        .expect("registered");
    let version = agent.version;
    let mut change = AgentChange::new(agent, Some(version), AuditAction::Changed, "c1", "old", 150);
    change.put_bindings = legacy.clone();
    change.delete_bindings = stored.iter().map(|b| b.trigger_id.clone()).collect();
    stores
        .state
        .apply(ChangeSet {
            repository: REPO.to_owned(),
            agents: vec![change],
            synced: None,
        })
        .await
        .expect("stores the old-style bindings");
    let report = apply(stores, &with_longer_brief(), "c2", 200).await;
    assert_eq!(report.plan[1].status.as_str(), "changed", "{report:#?}");
    let mut expected: Vec<(String, String)> = legacy
        .iter()
        .map(|b| (b.name.clone(), b.trigger_id.clone()))
        .collect();
    expected.sort();
    assert_eq!(binding_ids(stores).await, expected);
}
