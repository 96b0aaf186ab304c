//! The heads `astrolift reconcile` last saw (docs/reference.md §4, "astrolift reconcile"):
//! per (repository, ref), the commit GitHub named and the `ETag` of that answer, so the
//! next reconcile asks with `If-None-Match` and a ref that has not moved costs GitHub a
//! `304`. Written only by reconcile; a record is a cache: one lost or absent makes the next
//! reconcile ask unconditionally, nothing more.
//!
//! One concern of the state store, reached through
//! [`StateStore::seen_heads`](super::StateStore::seen_heads); its contract suite is
//! `crates/store/tests/it/seen_head_contract.rs`, run on SQLite and DynamoDB.

use serde::{Deserialize, Serialize};

use super::model::UnixSeconds;
use crate::{BoxFuture, StoreResult};

/// The head of a ref as the last reconcile saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenHead {
    /// `owner/name`.
    pub repository: String,
    /// The branch (or tag) asked.
    pub git_ref: String,
    /// The commit GitHub named.
    pub commit: String,
    /// The `ETag` of that answer, sent back as `If-None-Match`; `None` when GitHub gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// When GitHub last named it (a `304` writes nothing).
    pub checked_at: UnixSeconds,
}

/// The heads reconcile last saw. Dyn-compatible.
///
/// Contract (the contract suite runs it on SQLite and DynamoDB):
/// - `put_seen_head` creates or replaces the record of (repository, ref);
/// - `get_seen_head` sees the last write, and only that (repository, ref)'s;
/// - refs are compared exactly (`main` is not `Main`), repositories too (as registered).
pub trait SeenHeadStore: Send + Sync {
    /// The head reconcile last saw of `git_ref` in `repository`.
    fn get_seen_head<'a>(
        &'a self,
        repository: &'a str,
        git_ref: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SeenHead>>>;

    /// Creates or replaces the record of (`head.repository`, `head.git_ref`).
    fn put_seen_head<'a>(&'a self, head: &'a SeenHead) -> BoxFuture<'a, StoreResult<()>>;
}
