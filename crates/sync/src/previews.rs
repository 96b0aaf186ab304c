//! Previews of a pull request's agents (docs/reference.md §17): the sync of a pull-request
//! head that a registration with previews covers packages every valid, enabled agent it
//! covers, uploads its archive and snapshot as an apply would, and records one
//! [`Preview`] per agent, keyed by (repository, manifest path, pull request) and pinned to
//! the head. A preview never writes an agent record, a trigger binding or a workflow: the
//! registered agents are exactly as they were.
//!
//! At most [`MAX_PREVIEWED_PULL_REQUESTS`] pull requests of a repository have previews; the
//! sync of another one records none and says why.

use astrolift_store::StateStore;
use astrolift_store::blob::BlobStore;
use astrolift_store::state::{Preview, PreviewStatus, preview_name};

use crate::SyncError;
use crate::package_step::Packaging;
use crate::report::{LayerRequest, PreviewEntry, PreviewsReport};
use crate::request::{PreviewRequest, SyncRequest};
use crate::upload::{StoredVersion, dependency_file_refs, upload_version};
use astrolift_package::PayloadTree;

/// At most this many pull requests of one repository have previews at a time.
pub const MAX_PREVIEWED_PULL_REQUESTS: usize = 20;

/// What [`record_previews`] did.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    pub report: PreviewsReport,
    /// The layer requests of the previews whose packages need dependency layers.
    pub layer_needs: Vec<LayerRequest>,
    pub blob_puts: u64,
    pub state_writes: u64,
}

/// Uploads the packages of the previewed agents and records their previews.
pub(crate) async fn record_previews(
    request: &SyncRequest,
    previews: &PreviewRequest,
    state: &dyn StateStore,
    blobs: &dyn BlobStore,
    tree: &dyn PayloadTree,
    packaging: &Packaging,
) -> Result<Recorded, SyncError> {
    let repository = &request.repository;
    let store = state.previews();
    let open = store.open_preview_pull_requests(repository).await?;
    if !open.contains(&previews.pull_request) && open.len() >= MAX_PREVIEWED_PULL_REQUESTS {
        let refused = format!(
            "{repository} already has previews for {} pull requests, the most it keeps: \
             closing one of them (or no push to it for 7 days) frees a place",
            open.len()
        );
        let report = PreviewsReport {
            previews: Vec::new(),
            refused: Some(refused),
        };
        return Ok(Recorded {
            report,
            ..Recorded::default()
        });
    }
    let mut recorded = Recorded::default();
    for candidate in &packaging.candidates {
        let manifest = &candidate.manifest;
        let (Some(packaged), true) = (&candidate.packaged, manifest.enabled) else {
            continue;
        };
        let path = manifest.manifest.as_str();
        let Some(coverage) = previews.registrations.iter().find(|c| c.covers(path)) else {
            continue;
        };
        let version = StoredVersion {
            snapshot_hash: &packaged.snapshot_hash,
            payload_digest: &packaged.payload_digest,
        };
        recorded.blob_puts += upload_version(blobs, tree, packaging, path, version).await?;
        let name = preview_name(&manifest.name, previews.pull_request);
        let known = store
            .get_preview(repository, path, previews.pull_request)
            .await?;
        let preview = Preview {
            repository: repository.clone(),
            manifest_path: path.to_owned(),
            pull_request: previews.pull_request,
            project_id: coverage.project_id.clone(),
            agent: manifest.name.clone(),
            name: name.clone(),
            head_sha: request.commit.clone(),
            snapshot_hash: packaged.snapshot_hash.clone(),
            payload_digest: packaged.payload_digest.clone(),
            layer_key: packaged.layers.as_ref().map(|l| l.layer_key.clone()),
            status: PreviewStatus::Active,
            fork_approved_by: previews.approved_by.clone(),
            pushed_at: request.now,
            updated_at: request.now,
            version: known.as_ref().map_or(1, |k| k.version + 1),
        };
        if known.as_ref().is_none_or(|k| !same_preview(k, &preview)) {
            store.put_preview(&preview).await?;
            recorded.state_writes += 1;
        }
        if let Some(need) = &packaged.layers {
            recorded.layer_needs.push(LayerRequest {
                repository: repository.clone(),
                manifest_path: path.to_owned(),
                name: name.clone(),
                project_id: coverage.project_id.clone(),
                artifact_ref: packaged.payload_digest.clone(),
                layer_key: need.layer_key.clone(),
                dependency_files: dependency_file_refs(need),
            });
        }
        recorded.report.previews.push(PreviewEntry {
            name,
            agent: manifest.name.clone(),
            manifest: path.to_owned(),
            snapshot: packaged.snapshot_hash.clone(),
            head_sha: request.commit.clone(),
            pull_request: previews.pull_request,
            needs_layers: packaged.layers.is_some(),
        });
    }
    Ok(recorded)
}

/// Whether `known` already records `new` (a redelivery of the same head writes nothing).
fn same_preview(known: &Preview, new: &Preview) -> bool {
    known.status == PreviewStatus::Active
        && known.head_sha == new.head_sha
        && known.snapshot_hash == new.snapshot_hash
        && known.project_id == new.project_id
        && known.fork_approved_by == new.fork_approved_by
}
