//! Pull requests: `GET .../pulls/{n}/files`, `GET .../pulls/{n}/reviews`
//! and `POST .../pulls/{n}/reviews`.
//!
//! Lists are paginated as on GitHub: `per_page` (default 30, at most 100)
//! and `page`, with a `Link` header (`next`, `last`, `first`, `prev`); the
//! files list stops at 3,000 files. A review is checked as GitHub checks it:
//! `event` one of `APPROVE`, `REQUEST_CHANGES`, `COMMENT` (absent: a
//! pending review), a body for `COMMENT` and `REQUEST_CHANGES`, `commit_id`
//! a commit of the pull request (its head here), and each comment on a
//! line of the diff: `path` a file with a patch, `line` (and `start_line`,
//! in the same hunk) on the side named. Otherwise 422 `Unprocessable
//! Entity` with GitHub's `errors`, e.g. `["Line could not be resolved"]`.

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::{Shared, bad_credentials, github_error, json_response, valid_token};

const FILES_DOCS: &str = "https://docs.github.com/rest/pulls/pulls#list-pull-requests-files";
const REVIEWS_DOCS: &str =
    "https://docs.github.com/rest/pulls/reviews#list-reviews-for-a-pull-request";
const CREATE_DOCS: &str =
    "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request";
/// GitHub lists at most this many files of a pull request.
const MAX_LISTED_FILES: usize = 3000;

/// One file of a fake pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakePullRequestFile {
    pub filename: String,
    pub status: String,
    /// The unified diff; `None` as GitHub answers for binary files and
    /// diffs too large to show.
    pub patch: Option<String>,
}

impl FakePullRequestFile {
    /// A file the pull request adds: every line of `text` is a `+` line.
    pub fn added(filename: &str, text: &str) -> Self {
        let lines: Vec<&str> = text.lines().collect();
        let mut patch = format!("@@ -0,0 +1,{} @@", lines.len());
        for line in lines {
            patch.push_str("\n+");
            patch.push_str(line);
        }
        Self {
            filename: filename.to_owned(),
            status: "added".to_owned(),
            patch: Some(patch),
        }
    }

    /// A modified file with this `patch`.
    pub fn modified(filename: &str, patch: &str) -> Self {
        Self {
            filename: filename.to_owned(),
            status: "modified".to_owned(),
            patch: Some(patch.to_owned()),
        }
    }

    /// A file GitHub lists without a patch (binary, or too large).
    pub fn without_patch(filename: &str) -> Self {
        Self {
            filename: filename.to_owned(),
            status: "modified".to_owned(),
            patch: None,
        }
    }

    fn to_json(&self, base_url: &str, owner: &str, repo: &str, head: &str) -> Value {
        let mut file = json!({
            "sha": "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
            "filename": self.filename,
            "status": self.status,
            "additions": self.patch.as_deref().map_or(0, |p| count(p, '+')),
            "deletions": self.patch.as_deref().map_or(0, |p| count(p, '-')),
            "changes": self.patch.as_deref().map_or(0, |p| count(p, '+') + count(p, '-')),
            "blob_url": format!("https://github.com/{owner}/{repo}/blob/{head}/{}", self.filename),
            "raw_url": format!("https://github.com/{owner}/{repo}/raw/{head}/{}", self.filename),
            "contents_url": format!("{base_url}/repos/{owner}/{repo}/contents/{}?ref={head}", self.filename),
        });
        if let Some(patch) = &self.patch {
            file["patch"] = json!(patch);
        }
        file
    }
}

fn count(patch: &str, sign: char) -> usize {
    patch
        .lines()
        .filter(|l| l.starts_with(sign) && !l.starts_with("+++") && !l.starts_with("---"))
        .count()
}

/// A review as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeReview {
    pub id: u64,
    pub user_login: String,
    /// `User` or `Bot`.
    pub user_type: String,
    pub body: String,
    pub commit_id: String,
    /// `COMMENTED`, `APPROVED`, `CHANGES_REQUESTED` or `PENDING`.
    pub state: String,
    /// The comments it was created with, as sent.
    pub comments: Vec<Value>,
}

impl FakeReview {
    /// A review a person wrote (`User`), for seeding a pull request.
    pub fn by_a_person(login: &str, commit_id: &str, body: &str) -> Self {
        Self {
            id: 0,
            user_login: login.to_owned(),
            user_type: "User".to_owned(),
            body: body.to_owned(),
            commit_id: commit_id.to_owned(),
            state: "COMMENTED".to_owned(),
            comments: Vec::new(),
        }
    }

    fn to_json(&self, base_url: &str, owner: &str, repo: &str, number: u64) -> Value {
        let html = format!("https://github.com/{owner}/{repo}/pull/{number}");
        json!({
            "id": self.id,
            "node_id": format!("PRR_{}", self.id),
            "user": { "login": self.user_login, "id": 9_000 + self.id, "type": self.user_type },
            "body": self.body,
            "state": self.state,
            "html_url": format!("{html}#pullrequestreview-{}", self.id),
            "pull_request_url": format!("{base_url}/repos/{owner}/{repo}/pulls/{number}"),
            "author_association": "NONE",
            "submitted_at": "2026-12-01T10:00:00Z",
            "commit_id": self.commit_id,
            "_links": { "html": { "href": html } },
        })
    }
}

