//! Issue and pull request comments (a pull request is an issue here):
//! - `POST /repos/{owner}/{repo}/issues/{number}/comments`, what a trigger's
//!   `report = "comment"` posts and what the App replies to a comment's commands;
//! - `GET /repos/{owner}/{repo}/issues/{number}/comments`, every page;
//! - `POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions`, the `eyes`
//!   the App puts on a comment whose commands it acts on (docs/reference.md §17).
//!
//! GitHub answers a new reaction `201 Created` and one the same user already left on the
//! comment `200 OK`, both with the reaction: either is a success here. Content outside
//! GitHub's set ([`REACTION_CONTENTS`]) is its `422 Validation Failed`, an error.

use serde::Deserialize;
use serde_json::json;

use super::client::{GitHubError, Installation, JsonMethod, RepoPath};
use crate::account::{User, by_a_bot};

/// The reaction the App leaves on a comment it acts on.
pub const REACTION_EYES: &str = "eyes";
/// Every reaction content GitHub accepts.
pub const REACTION_CONTENTS: &[&str] = &[
    "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes",
];

/// A comment as GitHub answers it (the fields we read).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub body: Option<String>,
    /// Null for a comment whose author's account is gone.
    #[serde(default)]
    pub user: Option<User>,
}

impl IssueComment {
    /// True when a bot (an App or GitHub Actions) wrote it.
    pub fn by_a_bot(&self) -> bool {
        by_a_bot(self.user.as_ref())
    }
}

/// A reaction GitHub created, or found already left by the same user.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Reaction {
    pub id: u64,
    pub content: String,
    #[serde(default)]
    pub user: Option<User>,
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

    /// Every comment of issue or pull request `number` of `repo`, oldest first (at most
    /// [`MAX_PAGES`](super::MAX_PAGES) pages of 100; a longer list is an error).
    pub async fn issue_comments(
        &self,
        repo: &RepoPath,
        number: u64,
    ) -> Result<Vec<IssueComment>, GitHubError> {
        let segments = [
            "repos",
            &repo.owner,
            &repo.name,
            "issues",
            &number.to_string(),
            "comments",
        ]
        .map(str::to_owned)
        .to_vec();
        self.list_all(segments).await
    }

    /// Reacts `content` (one of [`REACTION_CONTENTS`], such as [`REACTION_EYES`]) to
    /// comment `comment_id` of an issue or pull request of `repo`. Reacting again with
    /// the same content is GitHub's `200` with the reaction already there: a success.
    pub async fn create_comment_reaction(
        &self,
        repo: &RepoPath,
        comment_id: u64,
        content: &str,
    ) -> Result<Reaction, GitHubError> {
        let comment_id = comment_id.to_string();
        let segments = [
            "repos",
            &repo.owner,
            &repo.name,
            "issues",
            "comments",
            &comment_id,
            "reactions",
        ];
        let body = json!({ "content": content });
        self.send_json(JsonMethod::Post, &segments, Some(&body))
            .await
    }
}
