//! Blob uploads of one agent version, before any state record names it (docs/reference.md
//! §6): its archive, then its snapshot, put-if-absent. Shared by the apply of a sync
//! ([`crate::pipeline`]) and a pull request's previews ([`crate::previews`]).

use astrolift_manifest::model::AgentManifest;
use astrolift_package::{LayerNeed, PayloadTree, PreparedAgent};
use astrolift_store::StoreError;
use astrolift_store::blob::{
    BlobBody, BlobKey, BlobStore, CONTENT_TYPE_JSON, CONTENT_TYPE_TAR_GZ, PutOutcome,
};
use astrolift_store::state::DependencyFileRef;

use crate::SyncError;
use crate::package_step::{ArchiveOrigin, Artifacts, Packaging, build_archive};

/// The version a state record will name: its snapshot and archive.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredVersion<'a> {
    pub snapshot_hash: &'a str,
    pub payload_digest: &'a str,
}

/// Uploads the archive, then the snapshot, of the agent at `manifest_path` (put-if-absent),
/// before any record names them. Returns the PUTs made.
pub(crate) async fn upload_version(
    blobs: &dyn BlobStore,
    tree: &dyn PayloadTree,
    packaging: &Packaging,
    manifest_path: &str,
    version: StoredVersion<'_>,
) -> Result<u64, SyncError> {
    let Some((manifest, artifacts)) = artifacts_for(packaging, manifest_path) else {
        return Ok(0);
    };
    let digest = version.payload_digest;
    let mut puts = upload_archive(blobs, tree, manifest, artifacts, digest).await?;
    let key = BlobKey::snapshot(version.snapshot_hash)?;
    let body = BlobBody::Bytes(artifacts.snapshot_json.clone());
    puts +=
        u64::from(blobs.put_if_absent(&key, body, CONTENT_TYPE_JSON).await? == PutOutcome::Created);
    Ok(puts)
}

/// Makes sure the archive `digest` is stored: uploads the one built here;
/// for one known from a recorded build (the agent's record, or a legacy
/// fingerprint record), checks that it is stored, and builds and uploads it
/// when it is not (a store that lost it, or a record copied from elsewhere).
/// Returns the PUTs made.
async fn upload_archive(
    blobs: &dyn BlobStore,
    tree: &dyn PayloadTree,
    manifest: &AgentManifest,
    artifacts: &Artifacts,
    digest: &str,
) -> Result<u64, SyncError> {
    // An inline package has no archive, and "" is no key.
    if matches!(artifacts.origin, ArchiveOrigin::Inline) {
        return Ok(0);
    }
    let key = BlobKey::package(digest)?;
    let rebuilt;
    let path = match (&artifacts.archive, &artifacts.origin) {
        (Some(path), _) => path.to_path_buf(),
        (None, ArchiveOrigin::Reused(agent)) => {
            if blobs.exists(&key).await? {
                return Ok(0);
            }
            rebuilt = rebuild_archive(&artifacts.skills.mount(tree), manifest, agent, digest)?;
            rebuilt.to_path_buf()
        }
        // Built without a spool file: only in check mode, which uploads nothing.
        (None, ArchiveOrigin::Built | ArchiveOrigin::Inline) => return Ok(0),
    };
    let outcome = blobs
        .put_if_absent(&key, BlobBody::File(path), CONTENT_TYPE_TAR_GZ)
        .await?;
    Ok(u64::from(outcome == PutOutcome::Created))
}

/// Builds the archive a recorded build promised, and checks that it is the
/// promised one.
fn rebuild_archive(
    tree: &dyn PayloadTree,
    manifest: &AgentManifest,
    agent: &PreparedAgent,
    digest: &str,
) -> Result<tempfile::TempPath, SyncError> {
    let refused = |message: String| {
        SyncError::Store(StoreError::Backend {
            operation: "rebuild a package archive".into(),
            message,
        })
    };
    let (result, archive) = build_archive(manifest, agent.clone(), tree, true)?;
    let packaged = result.map_err(|diagnostics| {
        let first = diagnostics.first().map(|d| d.message.clone());
        refused(format!(
            "{}: {}",
            manifest.manifest,
            first.unwrap_or_default()
        ))
    })?;
    match archive {
        Some(path) if packaged.output.digest == digest => Ok(path),
        _ => Err(refused(format!(
            "the build recorded for fingerprint {} says {digest}, but the archive of {} is \
             {}: the record is wrong (one at packages/fingerprints/{}.json can be deleted)",
            agent.fingerprint, manifest.manifest, packaged.output.digest, agent.fingerprint
        ))),
    }
}

/// The manifest and artifacts of the candidate at `manifest_path`, when it was packaged.
pub(crate) fn artifacts_for<'p>(
    packaging: &'p Packaging,
    manifest_path: &str,
) -> Option<(&'p AgentManifest, &'p Artifacts)> {
    let index = packaging
        .candidates
        .iter()
        .position(|c| c.manifest.manifest == manifest_path)?;
    let artifacts = packaging.artifacts.get(index)?.as_ref()?;
    Some((&packaging.candidates[index].manifest, artifacts))
}

/// The dependency files of a layer request, by path and hash.
pub(crate) fn dependency_file_refs(need: &LayerNeed) -> Vec<DependencyFileRef> {
    need.files
        .iter()
        .map(|file| DependencyFileRef {
            path: file.path.clone(),
            sha256: file.sha256.clone(),
        })
        .collect()
}
