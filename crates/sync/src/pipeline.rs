//! `sync`: discover → validate → package → plan → (apply) → report.

use std::sync::Arc;

use astrolift_manifest::{ValidateOptions, diagnostic};
use astrolift_package::PayloadTree;
use astrolift_store::blob::{
    BlobBody, BlobKey, BlobStore, CONTENT_TYPE_JSON, CONTENT_TYPE_TAR_GZ, PutOutcome,
};
use astrolift_store::state::{
    ChangeSet, StateStore, SyncedCommit, SyncedCommitUpdate, UnixSeconds,
};

use crate::SyncError;
use crate::drift::snapshot_drift;
use crate::package_step::{Artifacts, Packaging, validate_and_package};
use crate::plan::{Plan, PlanContext, PlanStatus, plan};
use crate::report::{Mode, Report, ReportCounts};

/// The stores a sync reads and writes.
#[derive(Debug, Clone)]
pub struct Stores {
    pub blobs: Arc<dyn BlobStore>,
    pub state: Arc<dyn StateStore>,
}

/// One sync: which commit of which repository, and what to do with it.
#[derive(Debug, Clone)]
pub struct SyncRequest {
    /// `owner/name`.
    pub repository: String,
    pub commit: String,
    /// The commit's committer time: orders commits when ancestry is unknown.
    pub commit_time: UnixSeconds,
    /// The branch, e.g. `main`; required to apply.
    pub git_ref: Option<String>,
    pub mode: Mode,
    /// Now, for records and audit events.
    pub now: UnixSeconds,
    pub validate: ValidateOptions,
}

