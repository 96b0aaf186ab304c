//! What a skill reference resolves through (docs/reference.md §5.1, "Remote skills"): the installation of the App
//! that covers a repository (`GET /repos/{owner}/{repo}/installation`, as the App), and the
//! commit a ref names (`GET /repos/{owner}/{repo}/commits/{ref}`, as that installation,
//! reading only `sha`).
//!
//! A registered ref's head is asked conditionally ([`Installation::ref_head`]): the same
//! commits route with `Accept: application/vnd.github.sha` and `If-None-Match` with the
//! `ETag` of the last answer, so a ref that has not moved is GitHub's `304 Not Modified`,
//! which does not count against the installation's rate limit. Each answer's
//! `X-RateLimit-Remaining` is handed back to the caller (docs/reference.md §4,
//! "astrolift reconcile").
//!
//! GitHub answers 404 for a repository the App is not installed on (or the token cannot
//! see) and 422 (`No commit found for SHA: <ref>`) for a ref that names no commit; both are
//! `Ok(None)` here, so a caller can say which one it was. Every other failure is an error.

use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body_util::BodyExt as _;
use serde::Deserialize;

use super::client::{GitHubApp, GitHubError, Installation, JsonMethod, RepoPath};

/// The fields of GitHub's installation we read.
#[derive(Debug, Deserialize)]
struct RepositoryInstallation {
    id: u64,
}

/// The fields of GitHub's commit we read.
#[derive(Debug, Deserialize)]
struct Commit {
    sha: String,
}

impl GitHubApp {
    /// The id of the installation of this App that covers `repo`; `None` when the App is
    /// not installed on it (GitHub's 404). A found one is kept for
    /// [`REPOSITORY_INSTALLATION_TTL`](super::app::REPOSITORY_INSTALLATION_TTL): one request
    /// per repository per ten minutes, whoever asks (a skill fetch, a dependent's re-sync).
    pub async fn repository_installation(
        &self,
        repo: &RepoPath,
    ) -> Result<Option<u64>, GitHubError> {
        let full_name = format!("{}/{}", repo.owner, repo.name);
        let (kept, now) = self.repository_installations();
        if let Some(id) = kept.get(&full_name, now) {
            return Ok(Some(id));
        }
        let found = self.ask_repository_installation(repo).await?;
        if let Some(id) = found {
            kept.put(&full_name, id, now);
        }
        Ok(found)
    }

    async fn ask_repository_installation(
        &self,
        repo: &RepoPath,
    ) -> Result<Option<u64>, GitHubError> {
        let jwt = self.app_jwt()?;
        let segments = ["repos", &repo.owner, &repo.name, "installation"];
        let answer = self
            .send_json::<RepositoryInstallation, ()>(&jwt, JsonMethod::Get, &segments, None)
            .await;
        not_found_is_none(answer, StatusCode::NOT_FOUND).map(|found| found.map(|i| i.id))
    }
}

impl Installation {
    /// The sha of the commit `git_ref` (a branch, tag or sha) names in `repo`; `None` when it
    /// names none (GitHub's 422). A repository this installation cannot read is GitHub's
    /// 404, an error.
    pub async fn commit_sha(
        &self,
        repo: &RepoPath,
        git_ref: &str,
    ) -> Result<Option<String>, GitHubError> {
        let mut segments = vec!["repos", repo.owner.as_str(), repo.name.as_str(), "commits"];
        // `feature/x` stays two path segments: GitHub reads the rest of the path as the ref.
        segments.extend(git_ref.split('/').filter(|s| !s.is_empty()));
        let answer = self
            .send_json::<Commit, ()>(JsonMethod::Get, &segments, None)
            .await;
        let Some(commit) = not_found_is_none(answer, StatusCode::UNPROCESSABLE_ENTITY)? else {
            return Ok(None);
        };
        if commit.sha.len() != 40 || !commit.sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(GitHubError::Protocol {
                method: http::Method::GET,
                path: format!("/repos/{repo}/commits/{git_ref}"),
                reason: "`sha` is not 40 hex digits".to_owned(),
            });
        }
        Ok(Some(commit.sha.to_ascii_lowercase()))
    }
}

