//! Issue and pull request comments: `POST /repos/{owner}/{repo}/issues/{number}/comments`
//! (a pull request is an issue here), what a trigger's `report = "comment"` posts.

use serde::Deserialize;
use serde_json::json;

use super::client::{GitHubError, Installation, JsonMethod, RepoPath};

/// The comment GitHub created.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    #[serde(default)]
    pub html_url: Option<String>,
}

impl Installation {
    /// Comments `body` (Markdown, at most 65,536 characters) on issue or pull request
    /// `number` of `repo`.
    pub async fn create_issue_comment(
        &self,
        repo: &RepoPath,
        number: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError> {
        let number = number.to_string();
        let segments = [
            "repos",
            &repo.owner,
            &repo.name,
            "issues",
            &number,
            "comments",
        ];
        self.send_json(JsonMethod::Post, &segments, Some(&json!({ "body": body })))
            .await
    }
}
