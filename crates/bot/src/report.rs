//! The App's [`ResultReporter`]: posts a GitHub-sourced dispatch's terminal
//! result back as a comment on its issue or pull request, or as a completed
//! check run (`astrolift: <agent>`) on the pull request's head, with the
//! installation token of the installation the event came through.
//!
//! Only a process that holds the App's private key reports: `astrolift
//! serve`, and the sync worker. The deployed trigger function never holds it
//! (its role denies the key's secret: it is the public endpoint), so on the
//! stack its reporter is [`SqsReportRelay`]: a terminal callback records the
//! status and queues a [`ReportJob`] naming the task on the report queue
//! (`ASTROLIFT_REPORT_QUEUE_URL`), and the sync function reports it
//! ([`crate::SyncRunner::report`]) from what the state store recorded.

use std::sync::Arc;

use astrolift_dispatch::report::{ResultReporter, TerminalResult};
use astrolift_forge::github::{GitHubApp, RepoPath};
use astrolift_store::BoxFuture;
use astrolift_store::state::ReportTarget;

use crate::job::ReportJob;

#[derive(Debug, Clone)]
pub struct GitHubReporter {
    github: Arc<GitHubApp>,
}

impl GitHubReporter {
    pub fn new(github: Arc<GitHubApp>) -> Self {
        Self { github }
    }

    async fn post(&self, target: &ReportTarget, result: &TerminalResult) -> Result<(), String> {
        let repo = RepoPath::parse(&target.repository).map_err(|e| e.to_string())?;
        let installation = self.github.installation(target.installation_id);
        let text = result.markdown();
        match (target.kind.as_str(), target.head_sha.as_deref()) {
            ("comment", _) => installation
                .create_issue_comment(&repo, target.number, &text)
                .await
                .map(drop),
            ("check", Some(head_sha)) => {
                let name = format!("astrolift: {}", result.agent);
                let title = format!("{} {}", result.agent, result.status.as_str());
                installation
                    .create_completed(&repo, head_sha, &name, result.conclusion(), (&title, &text))
                    .await
                    .map(drop)
            }
            (kind, _) => {
                return Err(format!(
                    "no way to report `{kind}` to {}",
                    target.repository
                ));
            }
        }
        .map_err(|e| e.to_string())
    }
}

impl ResultReporter for GitHubReporter {
    fn report<'a>(
        &'a self,
        target: &'a ReportTarget,
        result: &'a TerminalResult,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(self.post(target, result))
    }
}

/// The trigger function's reporter on the stack: relays each report to the sync worker as a
/// [`ReportJob`] on the report queue (an SQS FIFO queue; one message group and
/// deduplication id per task, [`ReportJob::message_group_id`]).
#[derive(Debug, Clone)]
pub struct SqsReportRelay {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsReportRelay {
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }

    async fn relay(&self, result: &TerminalResult) -> Result<(), String> {
        let job = ReportJob::new(&result.task_id);
        let body = serde_json::to_string(&job).map_err(|e| e.to_string())?;
        let group = job.message_group_id();
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_group_id(&group)
            .message_deduplication_id(&group)
            .message_body(body)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "cannot queue the report for the sync worker: {}",
                    astrolift_store::describe_sdk_error("SQS", "SendMessage", &e)
                )
            })?;
        tracing::info!(task_id = %result.task_id, "report relayed to the sync worker");
        Ok(())
    }
}

impl ResultReporter for SqsReportRelay {
    fn report<'a>(
        &'a self,
        _target: &'a ReportTarget,
        result: &'a TerminalResult,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(self.relay(result))
    }
}
