//! Workflows, runs and stage results on SQLite: one table each, keyed like
//! the DynamoDB items, conditions checked inside one `IMMEDIATE` transaction.
//! A stage result's `stage` column holds [`result_key`] (the stage, and the attempt
//! after the first), and the running runs have a partial index of their own.

use rusqlite::{Connection, OptionalExtension, params};

use super::connection::atomic;
use super::error::sql_error;
use super::rows::{SqliteStateStore, from_json, integer, query_bodies, query_body, to_json};
use crate::state::workflows::{
    StageResult, WorkflowRecord, WorkflowRun, WorkflowStore, by_stage_and_attempt, result_key,
};
use crate::{BoxFuture, StoreError, StoreResult};

/// Created with the rest of the schema when a file is opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS workflows (
    repository TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (repository, name));
CREATE TABLE IF NOT EXISTS workflow_runs (id TEXT PRIMARY KEY, version INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS workflow_stage_results (
    run_id TEXT NOT NULL, stage TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (run_id, stage));
CREATE INDEX IF NOT EXISTS workflow_runs_running ON workflow_runs (id)
    WHERE json_extract(body, '$.status') = 'running';
";

/// The runs [`SCHEMA`]'s partial index holds (the same `WHERE`, so the index answers it).
const RUNNING_RUNS: &str = "SELECT body FROM workflow_runs
    WHERE json_extract(body, '$.status') = 'running' ORDER BY id";

/// The stored version of the row `sql` selects, or `None`.
fn stored_version(
    connection: &Connection,
    sql: &str,
    key: impl rusqlite::Params,
) -> StoreResult<Option<u64>> {
    let version: Option<i64> = connection
        .query_row(sql, key, |row| row.get(0))
        .optional()
        .map_err(sql_error)?;
    // A negative stored version cannot be ours: it matches no expectation.
    Ok(version.map(|v| u64::try_from(v).unwrap_or(u64::MAX)))
}

fn put_workflow_row(
    connection: &mut Connection,
    record: &WorkflowRecord,
    expected: Option<u64>,
) -> StoreResult<()> {
    let row = VersionedRow {
        table: "workflows",
        key_column: "name",
        repository: &record.repository,
        key: &record.name,
        version: record.version,
        body: to_json(record)?,
    };
    put_versioned_row(connection, &row, expected, "workflow")
}

/// A row keyed by (repository, key) with a version and the record as JSON.
pub(super) struct VersionedRow<'a> {
    /// One of our table names (never input).
    pub table: &'static str,
    pub key_column: &'static str,
    pub repository: &'a str,
    pub key: &'a str,
    pub version: u64,
    pub body: String,
}

/// Writes `row` if its stored version is `expected` (`None`: no row), in one transaction;
/// `Conflict` naming the `noun` otherwise.
pub(super) fn put_versioned_row(
    connection: &mut Connection,
    row: &VersionedRow<'_>,
    expected: Option<u64>,
    noun: &str,
) -> StoreResult<()> {
    let VersionedRow {
        table, key_column, ..
    } = row;
    let tx = atomic(connection)?;
    let stored = stored_version(
        &tx,
        &format!("SELECT version FROM {table} WHERE repository = ?1 AND {key_column} = ?2"),
        params![row.repository, row.key],
    )?;
    if stored != expected {
        return Err(StoreError::Conflict(format!(
            "{noun} {}:{} is at version {stored:?}, expected {expected:?}",
            row.repository, row.key
        )));
    }
    tx.execute(
        &format!(
            "INSERT OR REPLACE INTO {table} (repository, {key_column}, version, body) VALUES (?1, ?2, ?3, ?4)"
        ),
        params![row.repository, row.key, integer(row.version)?, row.body],
    )
    .map_err(sql_error)?;
    tx.commit().map_err(sql_error)
}

fn update_run_row(
    connection: &mut Connection,
    run: &WorkflowRun,
    expected: u64,
) -> StoreResult<()> {
    let tx = atomic(connection)?;
    let stored = stored_version(
        &tx,
        "SELECT version FROM workflow_runs WHERE id = ?1",
        params![run.id],
    )?;
    if stored != Some(expected) {
        return Err(StoreError::Conflict(format!(
            "workflow run {} is at version {stored:?}, expected {expected}",
            run.id
        )));
    }
    tx.execute(
        "UPDATE workflow_runs SET version = ?2, body = ?3 WHERE id = ?1",
        params![run.id, integer(run.version)?, to_json(run)?],
    )
    .map_err(sql_error)?;
    tx.commit().map_err(sql_error)
}

