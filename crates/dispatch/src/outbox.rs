//! The durable local dispatch outbox: where `serve` and the CLI put
//! dispatch messages when no dispatch queue is configured. Two forms:
//!
//! - [`StateOutbox`], with a `sqlite:` state store: inside the state
//!   ([`astrolift_store::state::outbox`]). The dispatch, its task and its
//!   place in the outbox are one transaction, the bound is checked inside it,
//!   and the outbox holds only the dispatch's key (the message is the
//!   record's). One commit and one hand-off to a blocking thread per dispatch.
//! - `SqliteOutbox` (module `file_outbox`, feature
//!   `sqlite`), a file of its own (`ASTROLIFT_OUTBOX=PATH`, or
//!   `.astrolift/outbox.db` with a state store that keeps no outbox; also
//!   the `outbox.db` beside a `sqlite:` state written before the outbox moved
//!   inside, which is moved in at start).
//!
//! The file (module `file_outbox`) has one table `outbox (seq, dispatch_id, body,
//! created_at)`, oldest first. It is bounded: past
//! `ASTROLIFT_OUTBOX_MAX` undrained messages (default
//! [`DEFAULT_OUTBOX_MAX`]) [`DispatchQueue::has_room`] is
//! [`DispatchError::Full`], which the trigger service answers `503` with
//! `Retry-After` before anything is recorded. When a dispatch queue is
//! configured, `SqliteOutbox::drain_to` sends what is left, oldest first,
//! deleting each message once the queue accepted it (a crash in between
//! sends it again: consumers key on `dispatch_id`).
//!
//! The bound is checked before the dispatch is recorded, so concurrent
//! dispatches may pass it by at most the number in flight; `publish` itself
//! never refuses, so a recorded dispatch always reaches the outbox.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use astrolift_store::state::{Dispatch, DispatchOutbox, Queued};
use astrolift_store::{BoxFuture, StateLocation, StateStore};

use crate::dispatch::{
    DispatchError, DispatchMessage, DispatchQueue, DispatchResult, QueueDestination,
    record_then_publish,
};

/// Default bound on undrained messages.
pub const DEFAULT_OUTBOX_MAX: u64 = 10_000;

/// A message kept in the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    pub seq: i64,
    pub message: DispatchMessage,
}

pub(crate) fn queue_error(error: impl std::fmt::Display) -> DispatchError {
    DispatchError::Queue(format!("outbox: {error}"))
}

/// The rows of an outbox, as [`drain`] reads and removes them.
pub(crate) trait OutboxRows: Sync {
    fn batch(&self) -> BoxFuture<'_, Result<Vec<OutboxEntry>, DispatchError>>;
    fn sent(&self, seq: i64) -> BoxFuture<'_, Result<(), DispatchError>>;
}

/// [`DispatchQueue::has_room`] of an outbox holding `len` of at most `max`.
pub(crate) fn room(len: u64, max: u64) -> Result<(), DispatchError> {
    if len >= max {
        return Err(DispatchError::Full { max });
    }
    Ok(())
}

/// Messages read per batch while draining.
pub(crate) const DRAIN_BATCH: u32 = 100;

/// Sends every message of `outbox` to `queue`, oldest first, removing each
/// once sent; stops at the first failure. Returns how many were sent.
pub(crate) async fn drain(
    outbox: &dyn OutboxRows,
    queue: &dyn DispatchQueue,
) -> Result<u64, DispatchError> {
    let mut sent = 0;
    loop {
        let batch = outbox.batch().await?;
        if batch.is_empty() {
            return Ok(sent);
        }
        for entry in batch {
            queue.publish(&entry.message).await?;
            outbox.sent(entry.seq).await?;
            sent += 1;
        }
    }
}

/// The outbox kept inside an embedded state store
/// ([`astrolift_store::state::outbox`]): a dispatch, its task and its place
/// in the outbox are one transaction, with the bound checked inside it, and
/// the outbox row holds only the dispatch's key (the message is the record's).
/// What `serve` and the CLI use with a `sqlite:` state store (unless
/// `ASTROLIFT_OUTBOX` names a file of its own).
#[derive(Clone)]
pub struct StateOutbox {
    state: Arc<dyn StateStore>,
    max: u64,
    path: PathBuf,
    /// `state`'s [`StateStore::location`], kept so that a dispatch compares it, not
    /// formats it again.
    location: String,
}

