//! The local dispatch outbox kept inside an embedded state store: the queue of recorded
//! dispatches that no dispatch queue has taken yet (the transactional-outbox pattern).
//!
//! A dispatch and its place in the outbox are written in one transaction, so a dispatch is
//! never recorded without being queued, nor queued without being recorded, and the bound
//! is checked inside that transaction: a full outbox writes nothing. The outbox keeps only
//! the dispatch's key; the message is the one the dispatch record keeps.
//!
//! Only the SQLite backend offers it ([`super::StateStore::dispatch_outbox`]). DynamoDB
//! has none: on AWS dispatches go to SQS.

use super::model::{Dispatch, DispatchOutcome};
use crate::{BoxFuture, StoreResult};

/// What [`DispatchOutbox::record_queued`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Queued {
    /// The dispatch was new, so it was recorded and queued; or its key was recorded
    /// before ([`DispatchOutcome::Existing`]) and nothing was written.
    Recorded(DispatchOutcome),
    /// The outbox holds its maximum: nothing was written.
    Full,
}

/// A dispatch waiting in the outbox, oldest first by `seq`.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedDispatch {
    /// Its place in the outbox.
    pub seq: i64,
    /// The dispatch record, with its message.
    pub dispatch: Dispatch,
}

/// The outbox (see the module docs).
pub trait DispatchOutbox: Send + Sync {
    /// Records `dispatch` as [`super::DispatchStore::record_dispatch`] does and, when it is
    /// new, queues it, in one transaction; [`Queued::Full`] when `max` dispatches wait
    /// and its key was not recorded before (a duplicate is answered even then).
    fn record_queued<'a>(
        &'a self,
        dispatch: &'a Dispatch,
        max: u64,
    ) -> BoxFuture<'a, StoreResult<Queued>>;

    /// Queues the dispatch recorded before under `idempotency_key` (a no-op when it
    /// waits already); [`crate::StoreError::NotFound`] when no dispatch is recorded under
    /// it, so the outbox never holds a place it cannot send. It never refuses for the
    /// bound: that is [`DispatchOutbox::record_queued`]'s.
    fn queue<'a>(&'a self, idempotency_key: &'a str) -> BoxFuture<'a, StoreResult<()>>;

    /// How many dispatches wait.
    fn queued_len(&self) -> BoxFuture<'_, StoreResult<u64>>;

    /// Up to `limit` waiting dispatches after `after_seq`, oldest first.
    fn queued(&self, after_seq: i64, limit: u32)
    -> BoxFuture<'_, StoreResult<Vec<QueuedDispatch>>>;

    /// Takes the dispatch at `seq` out of the outbox (sent); a no-op when it is not there.
    fn unqueue(&self, seq: i64) -> BoxFuture<'_, StoreResult<()>>;
}
