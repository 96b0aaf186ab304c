//! Pull requests: `GET .../pulls/{n}`, `GET .../pulls/{n}/files`,
//! `GET .../pulls/{n}/reviews` and `POST .../pulls/{n}/reviews`; and the list, creation and
//! update of pull requests: `GET` and `POST .../pulls`, `PATCH .../pulls/{n}`.
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
//!
//! A pull request is created from a branch of the repository itself (its head follows the
//! branch when the Git Data API moves it) and refused as GitHub refuses one: `422 Validation
//! Failed` with `errors` for a missing title, head or base (`missing_field`), an unknown head
//! or base branch (`invalid`), no commits between them, or an open pull request of that head
//! into that base (`A pull request already exists for owner:branch.`). Its writes answer 403
//! `Resource not accessible by integration` where the installation has not granted
//! `contents: write`. The list is newest first; its `head` filter is `owner:branch` (a value
//! without the owner is ignored, as GitHub ignores it).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, RawQuery, State as AxumState};
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
    /// `None`: answered as `Pull request <n>`.
    pub title: Option<String>,
    /// `None`: answered as `null`.
    pub body: Option<String>,
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
            title: None,
            body: None,
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
    let user_type = if pull.user_login.ends_with("[bot]") {
        "Bot"
    } else {
        "User"
    };
    let user = json!({ "login": pull.user_login, "id": 9_100, "type": user_type });
    let title = pull
        .title
        .clone()
        .unwrap_or_else(|| format!("Pull request {number}"));
    json!({
        "url": format!("{}/repos/{owner}/{repo}/pulls/{number}", state.base_url),
        "id": 1_000_000 + number,
        "node_id": format!("PR_{number}"),
        "html_url": format!("https://github.com/{owner}/{repo}/pull/{number}"),
        "diff_url": format!("https://github.com/{owner}/{repo}/pull/{number}.diff"),
        "number": number,
        "state": pull.state,
        "locked": false,
        "title": title,
        "user": user,
        "body": pull.body,
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
    // The other parameters (a list's filters) stay in every link, as GitHub keeps them.
    let kept: String = query
        .into_iter()
        .flat_map(|query| query.split('&'))
        .filter(|pair| !matches!(pair.split('=').next(), Some("" | "per_page" | "page")))
        .map(|pair| format!("{pair}&"))
        .collect();
    let per_page = param("per_page").unwrap_or(30).clamp(1, 100);
    let page = param("page").unwrap_or(1).max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let start = (page - 1).saturating_mul(per_page).min(items.len());
    let end = (start + per_page).min(items.len());
    let link = |n: usize, rel: &str| {
        format!("<{base_url}{path}?{kept}per_page={per_page}&page={n}>; rel=\"{rel}\"")
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

const LIST_PULLS_DOCS: &str = "https://docs.github.com/rest/pulls/pulls#list-pull-requests";
const CREATE_PULL_DOCS: &str = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request";
const UPDATE_PULL_DOCS: &str = "https://docs.github.com/rest/pulls/pulls#update-a-pull-request";

/// Open pull requests of branch `branch` of `owner/repo` (from the repository itself) move
/// their head to `sha`, as a push to the branch moves them.
pub(crate) fn follow_branch(state: &mut State, owner: &str, repo: &str, branch: &str, sha: &str) {
    for ((o, r, _), pull) in state.pull_requests.iter_mut() {
        let follows = o == owner
            && r == repo
            && pull.state == "open"
            && pull.head_ref == branch
            && pull.head_repo == FakeHeadRepo::Base;
        if follows {
            sha.clone_into(&mut pull.head_sha);
        }
    }
}

/// The login of the head of `pull`: the base repository's owner, or the fork's.
fn head_owner<'p>(pull: &'p FakePullRequest, owner: &'p str) -> &'p str {
    match &pull.head_repo {
        FakeHeadRepo::Base => owner,
        FakeHeadRepo::Fork { full_name, .. } => full_name.split('/').next().unwrap_or_default(),
        FakeHeadRepo::Deleted => "ghost",
    }
}

/// `GET /repos/{owner}/{repo}/pulls`: newest first, filtered by `state` (`open` unless
/// said, `closed`, `all`), `head` (`owner:branch`; GitHub ignores a value without the
/// `owner:` part) and `base`, paginated.
pub(crate) async fn list_pulls(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    Query(params): Query<HashMap<String, String>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let state = state.lock();
    if let Some(refused) = crate::repo_refusal(&state, &headers, &owner, &repo, LIST_PULLS_DOCS) {
        return refused;
    }
    let wanted = params.get("state").map_or("open", String::as_str);
    if !matches!(wanted, "open" | "closed" | "all") {
        let errors = json!([{ "resource": "PullRequest", "field": "state", "code": "invalid" }]);
        return crate::validation_failed(errors, LIST_PULLS_DOCS);
    }
    let head = params.get("head").and_then(|head| head.split_once(':'));
    let base = params.get("base");
    let mut numbers: Vec<u64> = state
        .pull_requests
        .iter()
        .filter(|((o, r, _), pull)| {
            *o == owner
                && *r == repo
                && (wanted == "all" || pull.state == wanted)
                && head.is_none_or(|(login, branch)| {
                    head_owner(pull, &owner) == login && pull.head_ref == branch
                })
                && base.is_none_or(|base| pull.base_ref == *base)
        })
        .map(|((_, _, number), _)| *number)
        .collect();
    numbers.sort_unstable_by(|a, b| b.cmp(a));
    let items: Vec<Value> = numbers
        .iter()
        .filter_map(|number| {
            let pull = state
                .pull_requests
                .get(&(owner.clone(), repo.clone(), *number))?;
            Some(pull_json(&state, &owner, &repo, *number, pull))
        })
        .collect();
    let path = format!("/repos/{owner}/{repo}/pulls");
    paginated(&items, query.as_deref(), &state.link_base_url, &path)
}

/// A request body that is a JSON object (else GitHub answers `400 Problems parsing JSON`).
fn json_object(body: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(body)) => Some(body),
        _ => None,
    }
}

/// GitHub's `custom` validation error for a pull request.
fn custom(message: &str, docs: &str) -> Response {
    let errors = json!([{ "resource": "PullRequest", "code": "custom", "message": message }]);
    crate::validation_failed(errors, docs)
}

/// An open pull request of `head` into `base` of `owner/repo` from the repository itself.
fn open_pull_of(state: &State, owner: &str, repo: &str, head: &str, base: &str) -> Option<u64> {
    state
        .pull_requests
        .iter()
        .find(|((o, r, _), pull)| {
            o == owner
                && r == repo
                && pull.state == "open"
                && pull.head_ref == head
                && pull.base_ref == base
                && pull.head_repo == FakeHeadRepo::Base
        })
        .map(|((_, _, number), _)| *number)
}

/// `POST /repos/{owner}/{repo}/pulls` (`title`, `head`, `base`, `body`): a pull request of a
/// branch of the repository itself (`branch` or `owner:branch`) into another, opened by the
/// token's bot. Refused like GitHub: a missing field, an unknown head or base (`invalid`), no
/// commits between them, or an open pull request of that head into that base already
/// (`A pull request already exists for owner:branch.`).
pub(crate) async fn create_pull(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = state.lock();
    if let Some(refused) = crate::write_refusal(&state, &headers, &owner, &repo, CREATE_PULL_DOCS) {
        return refused;
    }
    if !state.repos.contains_key(&(owner.clone(), repo.clone())) {
        return github_error(StatusCode::NOT_FOUND, "Not Found", CREATE_PULL_DOCS);
    }
    let Some(body) = json_object(&body) else {
        let message = "Problems parsing JSON";
        return github_error(StatusCode::BAD_REQUEST, message, CREATE_PULL_DOCS);
    };
    let text = |field: &str| body.get(field).and_then(Value::as_str);
    let field_error = |field: &str, code: &str| {
        let errors = json!([{ "resource": "PullRequest", "field": field, "code": code }]);
        crate::validation_failed(errors, CREATE_PULL_DOCS)
    };
    let Some(title) = text("title").filter(|title| !title.trim().is_empty()) else {
        return field_error("title", "missing_field");
    };
    let (Some(head), Some(base)) = (text("head"), text("base")) else {
        let missing = if text("head").is_none() {
            "head"
        } else {
            "base"
        };
        return field_error(missing, "missing_field");
    };
    let head_branch = match head.split_once(':') {
        None => head,
        Some((login, branch)) if login == owner => branch,
        Some(_) => return field_error("head", "invalid"),
    };
    let Some(head_sha) = crate::git_data::branch_head(&state, &owner, &repo, head_branch) else {
        return field_error("head", "invalid");
    };
    let Some(base_sha) = crate::git_data::branch_head(&state, &owner, &repo, base) else {
        return field_error("base", "invalid");
    };
    if head_sha == base_sha {
        let message = format!("No commits between {base} and {head_branch}");
        return custom(&message, CREATE_PULL_DOCS);
    }
    if open_pull_of(&state, &owner, &repo, head_branch, base).is_some() {
        let message = format!("A pull request already exists for {owner}:{head_branch}.");
        return custom(&message, CREATE_PULL_DOCS);
    }
    let by_app = crate::bearer(&headers)
        .and_then(|token| state.tokens.get(token))
        .is_some_and(|issued| issued.installation_id.is_some());
    let user_login = if by_app {
        crate::APP_BOT_LOGIN
    } else {
        "github-actions[bot]"
    };
    let number = 1 + state
        .pull_requests
        .keys()
        .filter(|(o, r, _)| *o == owner && *r == repo)
        .map(|(_, _, number)| *number)
        .max()
        .unwrap_or(0);
    let pull = FakePullRequest {
        title: Some(title.to_owned()),
        body: text("body").map(str::to_owned),
        user_login: user_login.to_owned(),
        ..FakePullRequest::open(head_branch, &head_sha, base)
    };
    let answer = pull_json(&state, &owner, &repo, number, &pull);
    state
        .pull_requests
        .insert((owner.clone(), repo.clone(), number), pull);
    let location = format!("{}/repos/{owner}/{repo}/pulls/{number}", state.base_url);
    let mut answer_headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&location) {
        answer_headers.insert("location", value);
    }
    json_response(StatusCode::CREATED, answer, answer_headers)
}