impl std::fmt::Debug for StateOutbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateOutbox")
            .field("path", &self.path)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl StateOutbox {
    /// The outbox of `state`, bounded to `max` dispatches; `None` when the
    /// store keeps none (DynamoDB).
    pub fn of(state: Arc<dyn StateStore>, max: u64) -> Option<Self> {
        state.dispatch_outbox()?;
        let location = state.location();
        let path = match StateLocation::parse(&location) {
            Ok(StateLocation::Sqlite(path)) => path,
            _ => PathBuf::from(&location),
        };
        Some(Self {
            state,
            max,
            path,
            location,
        })
    }

    fn outbox(&self) -> Result<&dyn DispatchOutbox, DispatchError> {
        self.state
            .dispatch_outbox()
            .ok_or_else(|| queue_error("the state store keeps no outbox"))
    }

    /// The state store's file, where the outbox lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waiting dispatches.
    pub async fn len(&self) -> Result<u64, DispatchError> {
        Ok(self.outbox()?.queued_len().await?)
    }

    /// Whether no dispatch waits.
    pub async fn is_empty(&self) -> Result<bool, DispatchError> {
        Ok(self.len().await? == 0)
    }

    /// Up to `limit` messages after `after_seq`, oldest first.
    pub async fn list(
        &self,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<OutboxEntry>, DispatchError> {
        let queued = self.outbox()?.queued(after_seq, limit).await?;
        queued
            .into_iter()
            .map(|queued| {
                Ok(OutboxEntry {
                    seq: queued.seq,
                    message: DispatchMessage::of(&queued.dispatch)?,
                })
            })
            .collect()
    }

    /// Sends every waiting dispatch's message to `queue`, oldest first, taking
    /// each out once sent; stops at the first failure. Returns how many were sent.
    pub async fn drain_to(&self, queue: &dyn DispatchQueue) -> Result<u64, DispatchError> {
        drain(self, queue).await
    }
}

impl OutboxRows for StateOutbox {
    fn batch(&self) -> BoxFuture<'_, Result<Vec<OutboxEntry>, DispatchError>> {
        Box::pin(self.list(0, DRAIN_BATCH))
    }
    fn sent(&self, seq: i64) -> BoxFuture<'_, Result<(), DispatchError>> {
        Box::pin(async move { Ok(self.outbox()?.unqueue(seq).await?) })
    }
}

impl DispatchQueue for StateOutbox {
    fn destination(&self) -> QueueDestination {
        QueueDestination::Outbox(self.path.clone())
    }

    /// Queues a dispatch recorded in this state store before.
    fn publish<'a>(
        &'a self,
        message: &'a DispatchMessage,
    ) -> BoxFuture<'a, Result<(), DispatchError>> {
        Box::pin(async move { Ok(self.outbox()?.queue(&message.idempotency_key).await?) })
    }

    fn has_room(&self) -> BoxFuture<'_, Result<(), DispatchError>> {
        Box::pin(async move { room(self.len().await?, self.max) })
    }

    fn record_and_publish<'a>(
        &'a self,
        state: &'a dyn StateStore,
        dispatch: Dispatch,
    ) -> BoxFuture<'a, Result<DispatchResult, DispatchError>> {
        Box::pin(async move {
            // One transaction only when the caller records in the store this outbox lives
            // in: the same handle in `serve` and the CLI, which build both from one store
            // (else compared by location); any other store, one step after another.
            let same = std::ptr::addr_eq(state, Arc::as_ptr(&self.state))
                || state.location() == self.location;
            if !same {
                return record_then_publish(self, state, dispatch).await;
            }
            match self.outbox()?.record_queued(&dispatch, self.max).await? {
                Queued::Full => Err(DispatchError::Full { max: self.max }),
                Queued::Recorded(outcome) => Ok(DispatchResult::of(dispatch, outcome)),
            }
        })
    }
}

/// The outbox path for the state store at `state`: `ASTROLIFT_OUTBOX`
/// when set, else `outbox.db` beside a `sqlite:` state file, else
/// `.astrolift/outbox.db`.
pub fn outbox_path(state: &StateLocation) -> PathBuf {
    if let Ok(path) = std::env::var("ASTROLIFT_OUTBOX")
        && !path.trim().is_empty()
    {
        return PathBuf::from(path);
    }
    match state {
        StateLocation::Sqlite(file) => file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("outbox.db"), |dir| dir.join("outbox.db")),
        StateLocation::DynamoDb { .. } => PathBuf::from(".astrolift/outbox.db"),
    }
}

/// `ASTROLIFT_OUTBOX_MAX` (a positive integer; default [`DEFAULT_OUTBOX_MAX`]).
pub fn outbox_max_from_env() -> Result<u64, String> {
    match std::env::var("ASTROLIFT_OUTBOX_MAX") {
        Err(_) => Ok(DEFAULT_OUTBOX_MAX),
        Ok(text) if text.trim().is_empty() => Ok(DEFAULT_OUTBOX_MAX),
        Ok(text) => text
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("ASTROLIFT_OUTBOX_MAX={text:?} is not a positive integer")),
    }
}