/// A pull request as the fake holds it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FakePullRequest {
    pub head_sha: String,
    pub files: Vec<FakePullRequestFile>,
    pub reviews: Vec<FakeReview>,
}

type Key = (String, String, u64);

pub(crate) async fn files(
    AxumState(state): AxumState<Shared>,
    Path(key): Path<Key>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    list(&state, key, query, &headers, Listed::Files)
}

pub(crate) async fn reviews(
    AxumState(state): AxumState<Shared>,
    Path(key): Path<Key>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    list(&state, key, query, &headers, Listed::Reviews)
}

#[derive(Clone, Copy)]
enum Listed {
    Files,
    Reviews,
}

/// One page of a pull request's files or reviews.
fn list(
    state: &Shared,
    (owner, repo, number): Key,
    query: Option<String>,
    headers: &HeaderMap,
    listed: Listed,
) -> Response {
    let state = state.lock();
    if !valid_token(&state, headers) {
        return bad_credentials();
    }
    let (what, docs) = match listed {
        Listed::Files => ("files", FILES_DOCS),
        Listed::Reviews => ("reviews", REVIEWS_DOCS),
    };
    let key: Key = (owner.clone(), repo.clone(), number);
    let Some(pull) = state.pull_requests.get(&key) else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", docs);
    };
    let base = &state.base_url;
    let items: Vec<Value> = match listed {
        Listed::Files => pull
            .files
            .iter()
            .take(MAX_LISTED_FILES)
            .map(|f| f.to_json(base, &owner, &repo, &pull.head_sha))
            .collect(),
        Listed::Reviews => pull
            .reviews
            .iter()
            .map(|r| r.to_json(base, &owner, &repo, number))
            .collect(),
    };
    let path = format!("/repos/{owner}/{repo}/pulls/{number}/{what}");
    paginated(&items, query.as_deref(), &state.link_base_url, &path)
}

pub(crate) async fn create_review(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = state.lock();
    if !valid_token(&state, &headers) {
        return bad_credentials();
    }
    let base_url = state.base_url.clone();
    let key: Key = (owner.clone(), repo.clone(), number);
    let next_id = 7_000
        + state
            .pull_requests
            .values()
            .map(|p| p.reviews.len())
            .sum::<usize>();
    let Some(pull) = state.pull_requests.get_mut(&key) else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", CREATE_DOCS);
    };
    let review = match checked_review(pull, &body) {
        Ok(review) => review,
        Err(Refusal::Unprocessable(errors)) => return unprocessable(&errors),
        Err(Refusal::BadJson) => {
            return github_error(
                StatusCode::BAD_REQUEST,
                "Problems parsing JSON",
                CREATE_DOCS,
            );
        }
    };
    let review = FakeReview {
        id: next_id as u64,
        ..review
    };
    let answer = review.to_json(&base_url, &owner, &repo, number);
    pull.reviews.push(review);
    json_response(StatusCode::OK, answer, HeaderMap::new())
}

enum Refusal {
    BadJson,
    Unprocessable(Vec<String>),
}

fn unprocessable(errors: &[String]) -> Response {
    let body = json!({
        "message": "Unprocessable Entity",
        "errors": errors,
        "documentation_url": CREATE_DOCS,
        "status": "422",
    });
    json_response(StatusCode::UNPROCESSABLE_ENTITY, body, HeaderMap::new())
}

/// The review a body asks for (id unset), or why GitHub would refuse it.
fn checked_review(pull: &FakePullRequest, bytes: &[u8]) -> Result<FakeReview, Refusal> {
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(bytes) else {
        return Err(Refusal::BadJson);
    };
    let refuse = |why: &str| Err(Refusal::Unprocessable(vec![why.to_owned()]));
    let event = body.get("event").and_then(Value::as_str);
    let state = match event {
        None => "PENDING",
        Some("COMMENT") => "COMMENTED",
        Some("APPROVE") => "APPROVED",
        Some("REQUEST_CHANGES") => "CHANGES_REQUESTED",
        Some(_) => return refuse("Event is not one of APPROVE, REQUEST_CHANGES, COMMENT"),
    };
    let text = body.get("body").and_then(Value::as_str).unwrap_or("");
    if matches!(state, "COMMENTED" | "CHANGES_REQUESTED") && text.trim().is_empty() {
        return refuse("Body is required for a COMMENT or REQUEST_CHANGES review");
    }
    let commit_id = body
        .get("commit_id")
        .and_then(Value::as_str)
        .unwrap_or(&pull.head_sha);
    if commit_id != pull.head_sha {
        return refuse("Commit is not part of the pull request");
    }
    let comments = match body.get("comments") {
        None => Vec::new(),
        Some(Value::Array(comments)) => comments.clone(),
        Some(_) => return refuse("Comments is not an array"),
    };
    let errors: Vec<String> = comments
        .iter()
        .filter_map(|c| comment_error(pull, c).err())
        .collect();
    if !errors.is_empty() {
        return Err(Refusal::Unprocessable(errors));
    }
    Ok(FakeReview {
        id: 0,
        user_login: "astrolift[bot]".to_owned(),
        user_type: "Bot".to_owned(),
        body: text.to_owned(),
        commit_id: commit_id.to_owned(),
        state: state.to_owned(),
        comments,
    })
}

