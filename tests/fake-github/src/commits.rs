//! `GET /repos/{owner}/{repo}/commits/{ref}` (a ref or sha to its commit) and
//! `GET /repos/{owner}/{repo}/installation` (which installation of the App covers a
//! repository), answered like GitHub:
//! - a repository the caller cannot see (unknown, or not covered by the token's
//!   installation) is `404 Not Found`;
//! - a ref that names no commit is `422` with `No commit found for SHA: <ref>`;
//! - a commit's `commit` carries its `message`, `tree`, `author` and `committer` (with their
//!   `date`s) and `parents` its parents: as made through the Git Data API, or for a commit
//!   `add_repo` serves, a fixed date and the parents the test gave it;
//! - `Accept: application/vnd.github.sha` answers the bare sha as `text/plain`;
//! - the repository installation is asked with the App JWT; a repository the App is not
//!   installed on is `404 Not Found`;
//! - a commit answer carries an `ETag` (the same for the same commit and media type), and a
//!   request whose `If-None-Match` names it is answered `304 Not Modified` without a body;
//! - every commit answer carries `X-RateLimit-Limit`, `-Remaining`, `-Used` and `-Reset` for
//!   the token's installation: a `200` uses one request of its 5,000 an hour, a `304` none
//!   (as GitHub counts), and [`FakeGitHub::set_rate_limit_remaining`](crate::FakeGitHub::set_rate_limit_remaining)
//!   sets what is left.

use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::verify_app_jwt;
use crate::{Shared, github_error, json_response, repo_refusal};

const COMMIT_DOCS: &str = "https://docs.github.com/rest/commits/commits#get-a-commit";
const INSTALLATION_DOCS: &str = "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app";
const SHA_MEDIA_TYPE: &str = "application/vnd.github.sha";

pub(crate) async fn commit(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, git_ref)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let mut state = state.lock();
    if let Some(refused) = repo_refusal(&state, &headers, &owner, &repo, COMMIT_DOCS) {
        return refused;
    }
    if !state.repos.contains_key(&(owner.clone(), repo.clone())) {
        return github_error(StatusCode::NOT_FOUND, "Not Found", COMMIT_DOCS);
    }
    let Some(found) = crate::tarball::find(&state, &owner, &repo, &git_ref) else {
        let message = format!("No commit found for SHA: {git_ref}");
        return github_error(StatusCode::UNPROCESSABLE_ENTITY, &message, COMMIT_DOCS);
    };
    let wants_sha = headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains(SHA_MEDIA_TYPE));
    let etag = etag_of(&found.sha, wants_sha);
    let not_modified = headers
        .get("if-none-match")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag));
    let limits = rate_limit_headers(&mut state, &headers, !not_modified);
    let mut answer = HeaderMap::new();
    answer.extend(limits);
    if let Ok(value) = HeaderValue::from_str(&etag) {
        answer.insert("etag", value);
    }
    if not_modified {
        return (StatusCode::NOT_MODIFIED, answer).into_response();
    }
    if wants_sha {
        answer.insert(
            "content-type",
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return (StatusCode::OK, answer, found.sha).into_response();
    }
    let (commit, parents) =
        crate::git_data::commit_fields(&state, &owner, &repo, &found.sha, &git_ref);
    let body = json!({
        "sha": found.sha,
        "url": format!("{}/repos/{owner}/{repo}/commits/{}", state.base_url, found.sha),
        "commit": commit,
        "parents": parents,
        "files": [],
    });
    json_response(StatusCode::OK, body, answer)
}

/// The `ETag` of a commit answer: a strong tag of the sha for the bare-sha media type, a weak
/// one for JSON (as GitHub marks them).
fn etag_of(sha: &str, bare_sha: bool) -> String {
    match bare_sha {
        true => format!("\"{sha}\""),
        false => format!("W/\"{sha}-json\""),
    }
}

/// The rate-limit headers of an answer to the token of `headers`, after using one request of
/// its installation's budget when `counts` (a `304` does not).
fn rate_limit_headers(state: &mut crate::State, headers: &HeaderMap, counts: bool) -> HeaderMap {
    let installation = crate::bearer(headers)
        .and_then(|token| state.tokens.get(token))
        .and_then(|issued| issued.installation_id)
        .unwrap_or_default();
    let remaining = state
        .rate_limit_remaining
        .entry(installation)
        .or_insert(crate::RATE_LIMIT_PER_HOUR);
    if counts {
        *remaining = remaining.saturating_sub(1);
    }
    let remaining = *remaining;
    let reset = crate::auth::epoch(state.now()) + 3600;
    let mut answer = HeaderMap::new();
    for (name, value) in [
        ("x-ratelimit-limit", crate::RATE_LIMIT_PER_HOUR),
        ("x-ratelimit-remaining", remaining),
        ("x-ratelimit-used", crate::RATE_LIMIT_PER_HOUR - remaining),
        ("x-ratelimit-reset", reset),
    ] {
        answer.insert(name, HeaderValue::from(value));
    }
    answer
}

pub(crate) async fn repository_installation(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let state = state.lock();
    if let Err(message) = verify_app_jwt(&headers, state.now()) {
        return github_error(StatusCode::UNAUTHORIZED, message, INSTALLATION_DOCS);
    }
    let Some(&id) = state.repo_installations.get(&(owner.clone(), repo)) else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", INSTALLATION_DOCS);
    };
    let body = json!({
        "id": id,
        "app_id": crate::TEST_APP_ID,
        "account": { "login": owner },
        "repository_selection": "selected",
        "permissions": { "checks": "write", "contents": "read", "metadata": "read" },
    });
    json_response(StatusCode::OK, body, HeaderMap::new())
}