/// `PATCH /repos/{owner}/{repo}/pulls/{number}` (`title`, `body`, `state`): the fields given
/// change; `state` is `open` or `closed` (a merged pull request stays closed, and one is not
/// reopened while another of its head and base is open).
pub(crate) async fn update_pull(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, number)): Path<Key>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = state.lock();
    if let Some(refused) = crate::write_refusal(&state, &headers, &owner, &repo, UPDATE_PULL_DOCS) {
        return refused;
    }
    let key: Key = (owner.clone(), repo.clone(), number);
    let Some(pull) = state.pull_requests.get(&key).cloned() else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", UPDATE_PULL_DOCS);
    };
    let Some(body) = json_object(&body) else {
        let message = "Problems parsing JSON";
        return github_error(StatusCode::BAD_REQUEST, message, UPDATE_PULL_DOCS);
    };
    let mut updated = pull.clone();
    if let Some(title) = body.get("title").and_then(Value::as_str) {
        updated.title = Some(title.to_owned());
    }
    match body.get("body") {
        Some(Value::String(text)) => updated.body = Some(text.clone()),
        Some(Value::Null) => updated.body = None,
        _ => {}
    }
    match body.get("state").and_then(Value::as_str) {
        None => {}
        Some("closed") => updated.state = "closed".to_owned(),
        Some("open") if pull.state == "open" => {}
        Some("open") if pull.merged => {
            return custom(
                "state cannot be changed. The pull request cannot be reopened.",
                UPDATE_PULL_DOCS,
            );
        }
        Some("open") => {
            let (head, base) = (&pull.head_ref, &pull.base_ref);
            let other = open_pull_of(&state, &owner, &repo, head, base);
            if other.is_some() && pull.head_repo == FakeHeadRepo::Base {
                let message = format!("A pull request already exists for {owner}:{head}.");
                return custom(&message, UPDATE_PULL_DOCS);
            }
            updated.state = "open".to_owned();
        }
        Some(_) => {
            let errors =
                json!([{ "resource": "PullRequest", "field": "state", "code": "invalid" }]);
            return crate::validation_failed(errors, UPDATE_PULL_DOCS);
        }
    }
    let answer = pull_json(&state, &owner, &repo, number, &updated);
    state.pull_requests.insert(key, updated);
    json_response(StatusCode::OK, answer, HeaderMap::new())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::git_data::tests::{Answer, Api, MAIN, OWNER, REPO};

    const BRANCH: &str = "astrolift/lock-update";

    /// `api` with branch [`BRANCH`] one commit ahead of `main`: its head.
    async fn with_branch(api: &Api) -> String {
        let sha = api
            .commit(Some(MAIN), &[("astrolift.lock", "1")], &[MAIN])
            .await;
        let create = json!({ "ref": format!("refs/heads/{BRANCH}"), "sha": sha });
        assert_eq!(api.post("git/refs", create).await.status, 201);
        sha
    }

    fn open_body() -> serde_json::Value {
        json!({ "title": "Update skills", "head": BRANCH, "base": "main", "body": "dates" })
    }

    #[tokio::test]
    async fn a_pull_request_is_created_listed_and_updated() {
        let api = Api::start().await;
        let head = with_branch(&api).await;
        let created = api.post("pulls", open_body()).await;
        assert_eq!(created.status, 201, "{created:?}");
        let number = created.body["number"].as_u64().expect("a number");
        assert_eq!(created.body["state"], "open");
        assert_eq!(created.body["head"]["ref"], BRANCH);
        assert_eq!(created.body["head"]["sha"], head.as_str());
        assert_eq!(created.body["base"]["ref"], "main");
        assert_eq!(created.body["body"], "dates");
        assert_eq!(created.body["user"]["type"], "Bot");
        assert_eq!(
            created.body["html_url"],
            format!("https://github.com/{OWNER}/{REPO}/pull/{number}")
        );
        assert!(created.location.is_some());

        let again = api.post("pulls", open_body()).await;
        assert_eq!(again.status, 422);
        assert_eq!(again.message(), "Validation Failed");
        assert_eq!(
            again.body["errors"][0]["message"],
            format!("A pull request already exists for {OWNER}:{BRANCH}.")
        );

        let list = |query: &'static str| {
            let api = &api;
            async move {
                let path = format!("/repos/{OWNER}/{REPO}/pulls?{query}");
                let answer = api.send("GET", &path, None).await;
                assert_eq!(answer.status, 200, "{answer:?}");
                let numbers: Vec<u64> = answer
                    .body
                    .as_array()
                    .expect("a list")
                    .iter()
                    .filter_map(|p| p["number"].as_u64())
                    .collect();
                numbers
            }
        };
        assert_eq!(list("head=octo%3Aastrolift%2Flock-update").await, [number]);
        assert_eq!(
            list("head=octo:astrolift/lock-update&state=open").await,
            [number]
        );
        assert!(list("head=someone:astrolift/lock-update").await.is_empty());
        // Without `owner:` GitHub ignores the filter.
        assert_eq!(list("head=nothing-like-it").await, [number]);
        assert!(list("state=closed").await.is_empty());

        let path = format!("/repos/{OWNER}/{REPO}/pulls/{number}");
        let updated = api
            .send("PATCH", &path, Some(json!({ "body": "new dates" })))
            .await;
        assert_eq!(updated.status, 200, "{updated:?}");
        assert_eq!(updated.body["body"], "new dates");
        assert_eq!(updated.body["title"], "Update skills");
        let pulls = api.fake.pull_requests(OWNER, REPO);
        assert_eq!(pulls.len(), 1);
        assert_eq!(pulls[0].1.body.as_deref(), Some("new dates"));

        // The pull request follows its branch.
        let next = api
            .commit(Some(&head), &[("astrolift.lock", "2")], &[&head])
            .await;
        let update = format!("/repos/{OWNER}/{REPO}/git/refs/heads/{BRANCH}");
        let moved = api
            .send("PATCH", &update, Some(json!({ "sha": next })))
            .await;
        assert_eq!(moved.status, 200);
        let read = api.send("GET", &path, None).await;
        assert_eq!(read.body["head"]["sha"], next.as_str());

        let closed = api
            .send("PATCH", &path, Some(json!({ "state": "closed" })))
            .await;
        assert_eq!(closed.body["state"], "closed");
        assert!(list("").await.is_empty());
        assert_eq!(list("state=closed").await, [number]);
        assert_eq!(list("state=all").await, [number]);
        let reopened = api.post("pulls", open_body()).await;
        assert_eq!(reopened.status, 201);
        assert_eq!(reopened.body["number"], number + 1);
        let conflict = api
            .send("PATCH", &path, Some(json!({ "state": "open" })))
            .await;
        assert_eq!(conflict.status, 422);
        let bad_state = api
            .send("PATCH", &path, Some(json!({ "state": "merged" })))
            .await;
        assert_eq!(bad_state.status, 422);
        let absent = format!("/repos/{OWNER}/{REPO}/pulls/999");
        let absent = api
            .send("PATCH", &absent, Some(json!({ "body": "x" })))
            .await;
        assert_eq!(absent.status, 404);
    }

    #[tokio::test]
    async fn a_pull_request_is_refused_like_github() {
        let api = Api::start().await;
        with_branch(&api).await;
        let field = |answer: &Answer| {
            let error = &answer.body["errors"][0];
            (answer.status, error["field"].clone(), error["code"].clone())
        };
        let no_title = api
            .post("pulls", json!({ "head": BRANCH, "base": "main" }))
            .await;
        assert_eq!(
            field(&no_title),
            (422, json!("title"), json!("missing_field"))
        );
        let no_head = api
            .post(
                "pulls",
                json!({ "title": "t", "head": "nowhere", "base": "main" }),
            )
            .await;
        assert_eq!(field(&no_head), (422, json!("head"), json!("invalid")));
        let fork = api
            .post(
                "pulls",
                json!({ "title": "t", "head": format!("someone:{BRANCH}"), "base": "main" }),
            )
            .await;
        assert_eq!(field(&fork), (422, json!("head"), json!("invalid")));
        let no_base = api
            .post(
                "pulls",
                json!({ "title": "t", "head": BRANCH, "base": "nowhere" }),
            )
            .await;
        assert_eq!(field(&no_base), (422, json!("base"), json!("invalid")));
        let same = api
            .post(
                "pulls",
                json!({ "title": "t", "head": "main", "base": "main" }),
            )
            .await;
        assert_eq!(same.status, 422);
        assert_eq!(
            same.body["errors"][0]["message"],
            "No commits between main and main"
        );
        let with_owner =
            json!({ "title": "t", "head": format!("{OWNER}:{BRANCH}"), "base": "main" });
        assert_eq!(api.post("pulls", with_owner).await.status, 201);
        let bad_state = format!("/repos/{OWNER}/{REPO}/pulls?state=merged");
        assert_eq!(api.send("GET", &bad_state, None).await.status, 422);
    }
}
