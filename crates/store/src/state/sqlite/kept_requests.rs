//! Kept requests on SQLite ([`KeptRequestStore`]): `kept_requests` keyed by (trigger id,
//! received at, id), so a binding's requests are one range of the key in the order they
//! came, with the record as JSON in `body`. `id` is also unique within a binding (a second
//! index), so a request kept again replaces its row whatever its time; `expires_at` is
//! indexed for the sweep.
//!
//! `keep_request` is one atomic unit: the row written, the binding's rows past its `keep`
//! newest deleted, and every row expired at the request's `received_at` (the time it came,
//! the store's "now") swept. Reads name the binding and its repository and skip expired
//! rows (docs/reference.md §10, "Kept requests").
//!
//! The table is created with the rest of the schema whenever a file is opened, so a file
//! written before requests were kept gets it, empty, on its first open (nothing to
//! backfill, hence no `user_version` step).

use rusqlite::types::Value;
use rusqlite::{Connection, params};

use super::connection::atomic;
use super::error::sql_error;
use super::rows::{SqliteStateStore, query_bodies, text, to_json};
use crate::state::kept_requests::{KeptRequest, KeptRequestStore, kept_window};
use crate::state::model::UnixSeconds;
use crate::{BoxFuture, StoreResult};

/// Created with the rest of the schema when a file is opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS kept_requests (
    trigger_id TEXT NOT NULL, received_at INTEGER NOT NULL, id TEXT NOT NULL,
    repository TEXT NOT NULL, expires_at INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (trigger_id, received_at, id));
CREATE UNIQUE INDEX IF NOT EXISTS kept_requests_by_id ON kept_requests (trigger_id, id);
CREATE INDEX IF NOT EXISTS kept_requests_by_expiry ON kept_requests (expires_at);
";

const SWEEP: &str = "DELETE FROM kept_requests WHERE expires_at <= ?1";

/// A count as SQLite's integer (a `LIMIT` or `OFFSET`); past `i64::MAX`, `i64::MAX`.
fn count(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// `keep_request` in one atomic unit (the module docs); returns the rows written and
/// deleted.
fn keep_row(connection: &mut Connection, request: &KeptRequest, keep: usize) -> StoreResult<u64> {
    let unit = atomic(connection)?;
    let body = to_json(request)?;
    // `OR REPLACE` replaces the row at the key and the binding's row of the same id.
    let mut written = unit
        .prepare_cached(
            "INSERT OR REPLACE INTO kept_requests
             (trigger_id, received_at, id, repository, expires_at, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                request.trigger_id,
                request.received_at,
                request.id,
                request.repository,
                request.expires_at,
                body,
            ])
        })
        .map_err(sql_error)?;
    written += unit
        .prepare_cached(
            "DELETE FROM kept_requests WHERE rowid IN (
                 SELECT rowid FROM kept_requests WHERE trigger_id = ?1
                 ORDER BY received_at DESC, id DESC LIMIT -1 OFFSET ?2)",
        )
        .and_then(|mut statement| statement.execute(params![request.trigger_id, count(keep)]))
        .map_err(sql_error)?;
    written += unit
        .prepare_cached(SWEEP)
        .and_then(|mut statement| statement.execute([request.received_at]))
        .map_err(sql_error)?;
    unit.commit().map_err(sql_error)?;
    Ok(written as u64)
}

impl KeptRequestStore for SqliteStateStore {
    fn keep_request<'a>(
        &'a self,
        request: &'a KeptRequest,
        keep: usize,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let Some(keep) = kept_window(request, keep)? else {
                return Ok(());
            };
            let request = request.clone();
            let written = self
                .with_connection(move |c| keep_row(c, &request, keep))
                .await?;
            self.counters.wrote(written);
            Ok(())
        })
    }

    fn list_kept_requests<'a>(
        &'a self,
        trigger_id: &'a str,
        repository: &'a str,
        now: UnixSeconds,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<KeptRequest>>> {
        let (trigger_id, repository) = (trigger_id.to_owned(), repository.to_owned());
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM kept_requests
                 WHERE trigger_id = ?1 AND repository = ?2 AND expires_at > ?3
                 ORDER BY received_at DESC, id DESC LIMIT ?4",
                params![trigger_id, repository, now, count(limit)],
            )
        }))
    }

    fn purge_kept_requests<'a>(&'a self, trigger_id: &'a str) -> BoxFuture<'a, StoreResult<usize>> {
        Box::pin(async move {
            let purged = self
                .write_rows(
                    "DELETE FROM kept_requests WHERE trigger_id = ?1",
                    vec![text(trigger_id)],
                )
                .await?;
            Ok(usize::try_from(purged).unwrap_or(usize::MAX))
        })
    }

    fn sweep_kept_requests(&self, now: UnixSeconds) -> BoxFuture<'_, StoreResult<usize>> {
        Box::pin(async move {
            let swept = self.write_rows(SWEEP, vec![Value::Integer(now)]).await?;
            Ok(usize::try_from(swept).unwrap_or(usize::MAX))
        })
    }
}
