//! The jobs of a pull request that sync no commit (docs/reference.md §17): its closing,
//! which tears down its previews, and a comment's commands.

use crate::comments::run_commands;
use crate::ingress::now;
use crate::job::{JobTrigger, SyncJob};
use crate::previews::close_pull_request;
use crate::runner::{JobError, SyncRunner};

/// Runs `job` (trigger `closed` or `comment`).
pub(crate) async fn run(runner: &SyncRunner, job: &SyncJob) -> Result<(), JobError> {
    let Some(number) = job.pull_request else {
        return Ok(());
    };
    match job.trigger {
        JobTrigger::Closed => {
            let state = runner.stores.state.as_ref();
            close_pull_request(state, &job.repository, number, job.merged, now()).await?;
            Ok(())
        }
        JobTrigger::Comment => match &job.comment {
            Some(comment) => run_commands(runner, job, comment, number).await,
            None => Ok(()),
        },
        _ => Err(JobError::NotASync),
    }
}
