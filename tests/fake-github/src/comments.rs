//! `POST /repos/{owner}/{repo}/issues/{number}/comments`, answered as GitHub
//! does: 201 with the comment; 422 for a body that is missing, not a string,
//! empty or over 65,536 characters; 404 for an unknown repository; 401 for a
//! bad token. Comments are kept for the tests to read.

use axum::body::Bytes;
use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use crate::{Shared, bad_credentials, github_error, json_response, valid_token};

const DOCS: &str = "https://docs.github.com/rest/issues/comments#create-an-issue-comment";
/// GitHub's limit on a comment body, in characters.
const MAX_BODY_CHARS: usize = 65_536;

/// One comment the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeComment {
    pub id: u64,
    pub owner: String,
    pub repo: String,
    pub number: u64,
    pub body: String,
}

pub(crate) async fn create(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = state.lock();
    if !valid_token(&state, &headers) {
        return bad_credentials();
    }
    if !state.repos.contains_key(&(owner.clone(), repo.clone())) {
        return github_error(StatusCode::NOT_FOUND, "Not Found", DOCS);
    }
    let text = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("body").and_then(Value::as_str).map(str::to_owned));
    let Some(text) = text.filter(|t| !t.is_empty() && t.chars().count() <= MAX_BODY_CHARS) else {
        return github_error(StatusCode::UNPROCESSABLE_ENTITY, "Validation Failed", DOCS);
    };
    let id = 5_000 + state.comments.len() as u64;
    let answer = json!({
        "id": id,
        "body": text,
        "html_url": format!("https://github.com/{owner}/{repo}/issues/{number}#issuecomment-{id}"),
    });
    state.comments.push(FakeComment {
        id,
        owner,
        repo,
        number,
        body: text,
    });
    json_response(StatusCode::CREATED, answer, HeaderMap::new())
}
