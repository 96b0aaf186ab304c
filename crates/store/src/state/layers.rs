//! Dependency layer builds (docs/reference.md "Dependency layers"): what the packager agent
//! built, or is building, for one layer key.
//!
//! A layer key is sha256 over a package's dependency files and its runtime image
//! (`astrolift_package::dependencies::layer_key`), so every snapshot of every agent with
//! the same dependency files and image shares one [`LayerBuild`]: a later snapshot whose
//! dependency files did not change reuses it with no new packager dispatch. An agent
//! points at its build through [`Agent::layer_key`](super::Agent::layer_key).

use serde::{Deserialize, Serialize};

use super::model::UnixSeconds;
use crate::{BoxFuture, StoreResult};

/// Where the layer build of one key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerStatus {
    /// The packager was dispatched; its terminal result has not arrived.
    Pending,
    /// The packager returned its layers.
    Ready,
    /// The packager failed (or could not be dispatched): the next sync of an agent with
    /// this key dispatches it again.
    Failed,
}

impl LayerStatus {
    /// The wire name (`pending`, `ready`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            LayerStatus::Pending => "pending",
            LayerStatus::Ready => "ready",
            LayerStatus::Failed => "failed",
        }
    }
}

/// One layer the packager captured (an entry of its result's `layers`, docs/reference.md §16).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layer {
    pub layer_id: String,
    pub name: String,
    /// Absolute, normalised path the runtime mounts it at.
    pub mount_path: String,
    /// `sha256:<64 hex>` of the layer's `tar.gz`, stored at `layers/sha256/<hex>.tar.gz`.
    pub digest: String,
}

/// The layer build of one layer key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerBuild {
    /// 64 hex digits.
    pub layer_key: String,
    pub status: LayerStatus,
    /// The layers, when `ready` (empty otherwise).
    #[serde(default)]
    pub layers: Vec<Layer>,
    /// Why the last attempt failed, when `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The packager dispatch of the last attempt (its result is the one accepted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_id: Option<String>,
    /// `owner/name` of the agent the last attempt was dispatched for.
    pub repository: String,
    /// Its manifest path.
    pub manifest_path: String,
    /// `sha256:<hex>` of the package archive the packager was given (`artifact_ref`).
    pub artifact_ref: String,
    /// Packager dispatches made for this key so far.
    pub attempts: u32,
    pub updated_at: UnixSeconds,
    /// Optimistic lock: 1 for the first write, +1 for each later one.
    pub version: u64,
}

/// Layer builds. Every [`super::StateStore`] offers it through
/// [`super::StateStore::layers`].
///
/// Contract (the contract suite runs it on SQLite and DynamoDB):
/// - `put_layer_build` is conditional on the stored `version` (`None`: must not exist) and
///   fails with `Conflict` otherwise, so two syncs never both dispatch the packager;
/// - `get_layer_build` sees the last write.
pub trait LayerStore: Send + Sync {
    /// The build of `layer_key`, if the packager was ever dispatched for it.
    fn get_layer_build<'a>(
        &'a self,
        layer_key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<LayerBuild>>>;
    /// Creates (`expected_version: None`) or replaces a record whose stored version is
    /// `expected_version`; `record.version` is the new version.
    fn put_layer_build<'a>(
        &'a self,
        record: &'a LayerBuild,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>>;
}

/// One dependency file of a package, as the packager's payload names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DependencyFileRef {
    /// Package-relative path (`requirements.txt`).
    pub path: String,
    /// sha256 (hex) of its bytes.
    pub sha256: String,
}

/// What a sync asks of the packager for one agent it registered: the layers of its
/// package's dependency files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerRequest {
    pub repository: String,
    pub manifest_path: String,
    /// The agent's name.
    pub name: String,
    /// The project it registered under (where the packager agent is looked up).
    pub project_id: String,
    /// `sha256:<hex>` of its package archive: the packager's `artifact_ref`.
    pub artifact_ref: String,
    /// 64 hex digits.
    pub layer_key: String,
    pub dependency_files: Vec<DependencyFileRef>,
}
