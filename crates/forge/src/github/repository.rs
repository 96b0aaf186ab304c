//! A repository as an installation reads it (`GET /repos/{owner}/{repo}`, reading only `id`
//! and `private`): its numeric id is the key of a repository's sync lanes (docs/reference.md
//! §8, "The job queue"), which `astrolift reconcile` learns for a registration no sync
//! through the App has applied yet (docs/reference.md §4, "astrolift reconcile"); whether it
//! is private decides whether a trigger replay may show values (docs/reference.md §9,
//! "Trigger replay").

use serde::Deserialize;

use super::client::{GitHubError, Installation, JsonMethod, RepoPath};

/// The fields of GitHub's repository we read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Repository {
    pub id: u64,
    /// Private (or internal) to its owner; a repository GitHub does not say of is public.
    #[serde(default)]
    pub private: bool,
}

impl Installation {
    /// `repo` as GitHub describes it. A repository this installation cannot read is
    /// GitHub's 404, an error.
    pub async fn repository(&self, repo: &RepoPath) -> Result<Repository, GitHubError> {
        let segments = ["repos", repo.owner.as_str(), repo.name.as_str()];
        self.send_json::<Repository, ()>(JsonMethod::Get, &segments, None)
            .await
    }

    /// The id of `repo` ([`Installation::repository`]).
    pub async fn repository_id(&self, repo: &RepoPath) -> Result<u64, GitHubError> {
        Ok(self.repository(repo).await?.id)
    }
}
