//! Dispatch tasks on SQLite: the table `dispatch_tasks`, keyed by task id with a unique
//! dispatch id, written with the dispatch (see [`insert_dispatch`]) and updated on its
//! `version` inside one `IMMEDIATE` transaction.

use rusqlite::{Connection, OptionalExtension, params};

use super::connection::atomic;
use super::error::sql_error;
use super::rows::{SqliteStateStore, integer, query_body, to_json};
use crate::state::model::{Dispatch, DispatchOutcome};
use crate::state::tasks::{DispatchTask, TaskStore};
use crate::{BoxFuture, StoreError, StoreResult};

/// Created with the rest of the schema when a file is opened: a file written before tasks
/// existed gains the (empty) table, and its older dispatches have no task.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dispatch_tasks (
    task_id TEXT PRIMARY KEY, dispatch_id TEXT NOT NULL UNIQUE,
    version INTEGER NOT NULL, body TEXT NOT NULL);
";

/// Inserts the dispatch unless its key exists and, when it is new, its task, in one
/// transaction; returns the outcome and the rows written.
pub(super) fn insert_dispatch(
    connection: &mut Connection,
    dispatch: &Dispatch,
) -> StoreResult<(DispatchOutcome, u64)> {
    let tx = atomic(connection)?;
    let inserted = insert_dispatch_in(&tx, dispatch)?;
    if inserted.1 > 0 {
        tx.commit().map_err(sql_error)?;
    }
    Ok(inserted)
}

/// [`insert_dispatch`]'s writes inside the caller's transaction, which commits them when
/// rows were written (an existing key writes none).
///
/// The key is looked up before the record is serialized: a redelivered webhook's dispatch
/// is refused without serializing it (its message JSON inside the record's JSON, escaped a
/// second time). A new dispatch pays the keyed read on top of its insert.
pub(super) fn insert_dispatch_in(
    tx: &Connection,
    dispatch: &Dispatch,
) -> StoreResult<(DispatchOutcome, u64)> {
    if let Some(existing) = existing_dispatch(tx, &dispatch.idempotency_key)? {
        return Ok((DispatchOutcome::Existing(existing), 0));
    }
    let body = to_json(dispatch)?;
    let inserted = tx
        .prepare_cached(
            "INSERT INTO dispatches (idempotency_key, id, body) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut insert| {
            insert.execute(params![dispatch.idempotency_key, dispatch.id, body])
        })
        .map_err(sql_error)?;
    if inserted == 0 {
        let existing = existing_dispatch(tx, &dispatch.idempotency_key)?.ok_or_else(|| {
            StoreError::Conflict(format!("dispatch {} moved", dispatch.idempotency_key))
        })?;
        return Ok((DispatchOutcome::Existing(existing), 0));
    }
    let mut written = 1;
    if !dispatch.task_id.is_empty() {
        let task = DispatchTask::queued(dispatch);
        let body = to_json(&task)?;
        let version = integer(task.version)?;
        written += tx
            .prepare_cached(
                "INSERT INTO dispatch_tasks (task_id, dispatch_id, version, body) VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut insert| insert.execute(params![task.task_id, task.dispatch_id, version, body]))
            .map_err(sql_error)? as u64;
    }
    Ok((DispatchOutcome::New, written))
}

/// The id of the dispatch recorded under `idempotency_key`, if any.
pub(super) fn existing_dispatch(
    connection: &Connection,
    idempotency_key: &str,
) -> StoreResult<Option<String>> {
    connection
        .prepare_cached("SELECT id FROM dispatches WHERE idempotency_key = ?1")
        .and_then(|mut select| {
            select
                .query_row([idempotency_key], |row| row.get(0))
                .optional()
        })
        .map_err(sql_error)
}

fn update_task_row(
    connection: &mut Connection,
    task: &DispatchTask,
    expected: u64,
) -> StoreResult<()> {
    let updated = connection
        .execute(
            "UPDATE dispatch_tasks SET version = ?2, body = ?3 WHERE task_id = ?1 AND version = ?4",
            params![
                task.task_id,
                integer(task.version)?,
                to_json(task)?,
                integer(expected)?
            ],
        )
        .map_err(sql_error)?;
    if updated == 0 {
        return Err(StoreError::Conflict(format!(
            "task {} is not at version {expected}",
            task.task_id
        )));
    }
    Ok(())
}

impl TaskStore for SqliteStateStore {
    fn get_task<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<DispatchTask>>> {
        let task_id = task_id.to_owned();
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM dispatch_tasks WHERE task_id = ?1",
                [task_id],
            )
        }))
    }

    fn get_dispatch_task<'a>(
        &'a self,
        dispatch_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<DispatchTask>>> {
        let dispatch_id = dispatch_id.to_owned();
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM dispatch_tasks WHERE dispatch_id = ?1",
                [dispatch_id],
            )
        }))
    }

    fn update_task<'a>(
        &'a self,
        task: &'a DispatchTask,
        expected_version: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let task = task.clone();
        Box::pin(async move {
            self.with_connection(move |c| update_task_row(c, &task, expected_version))
                .await?;
            self.counters.wrote(1);
            Ok(())
        })
    }
}
