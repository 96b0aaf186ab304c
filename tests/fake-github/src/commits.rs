//! `GET /repos/{owner}/{repo}/commits/{ref}` (a ref or sha to its commit) and
//! `GET /repos/{owner}/{repo}/installation` (which installation of the App covers a
//! repository), answered like GitHub:
//! - a repository the caller cannot see (unknown, or not covered by the token's
//!   installation) is `404 Not Found`;
//! - a ref that names no commit is `422` with `No commit found for SHA: <ref>`;
//! - `Accept: application/vnd.github.sha` answers the bare sha as `text/plain`;
//! - the repository installation is asked with the App JWT; a repository the App is not
//!   installed on is `404 Not Found`.

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
    let state = state.lock();
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
    if wants_sha {
        let mut response = found.sha.into_response();
        response.headers_mut().insert(
            "content-type",
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return response;
    }
    let body = json!({
        "sha": found.sha,
        "url": format!("{}/repos/{owner}/{repo}/commits/{}", state.base_url, found.sha),
        "commit": { "message": format!("{git_ref} at {}", found.sha), "tree": { "sha": found.sha } },
        "parents": [],
        "files": [],
    });
    json_response(StatusCode::OK, body, HeaderMap::new())
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
