//! Pull requests: one pull request's state, head and base
//! (`GET /repos/{owner}/{repo}/pulls/{number}`), the files it changes (with
//! their patches), its reviews, and creating a review of comments; and the App's own pull
//! requests: the open one of a branch (`GET .../pulls?head=OWNER:BRANCH&state=open`),
//! opening one (`POST .../pulls`) and changing its title or body (`PATCH .../pulls/{number}`).
//!
//! Sent through octocrab's generic JSON calls and forge's retry layer, with
//! our own lean types: octocrab's typed pull-request API builds routes from
//! `/repos/...`, not under a GitHub Enterprise base path, and its `Review`
//! and `DiffEntry` models require fields we never read. Lists are read with
//! octocrab's [`octocrab::Page`] (the `Link` header), 100 items a page.
//!
//! Limits:
//! - a list is read for at most [`MAX_PAGES`] pages (GitHub lists at most
//!   3,000 files of a pull request: 30 pages of 100); a longer list is an
//!   error rather than a partial answer;
//! - a `next` link is followed only on the API's own origin and base path,
//!   so the token is never sent to another host;
//! - a review is created with at most [`COMMENTS_PER_REVIEW`] comments.
//!   GitHub documents no cap, but a large review-creation request is slow
//!   and trips its secondary rate limits, so forge refuses more, as it
//!   batches check-run annotations by 50. More comments are more reviews
//!   (the caller's choice): ⌈n/50⌉ requests, where review plus single
//!   review comments would make one request per comment past the first 50.
//!
//! Opening or changing a pull request needs the installation's `pull_requests: write`
//! (GitHub's 403 otherwise, [`GitHubError::is_forbidden`]). GitHub refuses a second open pull
//! request of one head into one base with a 422 (`A pull request already exists for
//! OWNER:BRANCH.`): a caller finds the open one first and updates it.

use http::StatusCode;
use serde::{Deserialize, Serialize};
use url::Url;

use super::client::{GitHubError, Installation, JsonMethod, RepoPath, protocol};
use super::git_data::checked_sha;
use crate::account::{User, by_a_bot};

/// Comments sent in one review-creation request.
pub const COMMENTS_PER_REVIEW: usize = 50;
/// Pages read of one list.
pub const MAX_PAGES: usize = 30;
/// Items asked for per page (GitHub's maximum).
const PER_PAGE: &str = "100";

/// A pull request as GitHub answers it (the fields we read): what a comment's commands
/// need to know of the pull request they are on (docs/reference.md §17).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestDetails {
    pub number: u64,
    /// `open` or `closed`.
    pub state: String,
    /// Absent from some answers (GitHub Enterprise's older ones): not merged.
    #[serde(default)]
    pub merged: bool,
    pub head: PullRequestHead,
    pub base: PullRequestBase,
    pub user: User,
    #[serde(default)]
    pub html_url: Option<String>,
}

/// A pull request's head: its commit, branch and repository.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestHead {
    /// 40 hex digits, lowercase.
    pub sha: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// Null when the head repository (a fork) was deleted.
    #[serde(default)]
    pub repo: Option<PullRequestRepository>,
}

/// A pull request's base: the branch it merges into, in the repository it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestBase {
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub repo: PullRequestRepository,
}

/// A head's or base's repository.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestRepository {
    pub id: u64,
    pub full_name: String,
}

impl PullRequestDetails {
    /// True while the pull request is open.
    pub fn is_open(&self) -> bool {
        self.state == "open"
    }

    /// True when the head lives in another repository than the base, or in a deleted
    /// one (compared by id): such a pull request is previewed only on approval.
    pub fn is_fork(&self) -> bool {
        self.head
            .repo
            .as_ref()
            .is_none_or(|head| head.id != self.base.repo.id)
    }
}

/// One file of a pull request (the fields we read).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestFile {
    pub filename: String,
    /// `added`, `modified`, `removed`, `renamed`, ...
    #[serde(default)]
    pub status: String,
    /// The unified diff of the file; absent for binary files and for
    /// diffs too large for GitHub to show.
    #[serde(default)]
    pub patch: Option<String>,
}

/// A review as GitHub lists it (the fields we read).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Review {
    pub id: u64,
    /// The commit the review was made on.
    #[serde(default)]
    pub commit_id: Option<String>,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
    #[serde(default)]
    pub state: Option<String>,
}

impl Review {
    /// True when a bot (an App or GitHub Actions) wrote it: a person cannot
    /// post a review whose author is a bot.
    pub fn by_a_bot(&self) -> bool {
        by_a_bot(self.user.as_ref())
    }
}

/// Which side of the diff a comment is on; suggestions are on the new side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Side {
    Right,
}

/// One comment of a new review: on `line`, or on `start_line..=line`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewComment {
    pub path: String,
    pub line: u32,
    pub side: Side,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_side: Option<Side>,
    pub body: String,
}

