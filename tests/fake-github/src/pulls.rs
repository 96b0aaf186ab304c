//! Pull requests: `GET .../pulls/{n}`, `GET .../pulls/{n}/files`,
//! `GET .../pulls/{n}/reviews` and `POST .../pulls/{n}/reviews`.
//!
//! A pull request is answered with GitHub's fields: `number`, `state` (`open`, `closed`),
//! `merged` (and `merged_at`, `closed_at`), `head` (`sha`, `ref`, `repo`: the base
//! repository itself, a fork with its own id, or null for a deleted fork), `base` (`ref`,
//! `sha`, `repo`), `user`, `html_url`, and an `ETag` header; an `If-None-Match` that names
//! the current `ETag` is `304 Not Modified`. An unknown one is 404 `Not Found`.
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
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::{Shared, State, bad_credentials, github_error, json_response, valid_token};

const PULL_DOCS: &str = "https://docs.github.com/rest/pulls/pulls#get-a-pull-request";
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

/// A pull request as the fake holds it. [`Default`] is an open pull request of branch
/// `feature` into `main`, from the base repository itself, opened by `mona`.
#[derive(Debug, Clone, PartialEq)]
pub struct FakePullRequest {
    pub head_sha: String,
    pub files: Vec<FakePullRequestFile>,
    pub reviews: Vec<FakeReview>,
    /// `open` or `closed`.
    pub state: String,
    /// Whether it was merged (closed too, then).
    pub merged: bool,
    pub head_ref: String,
    pub base_ref: String,
    pub head_repo: FakeHeadRepo,
    /// Who opened it.
    pub user_login: String,
}

impl Default for FakePullRequest {
    fn default() -> Self {
        Self {
            head_sha: String::new(),
            files: Vec::new(),
            reviews: Vec::new(),
            state: "open".to_owned(),
            merged: false,
            head_ref: "feature".to_owned(),
            base_ref: "main".to_owned(),
            head_repo: FakeHeadRepo::Base,
            user_login: "mona".to_owned(),
        }
    }
}

impl FakePullRequest {
    /// An open pull request of `head_ref` at `head_sha` into `base_ref`, from the base
    /// repository itself.
    pub fn open(head_ref: &str, head_sha: &str, base_ref: &str) -> Self {
        Self {
            head_sha: head_sha.to_owned(),
            head_ref: head_ref.to_owned(),
            base_ref: base_ref.to_owned(),
            ..Self::default()
        }
    }

    /// The same pull request from a fork: `full_name` (`someone/agents`) with its `id`.
    pub fn from_fork(self, id: u64, full_name: &str) -> Self {
        Self {
            head_repo: FakeHeadRepo::Fork {
                id,
                full_name: full_name.to_owned(),
            },
            ..self
        }
    }
}

/// Where a pull request's head branch lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeHeadRepo {
    /// The base repository itself (same id).
    Base,
    /// A fork: another repository, with another id.
    Fork { id: u64, full_name: String },
    /// A fork that was deleted: GitHub answers `head.repo` null.
    Deleted,
}

pub(crate) async fn pull_request(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, number)): Path<Key>,
    headers: HeaderMap,
) -> Response {
    let state = state.lock();
    if let Some(refused) = crate::repo_refusal(&state, &headers, &owner, &repo, PULL_DOCS) {
        return refused;
    }
    let key: Key = (owner.clone(), repo.clone(), number);
    let Some(pull) = state.pull_requests.get(&key) else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", PULL_DOCS);
    };
    let body = pull_json(&state, &owner, &repo, number, pull);
    let etag = format!("W/\"{:016x}\"", fnv1a(body.to_string().as_bytes()));
    let mut answer_headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        answer_headers.insert("etag", value);
    }
    let matches = headers
        .get("if-none-match")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag));
    if matches {
        return (StatusCode::NOT_MODIFIED, answer_headers).into_response();
    }
    json_response(StatusCode::OK, body, answer_headers)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A pull request as GitHub answers `GET .../pulls/{n}` (the fields a client reads, and
/// the ones beside them it must skip).
fn pull_json(state: &State, owner: &str, repo: &str, number: u64, pull: &FakePullRequest) -> Value {
    let base_id = state
        .repo_ids
        .get(&(owner.to_owned(), repo.to_owned()))
        .copied()
        .unwrap_or_else(|| crate::repos::derived_id(owner, repo));
    let repository = |id: u64, full_name: &str, fork: bool| {
        let (login, name) = full_name.split_once('/').unwrap_or((full_name, ""));
        json!({
            "id": id,
            "node_id": format!("R_{id}"),
            "name": name,
            "full_name": full_name,
            "owner": { "login": login, "type": "User" },
            "private": false,
            "fork": fork,
            "html_url": format!("https://github.com/{full_name}"),
            "default_branch": "main",
        })
    };
    let base_full_name = format!("{owner}/{repo}");
    let (head_repo, head_owner) = match &pull.head_repo {
        FakeHeadRepo::Base => (
            repository(base_id, &base_full_name, false),
            owner.to_owned(),
        ),
        FakeHeadRepo::Fork { id, full_name } => (
            repository(*id, full_name, true),
            full_name.split('/').next().unwrap_or_default().to_owned(),
        ),
        FakeHeadRepo::Deleted => (Value::Null, "ghost".to_owned()),
    };
    let base_sha = state
        .repos
        .get(&(owner.to_owned(), repo.to_owned()))
        .and_then(|refs| refs.iter().rev().find(|r| r.git_ref == pull.base_ref))
        .map_or_else(|| "0".repeat(40), |r| r.sha.clone());
    let closed = pull.state == "closed";
    let at = |yes: bool| {
        if yes {
            json!("2026-12-02T10:00:00Z")
        } else {
            Value::Null
        }
    };
    let user = json!({ "login": pull.user_login, "id": 9_100, "type": "User" });
    json!({
        "url": format!("{}/repos/{owner}/{repo}/pulls/{number}", state.base_url),
        "id": 1_000_000 + number,
        "node_id": format!("PR_{number}"),
        "html_url": format!("https://github.com/{owner}/{repo}/pull/{number}"),
        "diff_url": format!("https://github.com/{owner}/{repo}/pull/{number}.diff"),
        "number": number,
        "state": pull.state,
        "locked": false,
        "title": format!("Pull request {number}"),
        "user": user,
        "body": null,
        "created_at": "2026-12-01T10:00:00Z",
        "updated_at": "2026-12-01T10:00:00Z",
        "closed_at": at(closed),
        "merged_at": at(pull.merged),
        "merge_commit_sha": null,
        "draft": false,
        "head": {
            "label": format!("{head_owner}:{}", pull.head_ref),
            "ref": pull.head_ref,
            "sha": pull.head_sha,
            "user": { "login": head_owner, "type": "User" },
            "repo": head_repo,
        },
        "base": {
            "label": format!("{owner}:{}", pull.base_ref),
            "ref": pull.base_ref,
            "sha": base_sha,
            "user": { "login": owner, "type": "User" },
            "repo": repository(base_id, &base_full_name, false),
        },
        "author_association": "MEMBER",
        "merged": pull.merged,
        "mergeable": null,
        "comments": 0,
        "review_comments": 0,
        "commits": 1,
        "changed_files": pull.files.len(),
    })
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
pub(crate) fn paginated(
    items: &[Value],
    query: Option<&str>,
    base_url: &str,
    path: &str,
) -> Response {
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