/// The bare-sha media type of the commits route: the answer is the 40 hex digits only.
const SHA_MEDIA_TYPE: &str = "application/vnd.github.sha";
/// A bare-sha answer is read up to this many bytes (it is 40).
const MAX_SHA_BODY: usize = 1024;
/// A kept `ETag` is sent back only up to this length (GitHub's are under 100 bytes).
pub const MAX_ETAG_LEN: usize = 256;

/// What GitHub said of a ref's head, asked with the `ETag` of its last answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadAnswer {
    /// `304 Not Modified`: the head is the commit the `ETag` was given for.
    NotModified,
    /// The head now, with the `ETag` to send next time (when GitHub gave one).
    Head { sha: String, etag: Option<String> },
    /// The ref names no commit (GitHub's 422): a deleted branch.
    NoSuchRef,
}

/// A conditional head request's answer and the installation's `X-RateLimit-Remaining`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefHead {
    pub answer: HeadAnswer,
    /// Requests the installation has left this hour, when GitHub said.
    pub rate_limit_remaining: Option<u64>,
}

impl Installation {
    /// The head of `git_ref` in `repo`, asked with `If-None-Match: etag` when one is kept
    /// (one request; a `304` when it has not moved). A repository this installation cannot
    /// read is GitHub's 404, an error.
    pub async fn ref_head(
        &self,
        repo: &RepoPath,
        git_ref: &str,
        etag: Option<&str>,
    ) -> Result<RefHead, GitHubError> {
        let mut segments = vec!["repos", repo.owner.as_str(), repo.name.as_str(), "commits"];
        segments.extend(git_ref.split('/').filter(|s| !s.is_empty()));
        let url = self.app.api_url(&segments);
        let path = url.path().to_owned();
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(SHA_MEDIA_TYPE));
        let kept = etag
            .filter(|tag| tag.len() <= MAX_ETAG_LEN)
            .and_then(|tag| HeaderValue::from_str(tag).ok());
        if let Some(tag) = kept {
            headers.insert(header::IF_NONE_MATCH, tag);
        }
        let token = self.token().await?;
        let answer = self.app.get_raw(&url, &token, headers, false).await;
        let response = match answer {
            Ok(response) => response,
            Err(error) if error.status() == Some(StatusCode::UNPROCESSABLE_ENTITY) => {
                return Ok(RefHead {
                    answer: HeadAnswer::NoSuchRef,
                    rate_limit_remaining: None,
                });
            }
            Err(error) => {
                if error.status() == Some(StatusCode::UNAUTHORIZED) {
                    self.app.forget_token(self.id).await;
                }
                return Err(error);
            }
        };
        let rate_limit_remaining = header_text(response.headers(), "x-ratelimit-remaining")
            .and_then(|value| value.trim().parse().ok());
        let bad = |reason: &str| super::client::protocol(&http::Method::GET, &path, reason);
        if response.status() == StatusCode::NOT_MODIFIED {
            return Ok(RefHead {
                answer: HeadAnswer::NotModified,
                rate_limit_remaining,
            });
        }
        if response.status() != StatusCode::OK {
            return Err(bad(&format!("unexpected status {}", response.status())));
        }
        let etag = header_text(response.headers(), "etag")
            .filter(|tag| tag.len() <= MAX_ETAG_LEN)
            .map(str::to_owned);
        let body = http_body_util::Limited::new(response.into_body(), MAX_SHA_BODY)
            .collect()
            .await
            .map_err(|_| bad("the sha answer is not a short text"))?
            .to_bytes();
        let sha = std::str::from_utf8(&body)
            .map(str::trim)
            .ok()
            .filter(|sha| sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| bad("the answer is not a sha of 40 hex digits"))?;
        Ok(RefHead {
            answer: HeadAnswer::Head {
                sha: sha.to_ascii_lowercase(),
                etag,
            },
            rate_limit_remaining,
        })
    }
}

/// A header's value as text, when it is.
fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// `Ok(None)` for the answer `absent` (GitHub's way of saying there is no such thing).
fn not_found_is_none<T>(
    answer: Result<T, GitHubError>,
    absent: StatusCode,
) -> Result<Option<T>, GitHubError> {
    match answer {
        Ok(found) => Ok(Some(found)),
        Err(error) if error.status() == Some(absent) => Ok(None),
        Err(error) => Err(error),
    }
}
