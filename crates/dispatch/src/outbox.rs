//! The durable local dispatch outbox: where `serve` and the CLI put
//! dispatch messages when no dispatch queue is configured. Two forms:
//!
//! - [`StateOutbox`], with a `sqlite:` state store: inside the state
//!   ([`astrolift_store::state::outbox`]). The dispatch, its task and its
//!   place in the outbox are one transaction, the bound is checked inside it,
//!   and the outbox holds only the dispatch's key (the message is the
//!   record's). One commit and one hand-off to a blocking thread per dispatch.
//! - [`SqliteOutbox`], a file of its own (`ASTROLIFT_OUTBOX=PATH`, or
//!   `.astrolift/outbox.db` with a state store that keeps no outbox; also
//!   the `outbox.db` beside a `sqlite:` state written before the outbox moved
//!   inside, which is moved in at start).
//!
//! The file has one table `outbox (seq, dispatch_id, body,
//! created_at)`, oldest first. It is bounded: past
//! `ASTROLIFT_OUTBOX_MAX` undrained messages (default
//! [`DEFAULT_OUTBOX_MAX`]) [`DispatchQueue::has_room`] is
//! [`DispatchError::Full`], which the trigger service answers `503` with
//! `Retry-After` before anything is recorded. When a dispatch queue is
//! configured, [`SqliteOutbox::drain_to`] sends what is left, oldest first,
//! deleting each message once the queue accepted it (a crash in between
//! sends it again: consumers key on `dispatch_id`).
//!
//! The bound is checked before the dispatch is recorded, so concurrent
//! dispatches may pass it by at most the number in flight; `publish` itself
//! never refuses, so a recorded dispatch always reaches the outbox.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use astrolift_store::state::{Dispatch, DispatchOutbox, Queued};
use astrolift_store::{BoxFuture, StateLocation, StateStore};
use rusqlite::{Connection, params};

use crate::dispatch::{
    DispatchError, DispatchMessage, DispatchQueue, DispatchResult, QueueDestination,
    record_then_publish,
};

/// Default bound on undrained messages.
pub const DEFAULT_OUTBOX_MAX: u64 = 10_000;

/// The table, and its size kept in `outbox_size` by triggers, so that the bound
/// ([`DispatchQueue::has_room`], asked before every dispatch) is one row read: SQLite's
/// `COUNT(*)` reads the whole table, which made each dispatch slower the more the outbox
/// held. The triggers live in the file, so every writer (`serve`, the CLI, an older
/// binary) keeps the size; an outbox made before them is counted once, in the same
/// transaction that adds them.
const SCHEMA: &str = "BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    dispatch_id TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox_size (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    messages INTEGER NOT NULL
);
INSERT INTO outbox_size (id, messages)
    SELECT 1, (SELECT COUNT(*) FROM outbox) WHERE NOT EXISTS (SELECT 1 FROM outbox_size);
CREATE TRIGGER IF NOT EXISTS outbox_added AFTER INSERT ON outbox
    BEGIN UPDATE outbox_size SET messages = messages + 1 WHERE id = 1; END;
CREATE TRIGGER IF NOT EXISTS outbox_removed AFTER DELETE ON outbox
    BEGIN UPDATE outbox_size SET messages = messages - 1 WHERE id = 1; END;
COMMIT;";

/// A message kept in the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    pub seq: i64,
    pub message: DispatchMessage,
}

/// The outbox (see the module docs).
#[derive(Debug, Clone)]
pub struct SqliteOutbox {
    connection: Arc<Mutex<Connection>>,
    max: u64,
    path: PathBuf,
}

fn queue_error(error: impl std::fmt::Display) -> DispatchError {
    DispatchError::Queue(format!("outbox: {error}"))
}

impl SqliteOutbox {
    /// Opens (creating) the outbox at `path`, bounded to `max` messages.
    pub async fn open(path: impl AsRef<Path>, max: u64) -> Result<Self, DispatchError> {
        let path = path.as_ref().to_path_buf();
        let opened = path.clone();
        let connection = tokio::task::spawn_blocking(move || -> Result<Connection, String> {
            if let Some(parent) = opened.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            let connection = Connection::open(&opened).map_err(|e| e.to_string())?;
            connection
                .busy_timeout(std::time::Duration::from_secs(5))
                .map_err(|e| e.to_string())?;
            connection
                .pragma_update(None, "journal_mode", "WAL")
                .map_err(|e| e.to_string())?;
            // As the state store's: a commit survives the process, and only a power loss
            // may take the last ones, as it may take the dispatch records they belong to
            // (FULL would fsync on every dispatch and guarantee no more end to end).
            connection
                .pragma_update(None, "synchronous", "NORMAL")
                .map_err(|e| e.to_string())?;
            connection
                .execute_batch(SCHEMA)
                .map_err(|e| e.to_string())?;
            Ok(connection)
        })
        .await
        .map_err(queue_error)?
        .map_err(|e| queue_error(format!("cannot open {}: {e}", path.display())))?;
        Ok(Self {
            connection: Arc::new(Mutex::new(connection)),
            max,
            path,
        })
    }

