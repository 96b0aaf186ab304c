//! Dispatch tasks on SQLite: the table `dispatch_tasks`, keyed by task id with a unique
//! dispatch id, written with the dispatch (see [`insert_dispatch`]) and updated on its
//! `version` inside one `IMMEDIATE` transaction.

use rusqlite::{Connection, TransactionBehavior, params};

use super::{SqliteStateStore, integer, query_body, sql_error, to_json};
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
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql_error)?;
    let inserted = tx
        .execute(
            "INSERT INTO dispatches (idempotency_key, id, body) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
            params![dispatch.idempotency_key, dispatch.id, to_json(dispatch)?],
        )
        .map_err(sql_error)?;
    if inserted == 0 {
        let existing: String = tx
            .query_row(
                "SELECT id FROM dispatches WHERE idempotency_key = ?1",
                [&dispatch.idempotency_key],
                |row| row.get(0),
            )
            .map_err(sql_error)?;
        return Ok((DispatchOutcome::Existing(existing), 0));
    }
    let mut written = 1;
    if !dispatch.task_id.is_empty() {
        let task = DispatchTask::queued(dispatch);
        written += tx
            .execute(
                "INSERT INTO dispatch_tasks (task_id, dispatch_id, version, body) VALUES (?1, ?2, ?3, ?4)",
                params![task.task_id, task.dispatch_id, integer(task.version)?, to_json(&task)?],
            )
            .map_err(sql_error)? as u64;
    }
    tx.commit().map_err(sql_error)?;
    Ok((DispatchOutcome::New, written))
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
