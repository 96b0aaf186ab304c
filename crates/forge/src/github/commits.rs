//! What a skill reference resolves through (docs/reference.md §5.1, "Remote skills"): the installation of the App
//! that covers a repository (`GET /repos/{owner}/{repo}/installation`, as the App), and the
//! commit a ref names (`GET /repos/{owner}/{repo}/commits/{ref}`, as that installation,
//! reading only `sha`).
//!
//! GitHub answers 404 for a repository the App is not installed on (or the token cannot
//! see) and 422 (`No commit found for SHA: <ref>`) for a ref that names no commit; both are
//! `Ok(None)` here, so a caller can say which one it was. Every other failure is an error.

use http::StatusCode;
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