impl ReviewComment {
    /// A comment on the new side of `path`, lines `start_line..=line`
    /// (`start_line` only when the range spans more than one line).
    pub fn on_new_lines(path: &str, start_line: Option<u32>, line: u32, body: String) -> Self {
        let start_line = start_line.filter(|start| *start < line);
        Self {
            path: path.to_owned(),
            line,
            side: Side::Right,
            start_line,
            start_side: start_line.map(|_| Side::Right),
            body,
        }
    }
}

/// A review posted as `COMMENT` (neither approving nor requesting changes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewReview {
    /// The head commit the comments' lines refer to.
    pub commit_id: String,
    /// Required by GitHub for a `COMMENT` review.
    pub body: String,
    pub comments: Vec<ReviewComment>,
}

#[derive(Serialize)]
struct CreateReview<'a> {
    commit_id: &'a str,
    body: &'a str,
    event: &'static str,
    comments: &'a [ReviewComment],
}

/// A pull request the App opened or found by its branch (the fields it reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestRef {
    pub number: u64,
    pub html_url: String,
    /// 40 hex digits, lowercase.
    pub head_sha: String,
    /// `None` when it has none.
    pub body: Option<String>,
}

/// A pull request as the list, create and update answers give it (the fields we read).
#[derive(Deserialize)]
struct PullAnswer {
    number: u64,
    html_url: String,
    head: PullAnswerHead,
    #[serde(default)]
    body: Option<String>,
}

#[derive(Deserialize)]
struct PullAnswerHead {
    sha: String,
}

impl PullAnswer {
    fn checked(self, method: &http::Method, path: &str) -> Result<PullRequestRef, GitHubError> {
        Ok(PullRequestRef {
            number: self.number,
            html_url: self.html_url,
            head_sha: checked_sha(method, path, "head.sha", &self.head.sha)?,
            body: self.body,
        })
    }
}

#[derive(Serialize)]
struct NewPullRequest<'a> {
    title: &'a str,
    head: &'a str,
    base: &'a str,
    body: &'a str,
}

#[derive(Serialize)]
struct PullRequestEdit<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<&'a str>,
}

impl Installation {
    /// The open pull request of branch `branch` of `head_owner` in `repo`
    /// (`GET /repos/{owner}/{repo}/pulls?head=HEAD_OWNER:BRANCH&state=open`); the newest when
    /// there are several (one per base), `None` when there is none.
    pub async fn find_open_pull_request(
        &self,
        repo: &RepoPath,
        head_owner: &str,
        branch: &str,
    ) -> Result<Option<PullRequestRef>, GitHubError> {
        let segments = ["repos", &repo.owner, &repo.name, "pulls"];
        let mut url = self.app.api_url(&segments);
        url.query_pairs_mut()
            .append_pair("head", &format!("{head_owner}:{branch}"))
            .append_pair("state", "open")
            .append_pair("per_page", PER_PAGE);
        let path = url.path().to_owned();
        let open: Vec<PullAnswer> = self.send(JsonMethod::Get, &url, None::<&()>).await?;
        open.into_iter()
            .next()
            .map(|pull| pull.checked(&http::Method::GET, &path))
            .transpose()
    }

    /// Opens a pull request of `head` (a branch of `repo`, or `OWNER:BRANCH`) into `base`
    /// (`POST /repos/{owner}/{repo}/pulls`).
    pub async fn create_pull_request(
        &self,
        repo: &RepoPath,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
    ) -> Result<PullRequestRef, GitHubError> {
        let segments = ["repos", &repo.owner, &repo.name, "pulls"];
        let request = NewPullRequest {
            title,
            head,
            base,
            body,
        };
        self.send_pull(JsonMethod::Post, &segments, &request).await
    }

    /// Changes pull request `number`'s title and body, each when given
    /// (`PATCH /repos/{owner}/{repo}/pulls/{number}`).
    pub async fn update_pull_request(
        &self,
        repo: &RepoPath,
        number: u64,
        title: Option<&str>,
        body: Option<&str>,
    ) -> Result<PullRequestRef, GitHubError> {
        let number = number.to_string();
        let segments = ["repos", &repo.owner, &repo.name, "pulls", &number];
        let edit = PullRequestEdit { title, body };
        self.send_pull(JsonMethod::Patch, &segments, &edit).await
    }

    /// A write that answers a pull request, its head sha checked.
    async fn send_pull<B: Serialize + Sync>(
        &self,
        method: JsonMethod,
        segments: &[&str],
        body: &B,
    ) -> Result<PullRequestRef, GitHubError> {
        let answer: PullAnswer = self.send_json(method, segments, Some(body)).await?;
        let path = self.app.api_url(segments).path().to_owned();
        answer.checked(&method.method(), &path)
    }

