//! Registered workspace manifests (docs/reference.md §5.4) and accepted drift.
//!
//! A workspace manifest is registered like an agent: on the registered ref each one's
//! resolved environment is stored as a content-addressed snapshot (in the blob store, by
//! the sync) and a [`WorkspaceRecord`] here points at it, keyed by (repository, id) where
//! the id is `workspace/<metadata.slug>` (the key `astrolift drift` matches manifests by).
//! A pull request's drift is computed against these records.
//!
//! Accepting a pull request's critical drift ("Accept drift" on its check run) appends one
//! audit event per drifted manifest ([`AuditAction::DriftAccepted`], its `commit` the head
//! sha, its `detail` who accepted what), kept apart from the agents' audit history (whose
//! sequence numbers are agent versions) and keyed by (repository, head sha, manifest path):
//! the first acceptance of a manifest's drift at a head is the one kept.

use serde::{Deserialize, Serialize};

use super::model::{AuditAction, AuditEvent, UnixSeconds};
use crate::{BoxFuture, StoreResult};

/// A registered workspace manifest: the newest snapshot of `id` in `repository`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceRecord {
    pub repository: String,
    /// `workspace/<metadata.slug>` (or `workspace/<path>` for a manifest without a slug).
    pub id: String,
    /// Repo-relative path of the manifest it was registered from.
    pub manifest_path: String,
    pub status: WorkspaceStatus,
    /// sha256 (hex) of the resolved environment's canonical JSON, stored as a snapshot blob.
    pub snapshot_hash: String,
    /// The commit it was registered from.
    pub commit: String,
    pub updated_at: UnixSeconds,
    /// Optimistic lock: 1 for the first write, +1 for each later one.
    pub version: u64,
}

/// Whether a registered workspace manifest is still in its repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceStatus {
    Active,
    /// Its manifest is gone: kept, and drift is no longer reported against it.
    Orphaned,
}

/// The audit event of `login` (with `role` on the repository) accepting `manifest_path`'s
/// critical drift (`changes`, such as `credential-removed GITHUB_TOKEN`) at `head_sha`.
pub fn drift_acceptance(
    repository: &str,
    manifest_path: &str,
    head_sha: &str,
    accepted: Acceptor<'_>,
    changes: &[String],
    at: UnixSeconds,
) -> AuditEvent {
    AuditEvent {
        repository: repository.to_owned(),
        manifest_path: manifest_path.to_owned(),
        version: 1,
        action: AuditAction::DriftAccepted,
        commit: head_sha.to_owned(),
        snapshot_hash: String::new(),
        previous_snapshot_hash: None,
        detail: format!(
            "{ACCEPTED_BY}{} ({}): {}",
            accepted.login,
            accepted.role,
            changes.join(", ")
        ),
        at,
    }
}

/// Who accepted drift, and their role on the repository (`write`, `maintain`, `admin`).
#[derive(Debug, Clone, Copy)]
pub struct Acceptor<'a> {
    pub login: &'a str,
    pub role: &'a str,
}

const ACCEPTED_BY: &str = "accepted by @";

/// The login that accepted the drift of a [`drift_acceptance`] event.
pub fn accepted_by(event: &AuditEvent) -> Option<&str> {
    let rest = event.detail.strip_prefix(ACCEPTED_BY)?;
    rest.split_once(' ').map(|(login, _)| login)
}

/// Workspace registrations and drift acceptances. Every [`super::StateStore`] offers it
/// through [`super::StateStore::workspaces`].
///
/// Contract (the contract suite runs it on SQLite and DynamoDB):
/// - `put_workspace` is conditional on the stored `version` (`None`: must not exist) and
///   fails with `Conflict` otherwise;
/// - `accept_drift` stores the first acceptance of (repository, commit, manifest path) and
///   returns the stored one, whatever later acceptances say;
/// - reads see the last write.
pub trait WorkspaceStore: Send + Sync {
    /// The workspace manifests registered for a repository (every status), ordered by id.
    fn list_workspaces<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<WorkspaceRecord>>>;
    /// Creates (`expected_version: None`) or replaces a record whose stored version is
    /// `expected_version`; `record.version` is the new version.
    fn put_workspace<'a>(
        &'a self,
        record: &'a WorkspaceRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Appends a drift acceptance ([`drift_acceptance`]) unless one of its (repository,
    /// commit, manifest path) is stored; returns the stored one.
    fn accept_drift<'a>(&'a self, event: &'a AuditEvent) -> BoxFuture<'a, StoreResult<AuditEvent>>;
    /// The drift acceptances of `repository` at commit `head_sha`, ordered by manifest path.
    fn list_drift_acceptances<'a>(
        &'a self,
        repository: &'a str,
        head_sha: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditEvent>>>;
}
