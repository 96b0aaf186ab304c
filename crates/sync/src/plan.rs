//! The plan: what a sync would do to each agent. Pure: registered state and
//! packaged candidates in, plan entries and state changes out.

use std::collections::{BTreeMap, BTreeSet};

use astrolift_manifest::model::AgentManifest;
use astrolift_store::state::{
    Agent, AgentChange, AgentStatus, AuditAction, TriggerBinding, UnixSeconds,
};
use serde::Serialize;

use crate::bindings;
use crate::drift::DriftItem;

/// What the sync does (or would do) to one agent. The wire names are the
/// `status` values of `astrolift check --format json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// New, or an orphaned / disabled / torn-down agent coming back.
    Added,
    /// A new snapshot (or alias) for a registered agent.
    Changed,
    /// Same snapshot as registered: nothing to write.
    Unchanged,
    /// Registered, but its manifest is gone. Kept until `teardown`.
    Orphaned,
    /// `enabled = false` in the federation file: validated, not registered.
    Disabled,
    /// Errors: not registered, and any previous registration is kept.
    Failed,
    /// No registration this sync applies covers its manifest (per-manifest registrations):
    /// validated and packaged, nothing written; a previous registration is kept as it is.
    Unregistered,
}

impl PlanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Added => "added",
            PlanStatus::Changed => "changed",
            PlanStatus::Unchanged => "unchanged",
            PlanStatus::Orphaned => "orphaned",
            PlanStatus::Disabled => "disabled",
            PlanStatus::Failed => "failed",
            PlanStatus::Unregistered => "unregistered",
        }
    }
}

/// One row of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanEntry {
    /// The agent's name.
    pub agent: String,
    /// Repo-relative path of its manifest.
    pub manifest: String,
    pub status: PlanStatus,
    /// `sha256:<hex>` of the package archive, when it was packaged (or, for an
    /// orphaned agent, the registered one).
    pub digest: Option<String>,
    /// The agent version: sha256 of its snapshot.
    pub snapshot: Option<String>,
    /// The registered snapshot it replaces.
    pub previous_snapshot: Option<String>,
    pub alias: Option<String>,
    /// Drift from the registered snapshot (changed agents only).
    pub drift: Vec<DriftItem>,
}

/// A discovered agent after validation and packaging.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub manifest: AgentManifest,
    /// `None` when validation or packaging failed.
    pub packaged: Option<Packaged>,
}

/// The identity of a packaged agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packaged {
    /// The agent's version: [`astrolift_package::Snapshot::digest`].
    pub snapshot_hash: String,
    /// The version an `astrolift.snapshot/v1` snapshot of it had
    /// ([`astrolift_package::Snapshot::legacy_digest`]): an agent registered under it is
    /// the same version (docs/operations.md, "Compatibility shims").
    pub legacy_snapshot_hash: String,
    /// `sha256:<hex>` of the archive.
    pub payload_digest: String,
    /// Its dependency files and their layer key, when the pre-flight found something to
    /// install (docs/reference.md "Dependency layers"); `None` for a pass-through.
    pub layers: Option<astrolift_package::LayerNeed>,
    /// What its archive was built from and is, kept on its record (`None` inline).
    pub build: Option<astrolift_store::state::PackageBuild>,
}

impl Packaged {
    /// Itself, with the registered version when that is its legacy version: an agent
    /// registered under an `astrolift.snapshot/v1` version keeps it while its content
    /// is unchanged, so the snapshot format's change re-versions nothing.
    fn as_registered(&self, previous: Option<&Agent>) -> Packaged {
        let mut packaged = self.clone();
        if let Some(previous) = previous.filter(|p| p.snapshot_hash == self.legacy_snapshot_hash) {
            packaged.snapshot_hash.clone_from(&previous.snapshot_hash);
        }
        packaged
    }

    /// The layer key its record carries.
    pub fn layer_key(&self) -> Option<String> {
        self.layers.as_ref().map(|need| need.layer_key.clone())
    }
}

/// Who and when, for the records a plan writes.
#[derive(Clone)]
pub struct PlanContext<'a> {
    pub repository: &'a str,
    /// The project a manifest registers under: its covering registration's. `None`: no
    /// registration this sync plans covers it (`unregistered`, nothing written; a
    /// registered agent of that manifest is left as it is, never orphaned).
    pub project_of: &'a (dyn Fn(&str) -> Option<String> + Sync),
    pub commit: &'a str,
    pub now: UnixSeconds,
    /// The repository's stored trigger bindings.
    pub bindings: &'a [TriggerBinding],
}