/// Runs the pipeline on `tree`. `progress(done, total)` is called after each agent is packaged.
///
/// Agent problems are diagnostics in the report; `Err` means the pipeline
/// itself failed (a store unreachable, a concurrent write): nothing partial
/// is registered, and running the same request again converges.
pub async fn sync(
    tree: &(dyn PayloadTree + Sync),
    request: &SyncRequest,
    stores: &Stores,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Report, SyncError> {
    let applying = matches!(request.mode, Mode::Apply { .. });
    let packaging = validate_and_package(tree, &request.validate, applying, progress)?;
    let registered = stores.state.list_agents(&request.repository).await?;
    let bindings: Vec<_> = stores
        .state
        .list_trigger_bindings()
        .await?
        .into_iter()
        .filter(|b| b.repository == request.repository)
        .collect();
    let project_id = match &request.mode {
        Mode::Apply { project_id } => project_id.as_str(),
        Mode::Check => registered.first().map_or("", |a| a.project_id.as_str()),
    };
    let context = PlanContext {
        repository: &request.repository,
        project_id,
        commit: &request.commit,
        now: request.now,
        bindings: &bindings,
    };
    let mut planned = plan(&packaging.candidates, &registered, &context);
    add_drift(&mut planned, &packaging, stores.blobs.as_ref()).await;
    let mut report = new_report(request, &planned, packaging.diagnostics.clone());
    if applying {
        apply(request, stores, &packaging, planned, &mut report).await?;
    }
    report.recount();
    Ok(report)
}

fn new_report(
    request: &SyncRequest,
    planned: &Plan,
    mut diagnostics: Vec<astrolift_manifest::Diagnostic>,
) -> Report {
    diagnostic::sort(&mut diagnostics);
    Report {
        repository: request.repository.clone(),
        commit: request.commit.clone(),
        git_ref: request.git_ref.clone(),
        mode: request.mode.clone(),
        applied: false,
        skipped: None,
        plan: planned.entries.clone(),
        diagnostics,
        counts: ReportCounts::default(),
    }
}

/// Fills the drift of changed agents: their registered snapshot (from the
/// blob store) against the one just built. A registered snapshot that cannot
/// be read leaves that drift empty: drift is information, never a reason to
/// fail a sync.
async fn add_drift(planned: &mut Plan, packaging: &Packaging, blobs: &dyn BlobStore) {
    for entry in planned
        .entries
        .iter_mut()
        .filter(|e| e.status == PlanStatus::Changed)
    {
        let Some(old) = &entry.previous_snapshot else {
            continue;
        };
        let new = artifacts_for(packaging, &entry.manifest)
            .and_then(|a| serde_json::from_slice::<serde_json::Value>(&a.snapshot_json).ok());
        let (Some(old), Some(new)) = (read_snapshot(blobs, old).await, new) else {
            continue;
        };
        entry.drift = snapshot_drift(&old, &new);
    }
}

async fn read_snapshot(blobs: &dyn BlobStore, hash: &str) -> Option<serde_json::Value> {
    let key = BlobKey::snapshot(hash).ok()?;
    let bytes = blobs.get(&key).await.ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Uploads new blobs, then writes state in one conditional change set.
async fn apply(
    request: &SyncRequest,
    stores: &Stores,
    packaging: &Packaging,
    planned: Plan,
    report: &mut Report,
) -> Result<(), SyncError> {
    let git_ref = request.git_ref.as_deref().ok_or(SyncError::NoRef)?;
    let synced = stores
        .state
        .get_synced_commit(&request.repository, git_ref)
        .await?;
    if let Some(newer) = synced.as_ref().filter(|s| is_newer(s, request)) {
        report.skipped = Some(format!(
            "commit {} is older than {}, already registered for {git_ref}; nothing was written",
            short(&request.commit),
            short(&newer.commit)
        ));
        return Ok(());
    }
    let uploads = upload_artifacts(stores.blobs.as_ref(), packaging, &planned).await?;
    let mut changes = ChangeSet::new(&request.repository);
    changes.agents = planned.changes;
    if synced.as_ref().is_none_or(|s| s.commit != request.commit) {
        changes.synced = Some(SyncedCommitUpdate {
            commit: SyncedCommit {
                repository: request.repository.clone(),
                ref_name: git_ref.to_owned(),
                commit: request.commit.clone(),
                commit_time: request.commit_time,
                synced_at: request.now,
            },
            expected_previous: synced.map(|s| s.commit),
        });
    }
    let written = if changes.is_empty() {
        0
    } else {
        stores.state.apply(changes).await?.items_written
    };
    report.applied = true;
    report.counts.blob_puts = uploads;
    report.counts.state_writes = written;
    Ok(())
}

/// Ordering rule: a sync never overwrites state written from a newer commit.
/// The same commit is a re-run (allowed, and writes nothing new); another
/// commit is refused when the registered one has a later committer time.
fn is_newer(synced: &SyncedCommit, request: &SyncRequest) -> bool {
    synced.commit != request.commit && synced.commit_time > request.commit_time
}

/// Uploads the archive and then the snapshot of every agent whose change
/// points at a new snapshot. Put-if-absent: existing objects are skipped.
async fn upload_artifacts(
    blobs: &dyn BlobStore,
    packaging: &Packaging,
    planned: &Plan,
) -> Result<u64, SyncError> {
    let mut puts = 0;
    for change in &planned.changes {
        let Some(artifacts) = artifacts_for(packaging, &change.agent.manifest_path) else {
            continue;
        };
        if let Some(archive) = &artifacts.archive {
            let key = BlobKey::package(&change.agent.payload_digest)?;
            let body = BlobBody::File(archive.to_path_buf());
            puts += u64::from(
                blobs.put_if_absent(&key, body, CONTENT_TYPE_TAR_GZ).await? == PutOutcome::Created,
            );
        }
        let key = BlobKey::snapshot(&change.agent.snapshot_hash)?;
        let body = BlobBody::Bytes(artifacts.snapshot_json.clone());
        puts += u64::from(
            blobs.put_if_absent(&key, body, CONTENT_TYPE_JSON).await? == PutOutcome::Created,
        );
    }
    Ok(puts)
}

fn artifacts_for<'p>(packaging: &'p Packaging, manifest_path: &str) -> Option<&'p Artifacts> {
    let index = packaging
        .candidates
        .iter()
        .position(|c| c.manifest.manifest == manifest_path)?;
    packaging.artifacts.get(index)?.as_ref()
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
