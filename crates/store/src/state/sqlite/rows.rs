//! What every part of the SQLite store shares: the store handle, error
//! mapping, and JSON bodies read from and written to rows.

use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::connection::ConnectionThread;
use super::error::sql_error;
use crate::state::store::StateCounters;
use crate::{StoreError, StoreResult};

/// The embedded state store. One connection, owned by a thread that commits the calls
/// waiting for it in batches (`connection.rs`).
#[derive(Debug, Clone)]
pub struct SqliteStateStore {
    pub(super) connection: ConnectionThread,
    pub(super) path: PathBuf,
    pub(super) counters: Arc<StateCounters>,
}

pub(super) fn to_json<T: Serialize>(record: &T) -> StoreResult<String> {
    serde_json::to_string(record)
        .map_err(|err| StoreError::Invalid(format!("record does not serialize: {err}")))
}

pub(super) fn from_json<T: DeserializeOwned>(body: &str) -> StoreResult<T> {
    serde_json::from_str(body).map_err(|err| StoreError::Backend {
        operation: "sqlite".into(),
        message: format!("stored record does not parse: {err}"),
    })
}

/// How many records a read returned (for [`StateStats::records_read`]).
pub(super) trait RecordCount {
    fn record_count(&self) -> u64;
}
impl<T> RecordCount for Vec<T> {
    fn record_count(&self) -> u64 {
        self.len() as u64
    }
}
impl<T> RecordCount for Option<T> {
    fn record_count(&self) -> u64 {
        u64::from(self.is_some())
    }
}

/// Runs a query whose rows are one JSON `body` column.
pub(super) fn query_bodies<T: DeserializeOwned>(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> StoreResult<Vec<T>> {
    let mut statement = connection.prepare_cached(sql).map_err(sql_error)?;
    let bodies = statement
        .query_map(params, |row| row.get::<_, String>(0))
        .map_err(sql_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql_error)?;
    bodies.iter().map(|body| from_json(body)).collect()
}

pub(super) fn query_body<T: DeserializeOwned>(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> StoreResult<Option<T>> {
    let body: Option<String> = connection
        .prepare_cached(sql)
        .and_then(|mut statement| statement.query_row(params, |row| row.get(0)).optional())
        .map_err(sql_error)?;
    body.as_deref().map(from_json).transpose()
}

pub(super) fn text(value: impl Into<String>) -> rusqlite::types::Value {
    rusqlite::types::Value::Text(value.into())
}

pub(super) fn integer(value: u64) -> StoreResult<rusqlite::types::Value> {
    i64::try_from(value)
        .map(rusqlite::types::Value::Integer)
        .map_err(|_| StoreError::Invalid(format!("{value} does not fit SQLite's integer")))
}
