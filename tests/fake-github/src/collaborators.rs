//! `GET /repos/{owner}/{repo}/collaborators/{username}/permission`, answered
//! as GitHub does: `permission` in the legacy set (`maintain` shows as
//! `write`, `triage` as `read`), `role_name` the role itself, the user; 404
//! `Not Found` for a user who is not a collaborator.

use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;

use crate::{Shared, bad_credentials, github_error, json_response, valid_token};

const DOCS: &str = "https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user";

/// GitHub's legacy `permission` of a role.
fn legacy_permission(role: &str) -> &str {
    match role {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "triage" | "read" => "read",
        _ => "none",
    }
}

pub(crate) async fn permission(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, username)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let state = state.lock();
    if !valid_token(&state, &headers) {
        return bad_credentials();
    }
    let key = (owner, repo, username.to_lowercase());
    let Some(role) = state.collaborators.get(&key) else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", DOCS);
    };
    let body = json!({
        "permission": legacy_permission(role),
        "role_name": role,
        "user": { "login": username, "type": "User", "role_name": role },
    });
    json_response(StatusCode::OK, body, HeaderMap::new())
}
