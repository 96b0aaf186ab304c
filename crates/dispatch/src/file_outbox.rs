//! The outbox in a file of its own (`ASTROLIFT_OUTBOX=PATH`, or `.astrolift/outbox.db`
//! with a state store that keeps none): [`SqliteOutbox`], described with the other form
//! in [`crate::outbox`]. Behind the `sqlite` feature: a Lambda function never keeps a
//! local outbox (ARCHITECTURE.md, `functions/`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use astrolift_store::BoxFuture;
use rusqlite::{Connection, params};

use crate::dispatch::{DispatchError, DispatchMessage, DispatchQueue, QueueDestination};
use crate::outbox::{DRAIN_BATCH, OutboxEntry, OutboxRows, drain, queue_error, room};

/// The table, and its size kept in `outbox_size` by triggers, so that the bound
/// ([`DispatchQueue::has_room`], asked before every dispatch) is one row read: SQLite's
/// `COUNT(*)` reads the whole table, which would make each dispatch slower the more the
/// outbox holds. The triggers live in the file, so every writer (`serve`, the CLI, an older
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

/// The outbox (see the module docs).
#[derive(Debug, Clone)]
pub struct SqliteOutbox {
    connection: Arc<Mutex<Connection>>,
    max: u64,
    path: PathBuf,
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

impl OutboxRows for SqliteOutbox {
    fn batch(&self) -> BoxFuture<'_, Result<Vec<OutboxEntry>, DispatchError>> {
        Box::pin(self.list(0, DRAIN_BATCH))
    }
    fn sent(&self, seq: i64) -> BoxFuture<'_, Result<(), DispatchError>> {
        Box::pin(self.remove(seq))
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
