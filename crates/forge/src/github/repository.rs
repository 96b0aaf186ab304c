//! A repository's numeric id (`GET /repos/{owner}/{repo}`, as an installation, reading only
//! `id`): the key of a repository's sync lanes (docs/reference.md §8, "The job queue"), which
//! `astrolift reconcile` learns for a registration no sync through the App has applied yet
//! (docs/reference.md §4, "astrolift reconcile").

use serde::Deserialize;

use super::client::{GitHubError, Installation, JsonMethod, RepoPath};

/// The fields of GitHub's repository we read.
#[derive(Debug, Deserialize)]
struct Repository {
    id: u64,
}

impl Installation {
    /// The id of `repo`. A repository this installation cannot read is GitHub's 404, an
    /// error.
    pub async fn repository_id(&self, repo: &RepoPath) -> Result<u64, GitHubError> {
        let segments = ["repos", repo.owner.as_str(), repo.name.as_str()];
        let found = self
            .send_json::<Repository, ()>(JsonMethod::Get, &segments, None)
            .await?;
        Ok(found.id)
    }
}
