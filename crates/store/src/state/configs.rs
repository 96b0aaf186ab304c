//! Registered config manifests (docs/reference.md §5.3 and
//! §13): the packaged form of a config manifest that an env spec names.
//!
//! A sync of a config repository on its registered ref assembles each config manifest that
//! an env spec of the registration's project names, stores every requested file and the
//! bundle (the assembled document plus the file list) content-addressed in the blob store,
//! and points a [`ConfigPackage`] here at the bundle, keyed by (repository, manifest path).
//! A dispatch with such an env spec hands the bundle's files over through presigned URLs.

use serde::{Deserialize, Serialize};

use super::model::UnixSeconds;
use crate::{BoxFuture, StoreResult};

/// The newest packaged bundle of the config manifest `manifest_path` in `repository`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigPackage {
    pub repository: String,
    /// Repo-relative path of the config manifest (the env spec's `manifest_path`).
    pub manifest_path: String,
    /// sha256 (hex) of the bundle's canonical JSON, stored at `configs/sha256/<hex>.json`.
    pub bundle_hash: String,
    /// The commit it was packaged from.
    pub commit: String,
    pub updated_at: UnixSeconds,
    /// Optimistic lock: 1 for the first write, +1 for each later one.
    pub version: u64,
}

/// Config packages. Every [`super::StateStore`] offers it through
/// [`super::StateStore::config_packages`].
///
/// Contract (the contract suite runs it on SQLite and DynamoDB):
/// - `put_config_package` is conditional on the stored `version` (`None`: must not exist)
///   and fails with `Conflict` otherwise;
/// - `get_config_package` sees the last write.
pub trait ConfigPackageStore: Send + Sync {
    /// The config package of (`repository`, `manifest_path`), if one was registered.
    fn get_config_package<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<ConfigPackage>>>;
    /// Creates (`expected_version: None`) or replaces a record whose stored version is
    /// `expected_version`; `record.version` is the new version.
    fn put_config_package<'a>(
        &'a self,
        record: &'a ConfigPackage,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>>;
}
