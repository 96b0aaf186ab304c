//! The jobs concern on SQLite ([`JobStore`]): the table `jobs`, keyed by id, a record's
//! fields in columns of their own and the job itself as the JSON text its queue encoded.
//! Created with the rest of the schema when a file is opened.
//!
//! Every job accepted by `serve` is inserted, marked `running` and deleted on the store's one
//! writer thread, so the table is laid out for those three writes:
//! - a record's fields are columns, not one JSON body like the store's other tables: a
//!   write binds them as they are and copies the job's text, where a body would be the
//!   record serialized again at every write;
//! - clustered by id (`WITHOUT ROWID`): a rowid table keyed by text keeps a second B-tree
//!   for the key, which each insert and delete would write too;
//! - the state indexed only for the jobs that wait (`queued`, and `failed` for
//!   `jobs list --state failed` and `jobs retry --all-failed`): a job leaves the index when
//!   its attempt starts, and its delete touches no index. A sweep reads the queued ones
//!   through it however long the dead letter is; `running` ones are listed by a scan, which
//!   only a start and a drain ask for. The listings name their state in the SQL text, as
//!   SQLite uses a partial index only for a query whose own terms imply the index's.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, Statement, params};

use super::connection::atomic;
use super::delivery_insert::{insert_delivery, mark_delivery_row};
use super::error::sql_error;
use super::rows::SqliteStateStore;
use crate::state::jobs::{DeliveryMark, JobJson, JobRecord, JobState, JobStore};
use crate::state::model::{DeliveryOutcome, UnixSeconds};
use crate::{BoxFuture, StoreError, StoreResult};

/// Created with the rest of the schema when a file is opened ([`migrate`] first).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY, state TEXT NOT NULL, attempts INTEGER NOT NULL,
  queued_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, error TEXT, job TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS jobs_waiting ON jobs (state, id)
  WHERE state = 'queued' OR state = 'failed';
";

/// Whether the file holds the table as first written: each record as one JSON `body` (in a
/// rowid table indexed on every state, or clustered by id).
const HAS_BODY_TABLE: &str =
    "SELECT COUNT(*) > 0 FROM pragma_table_info('jobs') WHERE name = 'body'";

/// Moves the table as first written aside (with its indexes, whose names [`SCHEMA`] uses),
/// for [`SCHEMA`] to create the current one.
const SET_BODY_TABLE_ASIDE: &str = "
DROP INDEX IF EXISTS jobs_by_state;
DROP INDEX IF EXISTS jobs_waiting;
ALTER TABLE jobs RENAME TO jobs_as_bodies;
";

/// Copies the records of the table set aside into the current one, each field into its
/// column and the job as its JSON text, and drops it.
const COPY_BODY_TABLE: &str = "
INSERT INTO jobs (id, state, attempts, queued_at, updated_at, error, job)
  SELECT id, state, body ->> '$.attempts', body ->> '$.queued_at', body ->> '$.updated_at',
    body ->> '$.error', body -> '$.job'
  FROM jobs_as_bodies;
DROP TABLE jobs_as_bodies;
";

/// Brings a file whose `jobs` table keeps each record as a JSON body to the current layout,
/// in one transaction (run before [`SCHEMA`]); a no-op otherwise. A compatibility shim: when
/// it can go is in docs/operations.md, "Compatibility shims".
pub(super) fn migrate(connection: &Connection) -> StoreResult<()> {
    let has_body_table = |c: &Connection| -> StoreResult<bool> {
        c.query_row(HAS_BODY_TABLE, [], |row| row.get(0))
            .map_err(sql_error)
    };
    if !has_body_table(connection)? {
        return Ok(());
    }
    let tx =
        rusqlite::Transaction::new_unchecked(connection, rusqlite::TransactionBehavior::Immediate)
            .map_err(sql_error)?;
    // Checked again under the write lock: another process may have migrated it meanwhile.
    if has_body_table(&tx)? {
        for batch in [SET_BODY_TABLE_ASIDE, SCHEMA, COPY_BODY_TABLE] {
            tx.execute_batch(batch).map_err(sql_error)?;
        }
    }
    tx.commit().map_err(sql_error)
}

