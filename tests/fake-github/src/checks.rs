//! `POST /repos/{owner}/{repo}/check-runs` and `PATCH .../check-runs/{id}`.
//!
//! Bodies are validated as GitHub does and refused with 422 and GitHub's
//! shape: `{"message": "Invalid request.\n\n<why>", "documentation_url"}`.
//! Annotations are appended across updates, as on GitHub.

use axum::body::Bytes;
use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::{Shared, State, bad_credentials, github_error, json_response, valid_token};

const CREATE_DOCS: &str = "https://docs.github.com/rest/checks/runs#create-a-check-run";
const UPDATE_DOCS: &str = "https://docs.github.com/rest/checks/runs#update-a-check-run";
const STATUSES: &[&str] = &[
    "queued",
    "in_progress",
    "completed",
    "waiting",
    "requested",
    "pending",
];
const CONCLUSIONS: &[&str] = &[
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
];
const LEVELS: &[&str] = &["notice", "warning", "failure"];
const MAX_ANNOTATIONS: usize = 50;
const MAX_ACTIONS: usize = 3;
const MAX_OUTPUT_TEXT: usize = 65_535;

/// A check run as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeCheckRun {
    pub id: u64,
    pub owner: String,
    pub repo: String,
    pub name: String,
    pub head_sha: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub text: Option<String>,
    /// Every annotation received, across all requests, in order.
    pub annotations: Vec<Value>,
    /// Requests that created or updated this run.
    pub requests: usize,
    /// The requested actions (buttons), as the last request that sent `actions` set them.
    pub actions: Vec<Value>,
}

impl FakeCheckRun {
    fn to_json(&self, base_url: &str) -> Value {
        json!({
            "id": self.id,
            "head_sha": self.head_sha,
            "name": self.name,
            "status": self.status,
            "conclusion": self.conclusion,
            "url": format!("{base_url}/repos/{}/{}/check-runs/{}", self.owner, self.repo, self.id),
            "html_url": format!("https://github.com/{}/{}/runs/{}", self.owner, self.repo, self.id),
            "output": {
                "title": self.title,
                "summary": self.summary,
                "text": self.text,
                "annotations_count": self.annotations.len(),
            },
        })
    }

    /// Applies the validated fields of a create or update body.
    fn apply(&mut self, body: &Map<String, Value>) {
        if let Some(status) = body.get("status").and_then(Value::as_str) {
            self.status = status.to_owned();
        }
        if let Some(conclusion) = body.get("conclusion").and_then(Value::as_str) {
            self.conclusion = Some(conclusion.to_owned());
            self.status = "completed".to_owned();
        }
        if let Some(actions) = body.get("actions").and_then(Value::as_array) {
            self.actions.clone_from(actions);
        }
        if let Some(output) = body.get("output").and_then(Value::as_object) {
            let text = |key: &str| output.get(key).and_then(Value::as_str).map(str::to_owned);
            self.title = text("title");
            self.summary = text("summary");
            self.text = text("text").or(self.text.take());
            if let Some(annotations) = output.get("annotations").and_then(Value::as_array) {
                self.annotations.extend(annotations.iter().cloned());
            }
        }
        self.requests += 1;
    }
}

pub(crate) async fn create(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = state.lock();
    let body = match authorized_body(&state, &headers, &body, true) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    if !state.repos.contains_key(&(owner.clone(), repo.clone())) {
        return github_error(StatusCode::NOT_FOUND, "Not Found", CREATE_DOCS);
    }
    let text = |key: &str| {
        body.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut run = FakeCheckRun {
        id: 1_000 + state.check_runs.len() as u64,
        owner,
        repo,
        name: text("name"),
        head_sha: text("head_sha"),
        status: "queued".to_owned(),
        conclusion: None,
        title: None,
        summary: None,
        text: None,
        annotations: Vec::new(),
        requests: 0,
        actions: Vec::new(),
    };
    run.apply(&body);
    let answer = run.to_json(&state.base_url);
    state.check_runs.push(run);
    json_response(StatusCode::CREATED, answer, HeaderMap::new())
}

pub(crate) async fn update(
    AxumState(state): AxumState<Shared>,
    Path((owner, repo, id)): Path<(String, String, u64)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = state.lock();
    let body = match authorized_body(&state, &headers, &body, false) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    let State {
        check_runs,
        base_url,
        ..
    } = &mut *state;
    let run = check_runs
        .iter_mut()
        .find(|r| r.id == id && r.owner == owner && r.repo == repo);
    let Some(run) = run else {
        return github_error(StatusCode::NOT_FOUND, "Not Found", UPDATE_DOCS);
    };
    run.apply(&body);
    let answer = run.to_json(base_url);
    json_response(StatusCode::OK, answer, HeaderMap::new())
}

/// The body of an authorized request, or the 401/422 answer.
fn authorized_body(
    state: &State,
    headers: &HeaderMap,
    body: &[u8],
    creating: bool,
) -> Result<Map<String, Value>, Box<Response>> {
    if !valid_token(state, headers) {
        return Err(Box::new(bad_credentials()));
    }
    let docs = if creating { CREATE_DOCS } else { UPDATE_DOCS };
    parse_body(body, creating).map_err(|why| Box::new(invalid(&why, docs)))
}

fn invalid(why: &str, docs: &str) -> Response {
    let message = format!("Invalid request.\n\n{why}");
    github_error(StatusCode::UNPROCESSABLE_ENTITY, &message, docs)
}

/// The body, checked as GitHub's schema for these endpoints does.
fn parse_body(bytes: &[u8], creating: bool) -> Result<Map<String, Value>, String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|_| "Problems parsing JSON".to_owned())?;
    let Value::Object(body) = value else {
        return Err("The request body must be a JSON object.".to_owned());
    };
    if creating {
        required_string(&body, "name", "")?;
        required_string(&body, "head_sha", "")?;
    }
    one_of(&body, "status", STATUSES)?;
    one_of(&body, "conclusion", CONCLUSIONS)?;
    if body.get("status").and_then(Value::as_str) == Some("completed")
        && !body.contains_key("conclusion")
    {
        return Err("No subschema in \"anyOf\" matched: \"conclusion\" is required when \"status\" is \"completed\".".to_owned());
    }
    if let Some(output) = body.get("output") {
        check_output(output)?;
    }
    if let Some(actions) = body.get("actions") {
        check_actions(actions)?;
    }
    Ok(body)
}

