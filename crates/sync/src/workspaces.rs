//! Workspace manifests (docs/reference.md §5.4) registered like agents, and their drift.
//!
//! Each discovered workspace manifest is resolved
//! ([`astrolift_manifest::drift::resolve_workspaces`]) and compared with the
//! registered one of the same id (`workspace/<slug>`) by the one drift engine
//! of `astrolift drift` ([`astrolift_manifest::drift::compare_environments`]):
//! the report carries every environment's status and drift, each drift with
//! its severity. On apply, the resolved environment of each added or changed
//! one is uploaded as a snapshot (`snapshots/<sha256>.json`, put-if-absent)
//! and then its record written, conditional on the version planned against;
//! a registered one whose manifest is gone becomes `orphaned`. Written after
//! the agents' change set, like workflows.
//!
//! A registered snapshot that cannot be read is compared as absent (the
//! environment shows as `added`): drift is information, never a reason to
//! fail a sync.

use astrolift_manifest::drift::{
    EnvironmentDrift, EnvironmentStatus, Environments, compare_environments, resolve_workspaces,
};
use astrolift_manifest::resolved::ResolvedEnvironment;
use astrolift_manifest::{Limits, SourceTree};
use astrolift_store::blob::{BlobBody, BlobKey, BlobStore, CONTENT_TYPE_JSON, PutOutcome};
use astrolift_store::state::{StateStore, UnixSeconds, WorkspaceRecord, WorkspaceStatus};
use sha2::{Digest, Sha256};

use crate::SyncError;
use crate::request::read_snapshot;

/// The workspaces' drift and what an apply would write.
#[derive(Debug, Default)]
pub(crate) struct WorkspacePlan {
    /// Every environment, registered or found, by id.
    pub environments: Vec<EnvironmentDrift>,
    /// Records to write on apply, each with the version it is planned against, and the
    /// snapshot JSON of each new one.
    writes: Vec<(WorkspaceRecord, Option<u64>, Option<Vec<u8>>)>,
}

/// What a workspace plan needs to know of its sync.
pub(crate) struct WorkspaceContext<'a> {
    pub repository: &'a str,
    pub commit: &'a str,
    pub now: UnixSeconds,
    pub limits: &'a Limits,
    /// Whether an apply of this sync registers the manifest at a path.
    pub registers: &'a dyn Fn(&str) -> bool,
}

/// Resolves the workspace manifests at `paths` and compares them with the registered ones.
pub(crate) async fn plan_workspaces(
    tree: &dyn SourceTree,
    paths: &[String],
    state: &dyn StateStore,
    blobs: &dyn BlobStore,
    context: &WorkspaceContext<'_>,
) -> Result<WorkspacePlan, SyncError> {
    let registered: Vec<WorkspaceRecord> = state
        .workspaces()
        .list_workspaces(context.repository)
        .await?
        .into_iter()
        .filter(|record| record.status == WorkspaceStatus::Active)
        .collect();
    let new = resolve_workspaces(tree, paths, context.limits);
    let old = registered_environments(&registered, &new, blobs).await;
    let environments = compare_environments(&old, &new);
    let writes = planned_writes(&registered, &new, context);
    Ok(WorkspacePlan {
        environments,
        writes,
    })
}

/// The registered environments. One whose found manifest resolves to the
/// registered snapshot's hash is that manifest's environment, so its blob is
/// read only when something changed: an unchanged repository costs no read.
async fn registered_environments(
    registered: &[WorkspaceRecord],
    found: &Environments,
    blobs: &dyn BlobStore,
) -> Environments {
    let mut old = Environments::new();
    for record in registered {
        let unchanged = found
            .get(&record.id)
            .map(|(_, resolved)| resolved)
            .filter(|resolved| snapshot_of(resolved).1 == record.snapshot_hash);
        let resolved = match unchanged {
            Some(resolved) => Some(resolved.clone()),
            None => read_snapshot::<ResolvedEnvironment>(blobs, &record.snapshot_hash).await,
        };
        if let Some(resolved) = resolved {
            old.insert(record.id.clone(), (record.manifest_path.clone(), resolved));
        }
    }
    old
}

/// The snapshot JSON of a resolved environment and its sha256 (hex).
fn snapshot_of(resolved: &ResolvedEnvironment) -> (Vec<u8>, String) {
    let json = resolved.canonical_json().into_bytes();
    let hash = hex::encode(Sha256::digest(&json));
    (json, hash)
}

fn planned_writes(
    registered: &[WorkspaceRecord],
    found: &Environments,
    context: &WorkspaceContext<'_>,
) -> Vec<(WorkspaceRecord, Option<u64>, Option<Vec<u8>>)> {
    let record_of = |id: &str| registered.iter().find(|r| r.id == id);
    let mut writes = Vec::new();
    for (id, (path, resolved)) in found {
        if !(context.registers)(path) {
            continue;
        }
        let (json, hash) = snapshot_of(resolved);
        let before = record_of(id);
        if before.is_some_and(|r| r.snapshot_hash == hash && &r.manifest_path == path) {
            continue;
        }
        let record = WorkspaceRecord {
            repository: context.repository.to_owned(),
            id: id.clone(),
            manifest_path: path.clone(),
            status: WorkspaceStatus::Active,
            snapshot_hash: hash,
            commit: context.commit.to_owned(),
            updated_at: context.now,
            version: before.map_or(1, |r| r.version + 1),
        };
        writes.push((record, before.map(|r| r.version), Some(json)));
    }
    for gone in registered.iter().filter(|r| !found.contains_key(&r.id)) {
        if !(context.registers)(&gone.manifest_path) {
            continue;
        }
        let mut record = gone.clone();
        record.status = WorkspaceStatus::Orphaned;
        record.commit = context.commit.to_owned();
        record.updated_at = context.now;
        record.version = gone.version + 1;
        writes.push((record, Some(gone.version), None));
    }
    writes
}

/// Uploads each new snapshot, then writes each record; returns (blob puts, state writes).
pub(crate) async fn apply_workspaces(
    plan: &WorkspacePlan,
    state: &dyn StateStore,
    blobs: &dyn BlobStore,
) -> Result<(u64, u64), SyncError> {
    let mut puts = 0;
    for (record, _, json) in &plan.writes {
        let Some(json) = json else { continue };
        let key = BlobKey::snapshot(&record.snapshot_hash)?;
        let body = BlobBody::Bytes(json.clone());
        let outcome = blobs.put_if_absent(&key, body, CONTENT_TYPE_JSON).await?;
        puts += u64::from(outcome == PutOutcome::Created);
    }
    for (record, expected, _) in &plan.writes {
        state.workspaces().put_workspace(record, *expected).await?;
    }
    Ok((puts, plan.writes.len() as u64))
}

/// Environments that differ from the registered ones (added, removed or changed).
pub fn drifted(environments: &[EnvironmentDrift]) -> impl Iterator<Item = &EnvironmentDrift> {
    environments
        .iter()
        .filter(|e| e.status != EnvironmentStatus::Unchanged)
}
