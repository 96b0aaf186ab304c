//! The jobs concern on SQLite ([`JobStore`]): the table `jobs`, keyed by id, with the record
//! as JSON in `body`. Created with the rest of the schema when a file is opened, so a file
//! written before it gets it empty (nothing to backfill).
//!
//! Every job accepted by `serve` is inserted, marked `running` and deleted on the store's one
//! writer thread, so the table is laid out for those three writes (BENCHMARKS.md, issue 27):
//! - clustered by id (`WITHOUT ROWID`): a rowid table keyed by text keeps a second B-tree
//!   for the key, which each insert and delete wrote too;
//! - the state indexed only for the jobs that wait (`queued`, and `failed` for
//!   `jobs list --state failed` and `jobs retry --all-failed`): a job leaves the index when
//!   its attempt starts, and its delete touches no index. A sweep reads the queued ones
//!   through it however long the dead letter is; `running` ones are listed by a scan, which
//!   only a start and a drain ask for. The listings name their state in the SQL text, as
//!   SQLite uses a partial index only for a query whose own terms imply the index's.

use std::time::Duration;

use rusqlite::{Connection, params};

use super::connection::atomic;
use super::delivery_insert::{insert_delivery, mark_delivery_row};
use super::error::sql_error;
use super::rows::{SqliteStateStore, query_bodies, query_body, text, to_json};
use crate::state::jobs::{DeliveryMark, JobRecord, JobState, JobStore};
use crate::state::model::{DeliveryOutcome, UnixSeconds};
use crate::{BoxFuture, StoreError, StoreResult};

/// Created with the rest of the schema when a file is opened ([`migrate`] first).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, state TEXT NOT NULL, body TEXT NOT NULL)
  WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS jobs_waiting ON jobs (state, id)
  WHERE state = 'queued' OR state = 'failed';
";

/// Whether the file holds the table as first written: a rowid table indexed on every state.
const HAS_ROWID_TABLE: &str = "SELECT COUNT(*) > 0 FROM sqlite_master
  WHERE type = 'table' AND name = 'jobs' AND sql NOT LIKE '%WITHOUT ROWID%'";

/// Moves the table as first written aside, for [`SCHEMA`] to create the current one.
const SET_ROWID_TABLE_ASIDE: &str = "
DROP INDEX IF EXISTS jobs_by_state;
ALTER TABLE jobs RENAME TO jobs_with_rowid;
";

/// Copies the rows of the table set aside into the current one, unchanged, and drops it.
const COPY_ROWID_TABLE: &str = "
INSERT INTO jobs (id, state, body) SELECT id, state, body FROM jobs_with_rowid;
DROP TABLE jobs_with_rowid;
";

/// Brings a file whose `jobs` table was written before it was clustered by id to the
/// current layout, in one transaction (run before [`SCHEMA`]); a no-op otherwise. A
/// compatibility shim: when it can go is in docs/operations.md, "Compatibility shims".
pub(super) fn migrate(connection: &Connection) -> StoreResult<()> {
    let has_rowid_table = |c: &Connection| -> StoreResult<bool> {
        c.query_row(HAS_ROWID_TABLE, [], |row| row.get(0))
            .map_err(sql_error)
    };
    if !has_rowid_table(connection)? {
        return Ok(());
    }
    let tx =
        rusqlite::Transaction::new_unchecked(connection, rusqlite::TransactionBehavior::Immediate)
            .map_err(sql_error)?;
    // Checked again under the write lock: another process may have migrated it meanwhile.
    if has_rowid_table(&tx)? {
        for batch in [SET_ROWID_TABLE_ASIDE, SCHEMA, COPY_ROWID_TABLE] {
            tx.execute_batch(batch).map_err(sql_error)?;
        }
    }
    tx.commit().map_err(sql_error)
}

impl JobStore for SqliteStateStore {
    fn put_job<'a>(&'a self, job: &'a JobRecord) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let (id, state, body) = (job.id.clone(), job.state.as_str(), to_json(job)?);
            self.with_connection(move |c| insert_job(c, &id, state, &body))
                .await?;
            self.counters.wrote(1);
            Ok(())
        })
    }

    fn put_job_for_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        now: UnixSeconds,
        ttl: Duration,
        job: &'a JobRecord,
    ) -> BoxFuture<'a, StoreResult<DeliveryOutcome>> {
        Box::pin(async move {
            let (id, state, body) = (job.id.clone(), job.state.as_str(), to_json(job)?);
            let delivery_id = delivery_id.to_owned();
            let outcome = self
                .with_connection(move |c| {
                    let transaction = atomic(c)?;
                    let outcome = insert_delivery(&transaction, &delivery_id, now, ttl)?;
                    if outcome == DeliveryOutcome::New {
                        // A conflict returns before the commit: the delivery is rolled back.
                        insert_job(&transaction, &id, state, &body)?;
                    }
                    transaction.commit().map_err(sql_error)?;
                    Ok(outcome)
                })
                .await?;
            if outcome == DeliveryOutcome::New {
                self.counters.wrote(2);
                self.counters.transaction();
            }
            Ok(outcome)
        })
    }

    fn update_job<'a>(&'a self, job: &'a JobRecord) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let written = self.write_rows(UPDATE_JOB, job_row(job)?).await?;
            Ok(written == 1)
        })
    }

    fn delete_job<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let written = self.write_rows(DELETE_JOB, vec![text(id)]).await?;
            Ok(written == 1)
        })
    }

    fn update_job_marking<'a>(
        &'a self,
        job: &'a JobRecord,
        mark: DeliveryMark<'a>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            self.write_job_marking(UPDATE_JOB, job_row(job)?, mark)
                .await
        })
    }

    fn delete_job_marking<'a>(
        &'a self,
        id: &'a str,
        mark: DeliveryMark<'a>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.write_job_marking(DELETE_JOB, vec![text(id)], mark))
    }

    fn get_job<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<JobRecord>>> {
        let id = id.to_owned();
        Box::pin(self.read(move |c| query_body(c, "SELECT body FROM jobs WHERE id = ?1", [id])))
    }

    fn list_jobs(&self, state: Option<JobState>) -> BoxFuture<'_, StoreResult<Vec<JobRecord>>> {
        Box::pin(self.read(move |c| query_bodies(c, list_jobs_sql(state), [])))
    }
}

