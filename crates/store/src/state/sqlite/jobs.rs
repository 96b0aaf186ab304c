//! The jobs concern on SQLite ([`JobStore`]): the table `jobs`, keyed by id, with the state
//! indexed and the record as JSON in `body`. Created with the rest of the schema when a file
//! is opened, so a file written before it gets it empty (nothing to backfill).

use std::time::Duration;

use rusqlite::{Connection, params};

use super::connection::atomic;
use super::delivery_insert::{insert_delivery, mark_delivery_row};
use super::error::sql_error;
use super::rows::{SqliteStateStore, query_bodies, query_body, text, to_json};
use crate::state::jobs::{DeliveryMark, JobRecord, JobState, JobStore};
use crate::state::model::{DeliveryOutcome, UnixSeconds};
use crate::{BoxFuture, StoreError, StoreResult};

/// Created with the rest of the schema when a file is opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, state TEXT NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, id);
";

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
        Box::pin(self.read(move |c| match state {
            Some(state) => query_bodies(
                c,
                "SELECT body FROM jobs WHERE state = ?1 ORDER BY id",
                [state.as_str()],
            ),
            None => query_bodies(c, "SELECT body FROM jobs ORDER BY id", []),
        }))
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
