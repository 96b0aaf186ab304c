//! The dispatch outbox on SQLite ([`crate::state::outbox`]): `dispatch_outbox`, one row per
//! waiting dispatch (its idempotency key, which keys `dispatches`), oldest first by `seq`,
//! and its size in the one row of `dispatch_outbox_size`, kept by triggers so that the
//! bound asked inside every [`DispatchOutbox::record_queued`] is one row read (SQLite's
//! `COUNT(*)` reads the whole table). The rows hold no message: it is the dispatch
//! record's, read back when the outbox is drained.
//!
//! The tables are created with the rest of the schema whenever a file is opened, so a file
//! written before them gets them, empty, on its first open.

use rusqlite::{Connection, OptionalExtension, params};

use super::connection::atomic;
use super::error::sql_error;
use super::rows::{SqliteStateStore, from_json};
use super::tasks::{existing_dispatch, insert_dispatch_in};
use crate::state::model::{Dispatch, DispatchOutcome};
use crate::state::outbox::{DispatchOutbox, Queued, QueuedDispatch};
use crate::{BoxFuture, StoreError, StoreResult};

/// Created with the rest of the schema when a file is opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dispatch_outbox (
    seq INTEGER PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS dispatch_outbox_size (
    id INTEGER PRIMARY KEY CHECK (id = 1), dispatches INTEGER NOT NULL);
INSERT INTO dispatch_outbox_size (id, dispatches)
    SELECT 1, (SELECT COUNT(*) FROM dispatch_outbox)
    WHERE NOT EXISTS (SELECT 1 FROM dispatch_outbox_size);
CREATE TRIGGER IF NOT EXISTS dispatch_outbox_added AFTER INSERT ON dispatch_outbox
    BEGIN UPDATE dispatch_outbox_size SET dispatches = dispatches + 1 WHERE id = 1; END;
CREATE TRIGGER IF NOT EXISTS dispatch_outbox_removed AFTER DELETE ON dispatch_outbox
    BEGIN UPDATE dispatch_outbox_size SET dispatches = dispatches - 1 WHERE id = 1; END;
";

/// How many dispatches wait.
fn size(connection: &Connection) -> StoreResult<u64> {
    let size: Option<i64> = connection
        .prepare_cached("SELECT dispatches FROM dispatch_outbox_size WHERE id = 1")
        .and_then(|mut select| select.query_row([], |row| row.get(0)).optional())
        .map_err(sql_error)?;
    Ok(size.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
}

/// Queues `idempotency_key` unless it waits already; returns the rows written.
fn enqueue(tx: &Connection, idempotency_key: &str) -> StoreResult<u64> {
    let written = tx
        .prepare_cached(
            "INSERT INTO dispatch_outbox (idempotency_key) VALUES (?1) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut insert| insert.execute([idempotency_key]))
        .map_err(sql_error)?;
    Ok(written as u64)
}

/// [`DispatchOutbox::record_queued`] in one `IMMEDIATE` transaction: the bound, the
/// dispatch and its task, and its row in the outbox. Returns the outcome and rows written.
fn record_queued(
    connection: &mut Connection,
    dispatch: &Dispatch,
    max: u64,
) -> StoreResult<(Queued, u64)> {
    let tx = atomic(connection)?;
    if size(&tx)? >= max {
        // A dispatch recorded before writes nothing, so a full outbox still answers it.
        let existing = existing_dispatch(&tx, &dispatch.idempotency_key)?;
        let queued = existing.map_or(Queued::Full, |id| {
            Queued::Recorded(DispatchOutcome::Existing(id))
        });
        return Ok((queued, 0));
    }
    let (outcome, mut written) = insert_dispatch_in(&tx, dispatch)?;
    if outcome == DispatchOutcome::New {
        written += enqueue(&tx, &dispatch.idempotency_key)?;
        tx.commit().map_err(sql_error)?;
    }
    Ok((Queued::Recorded(outcome), written))
}

fn queued(connection: &Connection, after_seq: i64, limit: u32) -> StoreResult<Vec<QueuedDispatch>> {
    let mut select = connection
        .prepare_cached(
            "SELECT o.seq, d.body FROM dispatch_outbox o
             JOIN dispatches d ON d.idempotency_key = o.idempotency_key
             WHERE o.seq > ?1 ORDER BY o.seq LIMIT ?2",
        )
        .map_err(sql_error)?;
    let rows = select
        .query_map(params![after_seq, limit], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(sql_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql_error)?;
    rows.into_iter()
        .map(|(seq, body)| {
            Ok(QueuedDispatch {
                seq,
                dispatch: from_json(&body)?,
            })
        })
        .collect()
}

impl DispatchOutbox for SqliteStateStore {
    fn record_queued<'a>(
        &'a self,
        dispatch: &'a Dispatch,
        max: u64,
    ) -> BoxFuture<'a, StoreResult<Queued>> {
        let dispatch = dispatch.clone();
        Box::pin(async move {
            let (queued, written) = self
                .with_connection(move |c| record_queued(c, &dispatch, max))
                .await?;
            self.counters.wrote(written);
            Ok(queued)
        })
    }

    fn queue<'a>(&'a self, idempotency_key: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        let key = idempotency_key.to_owned();
        Box::pin(async move {
            let written = self
                .with_connection(move |c| {
                    let tx = atomic(c)?;
                    // A key without its record would hold a place no drain can send.
                    if existing_dispatch(&tx, &key)?.is_none() {
                        return Err(StoreError::NotFound(format!("dispatch {key}")));
                    }
                    let written = enqueue(&tx, &key)?;
                    tx.commit().map_err(sql_error)?;
                    Ok(written)
                })
                .await?;
            self.counters.wrote(written);
            Ok(())
        })
    }

    fn queued_len(&self) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(async move {
            self.counters.read();
            self.with_connection(|c| size(c)).await
        })
    }

    fn queued(
        &self,
        after_seq: i64,
        limit: u32,
    ) -> BoxFuture<'_, StoreResult<Vec<QueuedDispatch>>> {
        Box::pin(self.read(move |c| queued(c, after_seq, limit)))
    }

    fn unqueue(&self, seq: i64) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let written = self
                .with_connection(move |c| {
                    c.prepare_cached("DELETE FROM dispatch_outbox WHERE seq = ?1")
                        .and_then(|mut delete| delete.execute([seq]))
                        .map_err(sql_error)
                })
                .await?;
            self.counters.wrote(written as u64);
            Ok(())
        })
    }
}