/// A review comment is on lines of the diff, or GitHub cannot resolve it.
fn comment_error(pull: &FakePullRequest, comment: &Value) -> Result<(), String> {
    let Value::Object(comment) = comment else {
        return Err("Comment is not an object".to_owned());
    };
    let text = comment.get("body").and_then(Value::as_str).unwrap_or("");
    if text.is_empty() {
        return Err("Body can't be blank".to_owned());
    }
    if text.chars().count() > 65_536 {
        return Err("Body is too long (maximum is 65536 characters)".to_owned());
    }
    let path = comment.get("path").and_then(Value::as_str).unwrap_or("");
    let patch = pull
        .files
        .iter()
        .find(|f| f.filename == path)
        .and_then(|f| f.patch.as_deref())
        .ok_or_else(|| "Path could not be resolved".to_owned())?;
    let side = side_of(comment, "side")?;
    let lines = diff_lines(patch, side);
    let hunk_of = |key: &str| {
        let line = comment.get(key).and_then(Value::as_u64)?;
        lines
            .iter()
            .find(|(n, _)| *n == line)
            .map(|(_, hunk)| *hunk)
    };
    let line_hunk = hunk_of("line").ok_or_else(|| "Line could not be resolved".to_owned())?;
    if comment.contains_key("start_line") {
        let start_side = side_of(comment, "start_side")?;
        let start = comment.get("start_line").and_then(Value::as_u64);
        let line = comment.get("line").and_then(Value::as_u64);
        let start_hunk = hunk_of("start_line").filter(|_| start_side == side);
        if start_hunk != Some(line_hunk) || start >= line {
            return Err("Start line could not be resolved".to_owned());
        }
    }
    Ok(())
}

fn side_of<'c>(comment: &'c Map<String, Value>, key: &str) -> Result<&'c str, String> {
    match comment.get(key).and_then(Value::as_str).unwrap_or("RIGHT") {
        side @ ("LEFT" | "RIGHT") => Ok(side),
        _ => Err(format!("{key} is not one of LEFT, RIGHT")),
    }
}

/// The lines a comment can be on, with the hunk each is in: `RIGHT` is
/// the new file's added and context lines, `LEFT` the old file's removed
/// and context lines.
fn diff_lines(patch: &str, side: &str) -> Vec<(u64, usize)> {
    let mut lines = Vec::new();
    let (mut old, mut new, mut hunk) = (0u64, 0u64, 0usize);
    for line in patch.lines() {
        if let Some(header) = line.strip_prefix("@@ ") {
            let start = |sign: char| {
                header
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix(sign))
                    .and_then(|w| w.split(',').next())
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            (old, new, hunk) = (start('-'), start('+'), hunk + 1);
            continue;
        }
        match line.chars().next() {
            Some('+') => {
                if side == "RIGHT" {
                    lines.push((new, hunk));
                }
                new += 1;
            }
            Some('-') => {
                if side == "LEFT" {
                    lines.push((old, hunk));
                }
                old += 1;
            }
            Some('\\') => {}
            _ => {
                lines.push((if side == "RIGHT" { new } else { old }, hunk));
                (old, new) = (old + 1, new + 1);
            }
        }
    }
    lines
}

/// One page of `items` with GitHub's `Link` header.
fn paginated(items: &[Value], query: Option<&str>, base_url: &str, path: &str) -> Response {
    let param = |name: &str| {
        query?
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == name)
            .and_then(|(_, value)| value.parse::<usize>().ok())
    };
    let per_page = param("per_page").unwrap_or(30).clamp(1, 100);
    let page = param("page").unwrap_or(1).max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let start = (page - 1).saturating_mul(per_page).min(items.len());
    let end = (start + per_page).min(items.len());
    let link = |n: usize, rel: &str| {
        format!("<{base_url}{path}?per_page={per_page}&page={n}>; rel=\"{rel}\"")
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(link(page - 1, "prev"));
    }
    if page < last {
        links.push(link(page + 1, "next"));
        links.push(link(last, "last"));
    }
    if page > 1 {
        links.push(link(1, "first"));
    }
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&links.join(", "))
        && !links.is_empty()
    {
        headers.insert("link", value);
    }
    json_response(
        StatusCode::OK,
        Value::Array(items[start..end].to_vec()),
        headers,
    )
}
