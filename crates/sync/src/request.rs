//! What a sync is asked to do and where it reads and writes: the request,
//! the stores, and reading a stored snapshot back.

use std::sync::Arc;

use astrolift_manifest::ValidateOptions;
use astrolift_store::state::UnixSeconds;
use astrolift_store::{BlobKey, BlobStore, StateStore};

use crate::concurrency::SyncConcurrency;
use crate::order::CommitOrder;
use crate::report::{Coverage, Mode};
use crate::samples::SampleChecker;
use crate::skills::SkillFetcher;

/// The stores a sync reads and writes, and how many requests it has in flight to them.
#[derive(Debug, Clone)]
pub struct Stores {
    pub blobs: Arc<dyn BlobStore>,
    pub state: Arc<dyn StateStore>,
    pub concurrency: SyncConcurrency,
}

impl Stores {
    /// `state` and `blobs`, at the default concurrency.
    pub fn new(state: Arc<dyn StateStore>, blobs: Arc<dyn BlobStore>) -> Self {
        Self {
            blobs,
            state,
            concurrency: SyncConcurrency::default(),
        }
    }
}

/// One sync: which commit of which repository, and what to do with it.
#[derive(Debug, Clone)]
pub struct SyncRequest {
    /// `owner/name`.
    pub repository: String,
    pub commit: String,
    /// The commit's committer time, recorded with the synced commit for
    /// information only: it never orders commits (the committer writes it).
    pub commit_time: UnixSeconds,
    /// The push's `before`: the ref's previous head. When it is the
    /// registered commit the push is a fast-forward and `order` is not asked.
    pub before: Option<String>,
    /// Commit ancestry (see [`crate::order`]); `None` (local runs) applies
    /// the pushed commit.
    pub order: Option<Arc<dyn CommitOrder>>,
    /// The branch, e.g. `main`; required to apply.
    pub git_ref: Option<String>,
    pub mode: Mode,
    /// Now, for records and audit events.
    pub now: UnixSeconds,
    pub validate: ValidateOptions,
    /// Fetches the skill repositories that catalogue and organization skills name (see
    /// [`crate::skills`]); `None` (no App credentials here) leaves each such reference
    /// unresolved, a warning that says why.
    pub skills: Option<Arc<dyn SkillFetcher>>,
    /// A pull-request head whose registrations have previews: the sync records them
    /// ([`crate::previews`]). `None` for every other sync.
    pub previews: Option<PreviewRequest>,
    /// Evaluates the bindings' sample requests right after validation (see
    /// [`crate::samples`]); `None`: samples are not evaluated.
    pub samples: Option<Arc<dyn SampleChecker>>,
    /// Which pins of the repository's `astrolift.lock` to move ([`crate::locking`]): the
    /// sync then also computes the moved lock ([`crate::Report::relocked`]), which it never
    /// writes; `None` for every sync but a dependent's re-sync.
    pub relock: Option<crate::locking::Update>,
}

/// The snapshot blob `hash`, parsed; `None` when it is missing or unreadable.
pub(crate) async fn read_snapshot<T: serde::de::DeserializeOwned>(
    blobs: &dyn BlobStore,
    hash: &str,
) -> Option<T> {
    let key = BlobKey::snapshot(hash).ok()?;
    let bytes = blobs.get(&key).await.ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// What a sync of a pull request's head previews.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewRequest {
    /// The pull request's number.
    pub pull_request: u64,
    /// The registrations with previews that cover its base branch, each under its project.
    pub registrations: Vec<Coverage>,
    /// For a pull request from a fork: who approved this head with `/astrolift preview`.
    pub approved_by: Option<String>,
}