impl std::fmt::Debug for PlanContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanContext")
            .field("repository", &self.repository)
            .field("commit", &self.commit)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl PlanContext<'_> {
    fn bindings_of(&self, manifest_path: &str) -> Vec<&TriggerBinding> {
        self.bindings
            .iter()
            .filter(|b| b.manifest_path == manifest_path)
            .collect()
    }
}

/// The plan entries, in manifest order, and the state changes that apply them.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub entries: Vec<PlanEntry>,
    pub changes: Vec<AgentChange>,
}

/// Plans `candidates` (this commit's agents) against `registered` (the
/// repository's stored agents, any status).
pub fn plan(candidates: &[Candidate], registered: &[Agent], context: &PlanContext<'_>) -> Plan {
    let stored: BTreeMap<&str, &Agent> = registered
        .iter()
        .map(|a| (a.manifest_path.as_str(), a))
        .collect();
    let mut result = Plan::default();
    for candidate in candidates {
        let previous = stored.get(candidate.manifest.manifest.as_str()).copied();
        match (context.project_of)(&candidate.manifest.manifest) {
            Some(project_id) => {
                plan_candidate(candidate, previous, &project_id, context, &mut result);
            }
            None => result.entries.push(entry(
                &candidate.manifest,
                PlanStatus::Unregistered,
                candidate.packaged.as_ref(),
                previous,
            )),
        }
    }
    let discovered: BTreeSet<&str> = candidates
        .iter()
        .map(|c| c.manifest.manifest.as_str())
        .collect();
    for agent in registered {
        if !discovered.contains(agent.manifest_path.as_str())
            && (context.project_of)(&agent.manifest_path).is_some()
        {
            plan_missing(agent, context, &mut result);
        }
    }
    result.entries.sort_by(|a, b| a.manifest.cmp(&b.manifest));
    result
}

fn plan_candidate(
    candidate: &Candidate,
    previous: Option<&Agent>,
    project_id: &str,
    context: &PlanContext<'_>,
    plan: &mut Plan,
) {
    let manifest = &candidate.manifest;
    let Some(packaged) = &candidate.packaged else {
        plan.entries
            .push(entry(manifest, PlanStatus::Failed, None, previous));
        return;
    };
    let packaged = &packaged.as_registered(previous);
    let target = if manifest.enabled {
        AgentStatus::Active
    } else {
        AgentStatus::Disabled
    };
    let stored = context.bindings_of(&manifest.manifest);
    let desired = match target {
        AgentStatus::Active => {
            match bindings::desired(
                manifest,
                context.repository,
                &packaged.snapshot_hash,
                &stored,
            ) {
                Ok(desired) => desired,
                Err(error) => {
                    // No random trigger id: register nothing rather than a
                    // derivable id; the previous registration stays.
                    tracing::error!(manifest = %manifest.manifest, %error, "cannot mint a trigger id");
                    plan.entries
                        .push(entry(manifest, PlanStatus::Failed, None, previous));
                    return;
                }
            }
        }
        _ => Vec::new(),
    };
    let bindings_digest = bindings::digest(&desired);
    let recorded_current = previous
        .and_then(|p| p.bindings_digest.as_deref())
        .map(|recorded| {
            recorded == bindings_digest || recorded == bindings::legacy_digest(&desired)
        });
    let (puts, deletes) = bindings::diff(&stored, desired);
    let bindings_current = recorded_current.unwrap_or(puts.is_empty() && deletes.is_empty());
    let (status, action, detail) = match classify(manifest, packaged, target, previous, project_id)
    {
        // Same snapshot, other triggers: the bindings change the agent.
        (PlanStatus::Unchanged, None) if !bindings_current => (
            PlanStatus::Changed,
            Some(AuditAction::Changed),
            "trigger bindings changed",
        ),
        (status, action) => (status, action, action.map_or("", action_detail)),
    };
    plan.entries
        .push(entry(manifest, status, Some(packaged), previous));
    if let Some(action) = action {
        let mut record = agent_record(manifest, packaged, target, project_id, context);
        record.bindings_digest = Some(bindings_digest);
        let mut change = AgentChange::new(
            record,
            previous.map(|p| p.version),
            action,
            context.commit,
            detail,
            context.now,
        );
        change.audit.previous_snapshot_hash = previous.map(|p| p.snapshot_hash.clone());
        change.put_bindings = puts;
        change.delete_bindings = deletes;
        plan.changes.push(change);
    }
}

