//! The App's [`ResultReporter`]: posts a GitHub-sourced dispatch's terminal
//! result back as a comment on its issue or pull request, or as a completed
//! check run (`astrolift: <agent>`) on the pull request's head, with the
//! installation token of the installation the event came through.
//!
//! Only a process that holds the App's private key reports: `astrolift
//! serve`. The deployed trigger function never holds it (its role denies the
//! key's secret: it is the public endpoint), so on the stack a terminal
//! callback records the status and logs that it was not reported.

use std::sync::Arc;

use astrolift_forge::github::{GitHubApp, RepoPath};
use astrolift_store::BoxFuture;
use astrolift_store::state::ReportTarget;
use astrolift_trigger::report::{ResultReporter, TerminalResult};

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