    /// Where it lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its bound.
    pub fn max(&self) -> u64 {
        self.max
    }

    async fn with<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, DispatchError> {
        let connection = self.connection.clone();
        tokio::task::spawn_blocking(move || {
            let mut connection = connection
                .lock()
                .map_err(|_| queue_error("the connection is poisoned"))?;
            work(&mut connection).map_err(queue_error)
        })
        .await
        .map_err(queue_error)?
    }

    /// Undrained messages.
    pub async fn len(&self) -> Result<u64, DispatchError> {
        self.with(|c| {
            c.query_row("SELECT messages FROM outbox_size WHERE id = 1", [], |row| {
                row.get::<_, i64>(0)
            })
        })
        .await
        .map(|n| u64::try_from(n).unwrap_or(0))
    }

    /// Whether it holds no message.
    pub async fn is_empty(&self) -> Result<bool, DispatchError> {
        Ok(self.len().await? == 0)
    }

    /// Up to `limit` messages after `after_seq`, oldest first.
    pub async fn list(
        &self,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<OutboxEntry>, DispatchError> {
        let rows: Vec<(i64, String)> = self
            .with(move |c| {
                let mut statement =
                    c.prepare("SELECT seq, body FROM outbox WHERE seq > ?1 ORDER BY seq LIMIT ?2")?;
                let rows = statement
                    .query_map(params![after_seq, limit], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                Ok(rows)
            })
            .await?;
        rows.into_iter()
            .map(|(seq, body)| {
                let message = serde_json::from_str(&body)
                    .map_err(|e| queue_error(format!("message {seq} does not parse: {e}")))?;
                Ok(OutboxEntry { seq, message })
            })
            .collect()
    }

    /// Sends every message to `queue`, oldest first, deleting each once
    /// sent; stops at the first failure. Returns how many were sent.
    pub async fn drain_to(&self, queue: &dyn DispatchQueue) -> Result<u64, DispatchError> {
        drain(self, queue).await
    }

    async fn remove(&self, seq: i64) -> Result<(), DispatchError> {
        self.with(move |c| c.execute("DELETE FROM outbox WHERE seq = ?1", [seq]))
            .await
            .map(drop)
    }
}

/// The rows of an outbox, as [`drain`] reads and removes them.
trait OutboxRows: Sync {
    fn batch(&self) -> BoxFuture<'_, Result<Vec<OutboxEntry>, DispatchError>>;
    fn sent(&self, seq: i64) -> BoxFuture<'_, Result<(), DispatchError>>;
}

impl OutboxRows for SqliteOutbox {
    fn batch(&self) -> BoxFuture<'_, Result<Vec<OutboxEntry>, DispatchError>> {
        Box::pin(self.list(0, DRAIN_BATCH))
    }
    fn sent(&self, seq: i64) -> BoxFuture<'_, Result<(), DispatchError>> {
        Box::pin(self.remove(seq))
    }
}

/// [`DispatchQueue::has_room`] of an outbox holding `len` of at most `max`.
fn room(len: u64, max: u64) -> Result<(), DispatchError> {
    if len >= max {
        return Err(DispatchError::Full { max });
    }
    Ok(())
}

/// Messages read per batch while draining.
const DRAIN_BATCH: u32 = 100;

/// Sends every message of `outbox` to `queue`, oldest first, removing each
/// once sent; stops at the first failure. Returns how many were sent.
async fn drain(outbox: &dyn OutboxRows, queue: &dyn DispatchQueue) -> Result<u64, DispatchError> {
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

impl DispatchQueue for SqliteOutbox {
    fn destination(&self) -> QueueDestination {
        QueueDestination::Outbox(self.path.clone())
    }

    fn publish<'a>(
        &'a self,
        message: &'a DispatchMessage,
    ) -> BoxFuture<'a, Result<(), DispatchError>> {
        Box::pin(async move {
            let body = serde_json::to_string(message).map_err(queue_error)?;
            let id = message.dispatch_id.clone();
            let created_at = message.created_at;
            self.with(move |c| {
                c.execute(
                    "INSERT INTO outbox (dispatch_id, body, created_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (dispatch_id) DO NOTHING",
                    params![id, body, created_at],
                )
            })
            .await?;
            Ok(())
        })
    }

    fn has_room(&self) -> BoxFuture<'_, Result<(), DispatchError>> {
        Box::pin(async move { room(self.len().await?, self.max) })
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
