//! `GET /repos/{owner}/{repo}`: a repository, answered like GitHub with the fields we read
//! (`id`) and a few beside them. A repository the caller cannot see (unknown, or not covered
//! by the token's installation) is `404 Not Found`. Its id is the one a test set with
//! [`FakeGitHub::set_repo_id`](crate::FakeGitHub::set_repo_id), or else one derived from its
//! name (the same on every run), as a push payload of the test would carry it.

use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;

use crate::{Shared, github_error, json_response, repo_refusal};

const REPOSITORY_DOCS: &str = "https://docs.github.com/rest/repos/repos#get-a-repository";

pub(crate) async fn repository(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let state = state.lock();
    if let Some(refused) = repo_refusal(&state, &headers, &owner, &repo, REPOSITORY_DOCS) {
        return refused;
    }
    let key = (owner.clone(), repo.clone());
    if !state.repos.contains_key(&key) {
        return github_error(StatusCode::NOT_FOUND, "Not Found", REPOSITORY_DOCS);
    }
    let id = state
        .repo_ids
        .get(&key)
        .copied()
        .unwrap_or_else(|| derived_id(&owner, &repo));
    let body = json!({
        "id": id,
        "name": repo,
        "full_name": format!("{owner}/{repo}"),
        "owner": { "login": owner },
        "private": state.private_repos.contains(&key),
        "default_branch": "main",
        "url": format!("{}/repos/{owner}/{repo}", state.base_url),
    });
    json_response(StatusCode::OK, body, HeaderMap::new())
}

/// An id from the repository's name: FNV-1a, folded to GitHub's positive 32-bit range.
pub fn derived_id(owner: &str, repo: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in format!("{owner}/{repo}").bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash % 2_000_000_000 + 1
}