/// Inserts the report unless the stage's attempt has one; returns the stored report.
fn put_result_row(
    connection: &mut Connection,
    result: &StageResult,
) -> StoreResult<(StageResult, u64)> {
    let body = to_json(result)?;
    let key = result_key(&result.stage, result.attempt);
    insert_once(
        connection,
        "INSERT INTO workflow_stage_results (run_id, stage, body) VALUES (?1, ?2, ?3)
         ON CONFLICT DO NOTHING",
        params![result.run_id, key, body],
        "SELECT body FROM workflow_stage_results WHERE run_id = ?1 AND stage = ?2",
        params![result.run_id, key],
    )
}

/// Runs `insert` (an `INSERT … ON CONFLICT DO NOTHING`), then reads the row back with
/// `select`, in one transaction: the stored record (the first one inserted under its key)
/// and the rows written.
pub(super) fn insert_once<T: serde::de::DeserializeOwned>(
    connection: &mut Connection,
    insert: &str,
    insert_values: &[&dyn rusqlite::ToSql],
    select: &str,
    select_key: &[&dyn rusqlite::ToSql],
) -> StoreResult<(T, u64)> {
    let tx = atomic(connection)?;
    let inserted = tx.execute(insert, insert_values).map_err(sql_error)?;
    let body: String = tx
        .query_row(select, select_key, |row| row.get(0))
        .map_err(sql_error)?;
    tx.commit().map_err(sql_error)?;
    Ok((from_json(&body)?, inserted as u64))
}

impl WorkflowStore for SqliteStateStore {
    fn list_workflows<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<WorkflowRecord>>> {
        let repository = repository.to_owned();
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM workflows WHERE repository = ?1 ORDER BY name",
                params![repository],
            )
        }))
    }

    fn get_workflow<'a>(
        &'a self,
        repository: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<WorkflowRecord>>> {
        let (repository, name) = (repository.to_owned(), name.to_owned());
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM workflows WHERE repository = ?1 AND name = ?2",
                params![repository, name],
            )
        }))
    }

    fn put_workflow<'a>(
        &'a self,
        record: &'a WorkflowRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let record = record.clone();
        Box::pin(async move {
            self.with_connection(move |c| put_workflow_row(c, &record, expected_version))
                .await?;
            self.counters.wrote(1);
            Ok(())
        })
    }

    fn create_workflow_run<'a>(&'a self, run: &'a WorkflowRun) -> BoxFuture<'a, StoreResult<()>> {
        let run = run.clone();
        Box::pin(async move {
            let body = to_json(&run)?;
            let version = integer(run.version)?;
            let inserted = self
                .with_connection(move |c| {
                    c.execute(
                        "INSERT INTO workflow_runs (id, version, body) VALUES (?1, ?2, ?3)
                         ON CONFLICT DO NOTHING",
                        params![run.id, version, body],
                    )
                    .map_err(sql_error)
                })
                .await?;
            if inserted == 0 {
                return Err(StoreError::Conflict("workflow run id exists".into()));
            }
            self.counters.wrote(1);
            Ok(())
        })
    }

    fn get_workflow_run<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<WorkflowRun>>> {
        let run_id = run_id.to_owned();
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM workflow_runs WHERE id = ?1",
                params![run_id],
            )
        }))
    }

    fn update_workflow_run<'a>(
        &'a self,
        run: &'a WorkflowRun,
        expected_version: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let run = run.clone();
        Box::pin(async move {
            self.with_connection(move |c| update_run_row(c, &run, expected_version))
                .await?;
            self.counters.wrote(1);
            Ok(())
        })
    }

    fn list_running_workflow_runs(&self) -> BoxFuture<'_, StoreResult<Vec<WorkflowRun>>> {
        Box::pin(self.read(|c| query_bodies(c, RUNNING_RUNS, [])))
    }

    fn put_stage_result<'a>(
        &'a self,
        result: &'a StageResult,
    ) -> BoxFuture<'a, StoreResult<StageResult>> {
        let result = result.clone();
        Box::pin(async move {
            let (stored, written) = self
                .with_connection(move |c| put_result_row(c, &result))
                .await?;
            self.counters.wrote(written);
            Ok(stored)
        })
    }

    fn list_stage_results<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<StageResult>>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let mut reports: Vec<StageResult> = self
                .read(move |c| {
                    query_bodies(
                        c,
                        "SELECT body FROM workflow_stage_results WHERE run_id = ?1",
                        params![run_id],
                    )
                })
                .await?;
            by_stage_and_attempt(&mut reports);
            Ok(reports)
        })
    }
}