fn check_output(output: &Value) -> Result<(), String> {
    let Value::Object(output) = output else {
        return Err("For 'properties/output', it is not an object.".to_owned());
    };
    required_string(output, "title", "output/")?;
    required_string(output, "summary", "output/")?;
    for key in ["summary", "text"] {
        let chars = output
            .get(key)
            .and_then(Value::as_str)
            .map_or(0, |s| s.chars().count());
        if chars > MAX_OUTPUT_TEXT {
            return Err(format!(
                "For 'properties/{key}', the text is too long (maximum is {MAX_OUTPUT_TEXT} characters)."
            ));
        }
    }
    let annotations = match output.get("annotations") {
        None => return Ok(()),
        Some(Value::Array(annotations)) => annotations,
        Some(_) => return Err("For 'properties/annotations', it is not an array.".to_owned()),
    };
    if annotations.len() > MAX_ANNOTATIONS {
        return Err(format!(
            "For 'properties/annotations', {} is more than the maximum of {MAX_ANNOTATIONS} items.",
            annotations.len()
        ));
    }
    annotations.iter().try_for_each(check_annotation)
}

/// GitHub's schema of `actions`: at most 3, each with a `label` of at most 20
/// characters, a `description` of at most 40 and an `identifier` of at most 20.
fn check_actions(actions: &Value) -> Result<(), String> {
    let Value::Array(actions) = actions else {
        return Err("For 'properties/actions', it is not an array.".to_owned());
    };
    if actions.len() > MAX_ACTIONS {
        return Err(format!(
            "For 'properties/actions', {} is more than the maximum of {MAX_ACTIONS} items.",
            actions.len()
        ));
    }
    for action in actions {
        let Value::Object(action) = action else {
            return Err("For 'items', it is not an object.".to_owned());
        };
        for (key, max) in [("label", 20), ("description", 40), ("identifier", 20)] {
            required_string(action, key, "actions/")?;
            let chars = action
                .get(key)
                .and_then(Value::as_str)
                .map_or(0, |s| s.chars().count());
            if chars > max {
                return Err(format!(
                    "For 'properties/{key}', the text is too long (maximum is {max} characters)."
                ));
            }
        }
    }
    Ok(())
}

fn check_annotation(annotation: &Value) -> Result<(), String> {
    let Value::Object(annotation) = annotation else {
        return Err("For 'items', it is not an object.".to_owned());
    };
    required_string(annotation, "path", "annotations/")?;
    required_string(annotation, "message", "annotations/")?;
    one_of(annotation, "annotation_level", LEVELS)?;
    if !annotation.contains_key("annotation_level") {
        return Err("For 'properties/annotation_level', nil is not a string.".to_owned());
    }
    let line = |key: &str| annotation.get(key).and_then(Value::as_u64);
    let (Some(start), Some(end)) = (line("start_line"), line("end_line")) else {
        return Err("For 'properties/start_line', nil is not an integer.".to_owned());
    };
    if start == 0 || end < start {
        return Err("For 'properties/end_line', it must be at least start_line.".to_owned());
    }
    let has_columns =
        annotation.contains_key("start_column") || annotation.contains_key("end_column");
    if has_columns && start != end {
        return Err(
            "start_column and end_column may only be used when start_line equals end_line."
                .to_owned(),
        );
    }
    let title_chars = annotation
        .get("title")
        .and_then(Value::as_str)
        .map_or(0, |t| t.chars().count());
    let message_bytes = annotation
        .get("message")
        .and_then(Value::as_str)
        .map_or(0, str::len);
    if title_chars > 255 || message_bytes > 64 * 1024 {
        return Err("For 'properties/message', the annotation is too long.".to_owned());
    }
    Ok(())
}

fn required_string(object: &Map<String, Value>, key: &str, prefix: &str) -> Result<(), String> {
    match object.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(()),
        Some(Value::String(_)) => Err(format!(
            "For 'properties/{prefix}{key}', \"\" is too short (minimum is 1 character)."
        )),
        _ => Err(format!(
            "For 'properties/{prefix}{key}', nil is not a string."
        )),
    }
}

fn one_of(object: &Map<String, Value>, key: &str, allowed: &[&str]) -> Result<(), String> {
    match object.get(key) {
        None => Ok(()),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(()),
        Some(other) => Err(format!(
            "For 'properties/{key}', {other} is not one of {allowed:?}."
        )),
    }
}