    /// `GET /repos/{owner}/{repo}/pulls/{number}`; `None` when GitHub answers 404 (no such
    /// pull request, or a repository this installation cannot see). A head sha that is not
    /// 40 hex digits is an error.
    pub async fn pull_request(
        &self,
        repo: &RepoPath,
        number: u64,
    ) -> Result<Option<PullRequestDetails>, GitHubError> {
        let number = number.to_string();
        let segments = ["repos", &repo.owner, &repo.name, "pulls", &number];
        let answer = self
            .send_json::<PullRequestDetails, ()>(JsonMethod::Get, &segments, None)
            .await;
        let mut pull = match answer {
            Ok(pull) => pull,
            Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => return Ok(None),
            Err(error) => return Err(error),
        };
        let sha = &pull.head.sha;
        if sha.len() != 40 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            let path = self.app.api_url(&segments).path().to_owned();
            return Err(protocol(
                &http::Method::GET,
                &path,
                "`head.sha` is not 40 hex digits",
            ));
        }
        pull.head.sha.make_ascii_lowercase();
        Ok(Some(pull))
    }

    /// `GET /repos/{owner}/{repo}/pulls/{number}/files`, every page.
    pub async fn pull_request_files(
        &self,
        repo: &RepoPath,
        number: u64,
    ) -> Result<Vec<PullRequestFile>, GitHubError> {
        self.list_all(pulls_segments(repo, number, "files")).await
    }

    /// `GET /repos/{owner}/{repo}/pulls/{number}/reviews`, every page.
    pub async fn pull_request_reviews(
        &self,
        repo: &RepoPath,
        number: u64,
    ) -> Result<Vec<Review>, GitHubError> {
        self.list_all(pulls_segments(repo, number, "reviews")).await
    }

    /// `POST /repos/{owner}/{repo}/pulls/{number}/reviews` with `event`
    /// `COMMENT`. Refuses (without a request) more than
    /// [`COMMENTS_PER_REVIEW`] comments, or an empty body.
    pub async fn create_review(
        &self,
        repo: &RepoPath,
        number: u64,
        review: &NewReview,
    ) -> Result<Review, GitHubError> {
        let segments = pulls_segments(repo, number, "reviews");
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let url = self.app.api_url(&segments);
        if review.comments.len() > COMMENTS_PER_REVIEW || review.body.trim().is_empty() {
            let reason = format!(
                "a review needs a body and at most {COMMENTS_PER_REVIEW} comments (got {})",
                review.comments.len()
            );
            return Err(protocol(&http::Method::POST, url.path(), &reason));
        }
        let body = CreateReview {
            commit_id: &review.commit_id,
            body: &review.body,
            event: "COMMENT",
            comments: &review.comments,
        };
        self.send(JsonMethod::Post, &url, Some(&body)).await
    }

    /// Every item of a paginated list, following `next` links on the API.
    pub(super) async fn list_all<T>(&self, segments: Vec<String>) -> Result<Vec<T>, GitHubError>
    where
        T: serde::de::DeserializeOwned + Send + 'static,
    {
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let mut url = self.app.api_url(&segments);
        url.query_pairs_mut().append_pair("per_page", PER_PAGE);
        let first_path = url.path().to_owned();
        let mut items = Vec::new();
        for _ in 0..MAX_PAGES {
            let page: octocrab::Page<T> = self.send(JsonMethod::Get, &url, None::<&()>).await?;
            items.extend(page.items);
            match page.next {
                None => return Ok(items),
                Some(next) => url = self.next_page(&first_path, &next)?,
            }
        }
        let reason = format!("the list has more than {MAX_PAGES} pages");
        Err(protocol(&http::Method::GET, &first_path, &reason))
    }

    /// A `next` link, accepted only on the API's origin and base path.
    fn next_page(&self, path: &str, next: &http::Uri) -> Result<Url, GitHubError> {
        Url::parse(&next.to_string())
            .ok()
            .filter(|url| self.app.same_api(url))
            .ok_or_else(|| {
                let reason = "the next page link is not on the API's origin";
                protocol(&http::Method::GET, path, reason)
            })
    }
}

fn pulls_segments(repo: &RepoPath, number: u64, what: &str) -> Vec<String> {
    [
        "repos",
        &repo.owner,
        &repo.name,
        "pulls",
        &number.to_string(),
        what,
    ]
    .map(str::to_owned)
    .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_line_comment_has_no_start() {
        let one = ReviewComment::on_new_lines("a.toml", Some(4), 4, "b".into());
        let json = serde_json::to_value(&one).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"path": "a.toml", "line": 4, "side": "RIGHT", "body": "b"})
        );
        let range = ReviewComment::on_new_lines("a.toml", Some(2), 4, "b".into());
        let json = serde_json::to_value(&range).unwrap_or_default();
        assert_eq!(json["start_line"], 2);
        assert_eq!(json["start_side"], "RIGHT");
    }
}