/// The plan status of a packaged agent, and the audit action when state must change.
fn classify(
    manifest: &AgentManifest,
    packaged: &Packaged,
    target: AgentStatus,
    previous: Option<&Agent>,
    project_id: &str,
) -> (PlanStatus, Option<AuditAction>) {
    let Some(previous) = previous else {
        return match target {
            // A disabled agent that was never registered stays unregistered.
            AgentStatus::Disabled => (PlanStatus::Disabled, None),
            _ => (PlanStatus::Added, Some(AuditAction::Added)),
        };
    };
    let same = previous.snapshot_hash == packaged.snapshot_hash
        && previous.alias == manifest.alias
        && previous.name == manifest.name
        // Re-registered under another project: the record moves with it.
        && previous.project_id == project_id
        // Registered before its layers were tracked, or with other dependency files.
        && previous.layer_key == packaged.layer_key();
    match (target, previous.status) {
        (AgentStatus::Disabled, AgentStatus::Disabled) if same => (PlanStatus::Disabled, None),
        (AgentStatus::Disabled, AgentStatus::Active | AgentStatus::Disabled) => {
            (PlanStatus::Disabled, Some(AuditAction::Disabled))
        }
        // A disabled agent whose registration is orphaned or torn down is not brought back.
        (AgentStatus::Disabled, _) => (PlanStatus::Disabled, None),
        (_, AgentStatus::Active) if same => (PlanStatus::Unchanged, None),
        (_, AgentStatus::Active) => (PlanStatus::Changed, Some(AuditAction::Changed)),
        _ => (PlanStatus::Added, Some(AuditAction::Reactivated)),
    }
}

/// A registered agent whose manifest this commit no longer has.
fn plan_missing(agent: &Agent, context: &PlanContext<'_>, plan: &mut Plan) {
    if agent.status == AgentStatus::TornDown {
        return;
    }
    plan.entries.push(PlanEntry {
        agent: agent.name.clone(),
        manifest: agent.manifest_path.clone(),
        status: PlanStatus::Orphaned,
        digest: Some(agent.payload_digest.clone()),
        snapshot: Some(agent.snapshot_hash.clone()),
        previous_snapshot: None,
        alias: agent.alias.clone(),
        drift: Vec::new(),
    });
    if agent.status == AgentStatus::Orphaned {
        return;
    }
    let mut record = agent.clone();
    record.status = AgentStatus::Orphaned;
    record.updated_at = context.now;
    record.bindings_digest = Some(bindings::digest(&[]));
    let mut change = AgentChange::new(
        record,
        Some(agent.version),
        AuditAction::Orphaned,
        context.commit,
        action_detail(AuditAction::Orphaned),
        context.now,
    );
    change.audit.previous_snapshot_hash = Some(agent.snapshot_hash.clone());
    // An orphaned agent's triggers stop dispatching.
    change.delete_bindings = context
        .bindings_of(&agent.manifest_path)
        .into_iter()
        .map(|b| b.trigger_id.clone())
        .collect();
    plan.changes.push(change);
}

fn entry(
    manifest: &AgentManifest,
    status: PlanStatus,
    packaged: Option<&Packaged>,
    previous: Option<&Agent>,
) -> PlanEntry {
    PlanEntry {
        agent: manifest.name.clone(),
        manifest: manifest.manifest.clone(),
        status,
        digest: packaged.map(|p| p.payload_digest.clone()),
        snapshot: packaged.map(|p| p.snapshot_hash.clone()),
        previous_snapshot: previous.map(|p| p.snapshot_hash.clone()),
        alias: manifest.alias.clone(),
        drift: Vec::new(),
    }
}

fn agent_record(
    manifest: &AgentManifest,
    packaged: &Packaged,
    status: AgentStatus,
    project_id: &str,
    context: &PlanContext<'_>,
) -> Agent {
    Agent {
        repository: context.repository.to_owned(),
        manifest_path: manifest.manifest.clone(),
        project_id: project_id.to_owned(),
        name: manifest.name.clone(),
        alias: manifest.alias.clone(),
        status,
        snapshot_hash: packaged.snapshot_hash.clone(),
        payload_digest: packaged.payload_digest.clone(),
        commit: context.commit.to_owned(),
        version: 0,
        updated_at: context.now,
        bindings_digest: None,
        layer_key: packaged.layer_key(),
        package_build: packaged.build.clone(),
    }
}

fn action_detail(action: AuditAction) -> &'static str {
    match action {
        AuditAction::Added => "registered from a sync",
        AuditAction::Changed => "new snapshot from a sync",
        AuditAction::Disabled => "disabled in the federation file",
        AuditAction::Orphaned => "manifest removed; kept until an explicit teardown",
        AuditAction::Reactivated => "manifest is back; reactivated",
        AuditAction::TornDown => "torn down",
        AuditAction::DriftAccepted => "critical drift accepted on a pull request",
        AuditAction::PreviewClosed => "a pull request's preview torn down",
    }
}
