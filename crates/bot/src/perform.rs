//! Running any job of the sync queue (docs/reference.md §1): a sync job to its completed
//! check run ([`SyncRunner::run`]); a pull request's closing and a comment's commands as
//! [`crate::pull_requests`] says. What `serve`'s queue and the sync function call.

use tracing::Instrument as _;

use crate::job::SyncJob;
use crate::pull_requests;
use crate::runner::{JobError, SyncRunner, sync_span};

impl SyncRunner {
    /// Runs any job of the queue, and records where the delivery that made it is (`running`,
    /// then `succeeded` or `failed`): what the sync function runs. A sync job runs to a
    /// completed check run ([`SyncRunner::run`]); a pull request's closing and a comment's
    /// commands run as [`crate::pull_requests`] says.
    pub async fn perform(&self, job: &SyncJob) -> Result<(), JobError> {
        self.marked(job, self.perform_unmarked(job)).await
    }

    /// [`SyncRunner::perform`], leaving the delivery's state to the caller: `serve`'s durable
    /// queue writes it with the job's own (`crate::durable`).
    pub async fn perform_unmarked(&self, job: &SyncJob) -> Result<(), JobError> {
        if job.trigger.syncs() {
            return self.run_logged(job, sync_span(job)).await.map(drop);
        }
        let span = sync_span(job);
        let result = pull_requests::run(self, job).instrument(span.clone()).await;
        let _entered = span.enter();
        match &result {
            Ok(()) => tracing::info!(trigger = ?job.trigger, "job finished"),
            Err(error) => tracing::error!(
                trigger = ?job.trigger,
                retryable = error.is_retryable(),
                error = %error,
                "job failed"
            ),
        }
        result
    }
}
