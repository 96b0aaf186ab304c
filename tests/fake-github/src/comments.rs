//! Issue and pull request comments and their reactions, answered as GitHub does:
//!
//! - `POST /repos/{owner}/{repo}/issues/{number}/comments`: 201 with the comment; 422
//!   `Validation Failed` for a body that is missing, not a string, empty or over 65,536
//!   characters;
//! - `GET /repos/{owner}/{repo}/issues/{number}/comments`: the comments of that issue,
//!   oldest first, paginated (`per_page`, default 30, at most 100, and `page`) with a `Link`
//!   header when there are more; the App's own and those a test seeded
//!   ([`FakeGitHub::add_issue_comment`](crate::FakeGitHub::add_issue_comment));
//! - `POST /repos/{owner}/{repo}/issues/comments/{id}/reactions`: 201 with the reaction
//!   the first time, 200 with the same reaction when its user already left that content on
//!   the comment; 422 `Validation Failed` for content outside GitHub's set
//!   ([`REACTION_CONTENTS`]); 400 `Problems parsing JSON` for a body that is not JSON.
//!   The reacting user is the token's: the App's bot for an installation token,
//!   `github-actions[bot]` for a workflow's. Any comment id of a known repository is
//!   accepted (the fake does not hold the comments a webhook names).
//!
//! Each answers 404 for an unknown repository, or one in another installation than the
//! token's, and 401 for a bad token. Comments and reactions are kept for the tests to read.

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use crate::{
    Shared, State, bad_credentials, bearer, github_error, json_response, repo_refusal, valid_token,
};

const DOCS: &str = "https://docs.github.com/rest/issues/comments#create-an-issue-comment";
const LIST_DOCS: &str = "https://docs.github.com/rest/issues/comments#list-issue-comments";
const REACTION_DOCS: &str =
    "https://docs.github.com/rest/reactions/reactions#create-reaction-for-an-issue-comment";
/// GitHub's limit on a comment body, in characters.
const MAX_BODY_CHARS: usize = 65_536;
/// The reaction contents GitHub accepts.
pub const REACTION_CONTENTS: &[&str] = &[
    "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes",
];
/// The login of the App's bot user, the author of what the App creates.
pub const APP_BOT_LOGIN: &str = "astrolift[bot]";
/// The login GitHub Actions acts as with a workflow's `GITHUB_TOKEN`.
const ACTIONS_BOT_LOGIN: &str = "github-actions[bot]";

/// One comment the fake holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeComment {
    pub id: u64,
    pub owner: String,
    pub repo: String,
    pub number: u64,
    pub body: String,
    /// Who wrote it: the App's bot for a comment the App created.
    pub user_login: String,
    /// `User` or `Bot`.
    pub user_type: String,
}

/// One reaction the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeReaction {
    pub id: u64,
    pub owner: String,
    pub repo: String,
    pub comment_id: u64,
    /// One of [`REACTION_CONTENTS`].
    pub content: String,
    pub user_login: String,
}

impl FakeComment {
    fn to_json(&self) -> Value {
        let (owner, repo, number, id) = (&self.owner, &self.repo, self.number, self.id);
        json!({
            "id": id,
            "node_id": format!("IC_{id}"),
            "url": format!("https://api.github.com/repos/{owner}/{repo}/issues/comments/{id}"),
            "html_url": format!("https://github.com/{owner}/{repo}/issues/{number}#issuecomment-{id}"),
            "issue_url": format!("https://api.github.com/repos/{owner}/{repo}/issues/{number}"),
            "body": self.body,
            "user": user_json(&self.user_login, &self.user_type),
            "created_at": "2026-12-01T10:00:00Z",
            "updated_at": "2026-12-01T10:00:00Z",
            "author_association": if self.user_type == "Bot" { "NONE" } else { "MEMBER" },
        })
    }
}

fn user_json(login: &str, kind: &str) -> Value {
    let id = 9_000 + login.bytes().map(u64::from).sum::<u64>();
    json!({ "login": login, "id": id, "type": kind, "site_admin": false })
}

