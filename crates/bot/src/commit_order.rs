//! Commit ancestry for the sync's ordering rule, from GitHub's compare API.

use astrolift_forge::github::{CompareStatus, GitHubError, Installation, RepoPath};
use astrolift_sync::{CommitOrder, Order, OrderError, OrderFuture};

/// Orders the commits of one repository by asking GitHub
/// (`compare/{registered}...{pushed}`) as the job's installation.
#[derive(Debug, Clone)]
pub struct GitHubCommitOrder {
    pub installation: Installation,
    pub repo: RepoPath,
}

impl CommitOrder for GitHubCommitOrder {
    fn compare<'a>(&'a self, registered: &'a str, pushed: &'a str) -> OrderFuture<'a> {
        Box::pin(async move {
            let answer = self
                .installation
                .compare(&self.repo, registered, pushed)
                .await;
            match answer {
                Ok(status) => Ok(order_of(status)),
                // The pushed commit was just fetched, so the unknown one is
                // the registered commit: force-pushed away and collected.
                // The pushed commit cannot be shown to be older: it applies.
                Err(error) if error.status().is_some_and(|s| s.as_u16() == 404) => {
                    Ok(Order::Diverged)
                }
                Err(error) => Err(OrderError {
                    registered: registered.to_owned(),
                    pushed: pushed.to_owned(),
                    retryable: is_retryable(&error),
                    reason: error.to_string(),
                }),
            }
        })
    }
}

/// GitHub compares `head` (the pushed commit) against `base` (the registered one).
fn order_of(status: CompareStatus) -> Order {
    match status {
        CompareStatus::Ahead => Order::Newer,
        CompareStatus::Behind => Order::Older,
        CompareStatus::Identical => Order::Same,
        CompareStatus::Diverged => Order::Diverged,
    }
}

/// True when GitHub may answer the same request later: no answer, a 5xx,
/// a rate limit (429, or GitHub's 403 secondary limit).
pub fn is_retryable(error: &GitHubError) -> bool {
    error
        .status()
        .is_none_or(|s| s.is_server_error() || s.as_u16() == 429 || s.as_u16() == 403)
}
