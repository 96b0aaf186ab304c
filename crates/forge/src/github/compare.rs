//! Commit comparison: `GET /repos/{owner}/{repo}/compare/{base}...{head}`,
//! reading only `status`, to order two commits of a ref by ancestry.

use serde::Deserialize;

use super::client::{GitHubError, Installation, JsonMethod, RepoPath};

/// Where `head` stands relative to `base`, as GitHub's compare API says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareStatus {
    /// `head` descends from `base`.
    Ahead,
    /// `head` is an ancestor of `base`.
    Behind,
    /// The same commit.
    Identical,
    /// Neither descends from the other.
    Diverged,
}

/// The fields of GitHub's comparison we read (it also lists commits and files).
#[derive(Debug, Deserialize)]
struct Comparison {
    status: CompareStatus,
}

impl Installation {
    /// Compares `head` against `base` (two commit SHAs). GitHub answers 404
    /// when either commit is unknown to the repository.
    pub async fn compare(
        &self,
        repo: &RepoPath,
        base: &str,
        head: &str,
    ) -> Result<CompareStatus, GitHubError> {
        let basehead = format!("{base}...{head}");
        let segments = ["repos", &repo.owner, &repo.name, "compare", &basehead];
        let comparison: Comparison = self
            .send_json(JsonMethod::Get, &segments, None::<&()>)
            .await?;
        Ok(comparison.status)
    }
}