/// A job's columns, in the order [`job_of_row`] reads and [`execute_with_job`] binds them: a
/// macro, so that each statement is one literal.
macro_rules! job_columns {
    () => {
        "id, state, attempts, queued_at, updated_at, error, job"
    };
}

impl JobStore for SqliteStateStore {
    fn put_job<'a>(&'a self, job: &'a JobRecord) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let job = job.clone();
            self.with_connection(move |c| insert_job(c, &job)).await?;
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
            let (delivery_id, job) = (delivery_id.to_owned(), job.clone());
            let outcome = self
                .with_connection(move |c| {
                    let transaction = atomic(c)?;
                    let outcome = insert_delivery(&transaction, &delivery_id, now, ttl)?;
                    if outcome == DeliveryOutcome::New {
                        // A conflict returns before the commit: the delivery is rolled back.
                        insert_job(&transaction, &job)?;
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
        Box::pin(self.write_job(JobWrite::Update(job.clone())))
    }

    fn delete_job<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.write_job(JobWrite::Delete(id.to_owned())))
    }

    fn update_job_marking<'a>(
        &'a self,
        job: &'a JobRecord,
        mark: DeliveryMark<'a>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.write_job_marking(JobWrite::Update(job.clone()), mark))
    }

    fn delete_job_marking<'a>(
        &'a self,
        id: &'a str,
        mark: DeliveryMark<'a>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.write_job_marking(JobWrite::Delete(id.to_owned()), mark))
    }

    fn get_job<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<JobRecord>>> {
        let id = id.to_owned();
        Box::pin(self.read(move |c| {
            let sql = concat!("SELECT ", job_columns!(), " FROM jobs WHERE id = ?1");
            let row = c
                .prepare_cached(sql)
                .and_then(|mut statement| statement.query_row([id], job_of_row).optional())
                .map_err(sql_error)?;
            row.transpose()
        }))
    }

    fn list_jobs(&self, state: Option<JobState>) -> BoxFuture<'_, StoreResult<Vec<JobRecord>>> {
        Box::pin(self.read(move |c| {
            let mut statement = c.prepare_cached(list_jobs_sql(state)).map_err(sql_error)?;
            let rows = statement
                .query_map([], job_of_row)
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(sql_error)?;
            rows.into_iter().collect()
        }))
    }
}

/// The listing of the jobs in `state` (all without one), in id order. Each state is named
/// in the text, so that the queued and failed ones are read through `jobs_waiting`.
fn list_jobs_sql(state: Option<JobState>) -> &'static str {
    macro_rules! listing {
        ($($condition:literal)?) => {
            concat!("SELECT ", job_columns!(), " FROM jobs ", $($condition,)? " ORDER BY id")
        };
    }
    match state {
        Some(JobState::Queued) => listing!("WHERE state = 'queued'"),
        Some(JobState::Failed) => listing!("WHERE state = 'failed'"),
        Some(JobState::Running) => listing!("WHERE state = 'running'"),
        None => listing!(),
    }
}

/// The record in a row of [`job_columns`]; a row that holds no record (a state or a job
/// that another program wrote) is the store's error, beside rusqlite's own.
fn job_of_row(row: &Row<'_>) -> rusqlite::Result<StoreResult<JobRecord>> {
    let (id, state): (String, String) = (row.get(0)?, row.get(1)?);
    let (attempts, queued_at, updated_at) = (row.get(2)?, row.get(3)?, row.get(4)?);
    let (error, job): (Option<String>, String) = (row.get(5)?, row.get(6)?);
    let Some(state) = JobState::from_name(&state) else {
        return Ok(Err(stored_job_error(&id, format!("no state {state:?}"))));
    };
    let job = match JobJson::from_text(job) {
        Ok(job) => job,
        Err(error) => return Ok(Err(stored_job_error(&id, error.to_string()))),
    };
    Ok(Ok(JobRecord {
        id,
        state,
        attempts,
        job,
        queued_at,
        updated_at,
        error,
    }))
}

fn stored_job_error(id: &str, message: String) -> StoreError {
    StoreError::Backend {
        operation: "sqlite".into(),
        message: format!("stored job {id} does not parse: {message}"),
    }
}

