//! Dispatch records, idempotent by their idempotency key, each recorded with its task.
//!
//! One concern of the state store: [`StateStore`](super::StateStore) is the union of
//! the concerns; its contract suite is `crates/store/tests/it/dispatch_contract.rs`, run on
//! SQLite and DynamoDB.

use super::model::{Dispatch, DispatchOutcome};
use crate::{BoxFuture, StoreResult};

/// Dispatch records, idempotent by their idempotency key, each recorded with its task. Dyn-compatible.
pub trait DispatchStore: Send + Sync {
    /// Stores a dispatch unless one with its idempotency key exists, and with it, in the same
    /// conditional write, its task ([`DispatchTask::queued`], found by task id and by
    /// dispatch id through [`StateStore::tasks`]); a dispatch without a task id (the shape of
    /// records written before tasks existed) gets none (a compatibility shim: when it can go
    /// is in docs/operations.md, "Compatibility shims").
    fn record_dispatch<'a>(
        &'a self,
        dispatch: &'a Dispatch,
    ) -> BoxFuture<'a, StoreResult<DispatchOutcome>>;

    /// A dispatch by idempotency key.
    fn get_dispatch<'a>(
        &'a self,
        idempotency_key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<Dispatch>>>;

    /// Every dispatch, newest first (`created_at`, then id). For operators
    /// (`astrolift dispatch list`), never on a request path: on DynamoDB it is a Scan of
    /// the table, read in pages.
    fn list_dispatches(&self) -> BoxFuture<'_, StoreResult<Vec<Dispatch>>>;
}

/// `dispatches` newest first (`created_at`, then id, both descending): the order of
/// [`DispatchStore::list_dispatches`].
pub fn newest_first(dispatches: &mut [Dispatch]) {
    dispatches.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
}