/// Adds a comment and returns its id (ids are shared by every comment of the fake).
pub(crate) fn push_comment(state: &mut State, mut comment: FakeComment) -> u64 {
    comment.id = 5_000 + state.comments.len() as u64;
    let id = comment.id;
    state.comments.push(comment);
    id
}

/// The login the token of `headers` acts as.
fn token_user(state: &State, headers: &HeaderMap) -> &'static str {
    let installation = bearer(headers)
        .and_then(|token| state.tokens.get(token))
        .and_then(|issued| issued.installation_id);
    match installation {
        Some(_) => APP_BOT_LOGIN,
        None => ACTIONS_BOT_LOGIN,
    }
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
    let user_login = token_user(&state, &headers).to_owned();
    let comment = FakeComment {
        id: 0,
        owner,
        repo,
        number,
        body: text,
        user_login,
        user_type: "Bot".to_owned(),
    };
    let id = push_comment(&mut state, comment);
    let answer = state
        .comments
        .iter()
        .find(|c| c.id == id)
        .map(FakeComment::to_json)
        .unwrap_or_default();
    json_response(StatusCode::CREATED, answer, HeaderMap::new())
}

pub(crate) async fn list(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let state = state.lock();
    if let Some(refused) = repo_refusal(&state, &headers, &owner, &repo, LIST_DOCS) {
        return refused;
    }
    if !state.repos.contains_key(&(owner.clone(), repo.clone())) {
        return github_error(StatusCode::NOT_FOUND, "Not Found", LIST_DOCS);
    }
    let items: Vec<Value> = state
        .comments
        .iter()
        .filter(|c| c.owner == owner && c.repo == repo && c.number == number)
        .map(FakeComment::to_json)
        .collect();
    let path = format!("/repos/{owner}/{repo}/issues/{number}/comments");
    crate::pulls::paginated(&items, query.as_deref(), &state.link_base_url, &path)
}

pub(crate) async fn react(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, comment_id)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = state.lock();
    if let Some(refused) = repo_refusal(&state, &headers, &owner, &repo, REACTION_DOCS) {
        return refused;
    }
    if !state.repos.contains_key(&(owner.clone(), repo.clone())) {
        return github_error(StatusCode::NOT_FOUND, "Not Found", REACTION_DOCS);
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return github_error(
            StatusCode::BAD_REQUEST,
            "Problems parsing JSON",
            REACTION_DOCS,
        );
    };
    let content = request.get("content").and_then(Value::as_str);
    let Some(content) = content.filter(|c| REACTION_CONTENTS.contains(c)) else {
        return invalid_content();
    };
    let user_login = token_user(&state, &headers);
    let known = state.reactions.iter().find(|r| {
        r.owner == owner
            && r.repo == repo
            && r.comment_id == comment_id
            && r.content == content
            && r.user_login == user_login
    });
    if let Some(known) = known {
        return json_response(StatusCode::OK, reaction_json(known), HeaderMap::new());
    }
    let reaction = FakeReaction {
        id: 8_000 + state.reactions.len() as u64,
        owner,
        repo,
        comment_id,
        content: content.to_owned(),
        user_login: user_login.to_owned(),
    };
    let answer = reaction_json(&reaction);
    state.reactions.push(reaction);
    json_response(StatusCode::CREATED, answer, HeaderMap::new())
}

fn reaction_json(reaction: &FakeReaction) -> Value {
    json!({
        "id": reaction.id,
        "node_id": format!("REA_{}", reaction.id),
        "user": user_json(&reaction.user_login, "Bot"),
        "content": reaction.content,
        "created_at": "2026-12-01T10:00:00Z",
    })
}

/// GitHub's 422 for a reaction whose content is not one of its set.
fn invalid_content() -> Response {
    let body = json!({
        "message": "Validation Failed",
        "errors": [{
            "resource": "Reaction",
            "code": "custom",
            "field": "content",
            "message": "content is not included in the list",
        }],
        "documentation_url": REACTION_DOCS,
        "status": "422",
    });
    json_response(StatusCode::UNPROCESSABLE_ENTITY, body, HeaderMap::new())
}