/// The listing of the jobs in `state` (all without one), in id order. Each state is named
/// in the text, so that the queued and failed ones are read through `jobs_waiting`.
fn list_jobs_sql(state: Option<JobState>) -> &'static str {
    match state {
        Some(JobState::Queued) => "SELECT body FROM jobs WHERE state = 'queued' ORDER BY id",
        Some(JobState::Failed) => "SELECT body FROM jobs WHERE state = 'failed' ORDER BY id",
        Some(JobState::Running) => "SELECT body FROM jobs WHERE state = 'running' ORDER BY id",
        None => "SELECT body FROM jobs ORDER BY id",
    }
}

/// Replaces a job's row with [`job_row`]'s values.
const UPDATE_JOB: &str = "UPDATE jobs SET state = ?2, body = ?3 WHERE id = ?1";
const DELETE_JOB: &str = "DELETE FROM jobs WHERE id = ?1";

impl SqliteStateStore {
    /// Runs `job_sql` (one job's update or delete) and marks the job's delivery in one call,
    /// so in one transaction; `true` when the job's row was written.
    async fn write_job_marking(
        &self,
        job_sql: &'static str,
        values: Vec<rusqlite::types::Value>,
        mark: DeliveryMark<'_>,
    ) -> StoreResult<bool> {
        let (delivery_id, state, now) = (mark.delivery_id.to_owned(), mark.state, mark.now);
        let (job, delivery) = self
            .with_connection(move |c| {
                let unit = atomic(c)?;
                let job = unit
                    .prepare_cached(job_sql)
                    .and_then(|mut write| write.execute(rusqlite::params_from_iter(values)))
                    .map_err(sql_error)?;
                let delivery = mark_delivery_row(&unit, &delivery_id, state, now)?;
                unit.commit().map_err(sql_error)?;
                Ok((job, delivery))
            })
            .await?;
        self.counters.wrote((job + delivery) as u64);
        Ok(job == 1)
    }
}

/// A job's row: its id, its state, the record as JSON.
fn job_row(job: &JobRecord) -> StoreResult<Vec<rusqlite::types::Value>> {
    Ok(vec![
        text(job.id.as_str()),
        text(job.state.as_str()),
        text(to_json(job)?),
    ])
}

/// Inserts a new job's row; `StoreError::Conflict` when its id is recorded already.
fn insert_job(c: &Connection, id: &str, state: &str, body: &str) -> StoreResult<()> {
    let inserted = c
        .prepare_cached(
            "INSERT INTO jobs (id, state, body) VALUES (?1, ?2, ?3) ON CONFLICT (id) DO NOTHING",
        )
        .and_then(|mut insert| insert.execute(params![id, state, body]))
        .map_err(sql_error)?;
    if inserted == 0 {
        return Err(StoreError::Conflict(format!("job {id} exists")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How SQLite reads each listing of jobs: the queued (every sweep) and the failed ones
    /// through the partial index, so neither reads the others; the running ones and all of
    /// them by the table's own order, with no sort (the module docs).
    #[test]
    fn the_waiting_jobs_are_listed_through_their_index() {
        let connection = Connection::open_in_memory().expect("a database");
        connection.execute_batch(SCHEMA).expect("the schema");
        let plan = |state| {
            let sql = format!("EXPLAIN QUERY PLAN {}", list_jobs_sql(state));
            let mut statement = connection.prepare(&sql).expect("the plan");
            let details = statement
                .query_map([], |row| row.get::<_, String>(3))
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .expect("the plan's rows");
            details.join("; ")
        };
        let states = [
            Some(JobState::Queued),
            Some(JobState::Failed),
            Some(JobState::Running),
            None,
        ];
        assert_eq!(
            states.map(plan),
            [
                "SEARCH jobs USING INDEX jobs_waiting (state=?)",
                "SEARCH jobs USING INDEX jobs_waiting (state=?)",
                "SCAN jobs",
                "SCAN jobs",
            ]
        );
    }
}
