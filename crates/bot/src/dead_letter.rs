//! The dead letter of `serve`'s durable queue ([`crate::durable`]): queueing a failed job
//! again, from `astrolift jobs retry` or from a click on the **Re-run** button of its check
//! run (docs/reference.md §9). A running queue takes a queued job within
//! [`SWEEP_INTERVAL`](crate::durable::SWEEP_INTERVAL); else the next start does.

use astrolift_store::StoreError;
use astrolift_store::state::{JobRecord, JobState, JobStore, UnixSeconds};

/// Digits in a job id: the **Re-run** button's identifier is the id itself (GitHub allows
/// 20 characters).
pub const JOB_ID_DIGITS: usize = 20;

/// Whether `identifier` (a requested action's) names a job: [`JOB_ID_DIGITS`] ASCII digits.
pub fn is_job_id(identifier: &str) -> bool {
    identifier.len() == JOB_ID_DIGITS && identifier.bytes().all(|b| b.is_ascii_digit())
}

/// What `astrolift jobs retry` did with one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retried {
    /// Queued again: `serve` runs it (within
    /// [`SWEEP_INTERVAL`](crate::durable::SWEEP_INTERVAL), or at its next start).
    Queued,
    /// Not failed: it is still queued or running.
    NotFailed(JobState),
    NotFound,
    /// The job is another repository's (a Re-run click names only its own repository's).
    OtherRepository,
}

/// Queues the failed job `id` again, with every attempt of the retry policy ahead of it.
pub async fn retry_job(
    jobs: &dyn JobStore,
    id: &str,
    at: UnixSeconds,
) -> Result<Retried, StoreError> {
    let Some(record) = jobs.get_job(id).await? else {
        return Ok(Retried::NotFound);
    };
    if record.state != JobState::Failed {
        return Ok(Retried::NotFailed(record.state));
    }
    Ok(if requeue(jobs, record, at).await? {
        Retried::Queued
    } else {
        Retried::NotFound
    })
}

/// Queues every failed job again; returns their ids, in id order.
pub async fn retry_failed(jobs: &dyn JobStore, at: UnixSeconds) -> Result<Vec<String>, StoreError> {
    let mut retried = Vec::new();
    for record in jobs.list_jobs(Some(JobState::Failed)).await? {
        let id = record.id.clone();
        if requeue(jobs, record, at).await? {
            retried.push(id);
        }
    }
    Ok(retried)
}

async fn requeue(
    jobs: &dyn JobStore,
    mut record: JobRecord,
    at: UnixSeconds,
) -> Result<bool, StoreError> {
    record.state = JobState::Queued;
    record.attempts = 0;
    record.updated_at = at;
    jobs.update_job(&record).await
}

/// Queues the failed job `id` again for a click on its check run's **Re-run** in
/// `repository`: only a job of that repository.
pub async fn rerun(
    jobs: &dyn JobStore,
    id: &str,
    repository: &str,
    at: UnixSeconds,
) -> Result<Retried, StoreError> {
    let Some(record) = jobs.get_job(id).await? else {
        return Ok(Retried::NotFound);
    };
    let job = record.job.value();
    let of = job.get("repository").and_then(|r| r.as_str());
    if !of.is_some_and(|of| of.eq_ignore_ascii_case(repository)) {
        return Ok(Retried::OtherRepository);
    }
    retry_job(jobs, id, at).await
}