/// A write of one job's row.
enum JobWrite {
    /// Replaces the row of the record's id with the record.
    Update(JobRecord),
    Delete(String),
}

impl JobWrite {
    /// Rows written (0 when the job is not recorded).
    fn run(&self, c: &Connection) -> StoreResult<usize> {
        match self {
            JobWrite::Update(job) => c
                .prepare_cached(
                    "UPDATE jobs SET state = ?2, attempts = ?3, queued_at = ?4, updated_at = ?5,
                       error = ?6, job = ?7 WHERE id = ?1",
                )
                .and_then(|mut update| execute_with_job(&mut update, job)),
            JobWrite::Delete(id) => c
                .prepare_cached("DELETE FROM jobs WHERE id = ?1")
                .and_then(|mut delete| delete.execute([id])),
        }
        .map_err(sql_error)
    }
}

/// Runs `statement` with a record's values, `?1` to `?7` in [`job_columns`]' order.
fn execute_with_job(statement: &mut Statement<'_>, job: &JobRecord) -> rusqlite::Result<usize> {
    statement.execute(params![
        job.id,
        job.state.as_str(),
        job.attempts,
        job.queued_at,
        job.updated_at,
        job.error,
        job.job.get()
    ])
}

impl SqliteStateStore {
    /// Writes one job's row (`job`) alone; `true` when it was written.
    async fn write_job(&self, job: JobWrite) -> StoreResult<bool> {
        let written = self.with_connection(move |c| job.run(c)).await?;
        self.counters.wrote(written as u64);
        Ok(written == 1)
    }

    /// Writes one job's row (`job`) and marks the job's delivery in one call, so in one
    /// transaction; `true` when the job's row was written.
    async fn write_job_marking(&self, job: JobWrite, mark: DeliveryMark<'_>) -> StoreResult<bool> {
        let (delivery_id, state, now) = (mark.delivery_id.to_owned(), mark.state, mark.now);
        let (job, delivery) = self
            .with_connection(move |c| {
                let unit = atomic(c)?;
                let job = job.run(&unit)?;
                let delivery = mark_delivery_row(&unit, &delivery_id, state, now)?;
                unit.commit().map_err(sql_error)?;
                Ok((job, delivery))
            })
            .await?;
        self.counters.wrote((job + delivery) as u64);
        Ok(job == 1)
    }
}

/// Inserts a new job's row; `StoreError::Conflict` when its id is recorded already.
fn insert_job(c: &Connection, job: &JobRecord) -> StoreResult<()> {
    let inserted = c
        .prepare_cached(concat!(
            "INSERT INTO jobs (",
            job_columns!(),
            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (id) DO NOTHING"
        ))
        .and_then(|mut insert| execute_with_job(&mut insert, job))
        .map_err(sql_error)?;
    if inserted == 0 {
        return Err(StoreError::Conflict(format!("job {} exists", job.id)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row another program wrote with a state or a job that is none of ours reads as the
    /// store's error naming the job, not a record and not a panic.
    #[test]
    fn a_row_that_holds_no_record_is_an_error_naming_its_job() {
        let connection = Connection::open_in_memory().expect("a database");
        connection.execute_batch(SCHEMA).expect("the schema");
        let read = |id: &str| {
            connection
                .query_row(
                    concat!("SELECT ", job_columns!(), " FROM jobs WHERE id = ?1"),
                    [id],
                    job_of_row,
                )
                .expect("a row")
        };
        connection
            .execute_batch(
                "INSERT INTO jobs VALUES ('001', 'lost', 1, 10, 11, NULL, '{}');
                 INSERT INTO jobs VALUES ('002', 'queued', 1, 10, 11, NULL, '{not json');
                 INSERT INTO jobs VALUES ('003', 'queued', 1, 10, 11, NULL, '{\"n\": 1}');",
            )
            .expect("the rows");
        let error = |id| read(id).expect_err("no record").to_string();
        assert!(error("001").contains("stored job 001 does not parse: no state \"lost\""));
        assert!(error("002").contains("stored job 002 does not parse"));
        let record = read("003").expect("a record");
        assert_eq!(
            (record.state, record.job.get()),
            (JobState::Queued, r#"{"n": 1}"#)
        );
    }

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
