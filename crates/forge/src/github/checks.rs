//! Check runs: created `in_progress`, completed with output and annotations.
//!
//! Sent through octocrab's JSON calls with our own request and answer types:
//! octocrab's `CheckRun` model has no `status` and requires fields (`node_id`,
//! `output`, `pull_requests`) we never read, and its update builder sends the
//! same JSON as [`CheckRunOutput`] does.
//!
//! GitHub's limits, enforced here so a request is never refused for size:
//! at most 50 annotations per request (GitHub appends annotations across
//! updates, so the rest go in extra PATCHes before the completing one);
//! `summary` and `text` under 65,535 (we count bytes, which is stricter than
//! GitHub's characters) with a note saying how much was cut; titles of at
//! most 255 characters; annotation messages and raw details of at most 64 KiB.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::client::{GitHubError, Installation, JsonMethod, RepoPath};

/// The check run's name (docs/reference.md §9).
pub const CHECK_RUN_NAME: &str = "Astrolift";
/// Annotations per request.
pub const ANNOTATIONS_PER_REQUEST: usize = 50;
/// `output.summary` and `output.text`, bytes.
pub const MAX_OUTPUT_TEXT: usize = 65_535;
/// `output.title` and annotation titles, characters.
pub const MAX_TITLE_CHARS: usize = 255;
/// Annotation `message` and `raw_details`, bytes.
pub const MAX_ANNOTATION_TEXT: usize = 64 * 1024;

/// The identifier of the "Accept drift" requested action.
pub const ACCEPT_DRIFT: &str = "accept-drift";

/// A button on a check run (GitHub's `actions`): a click is a `check_run`
/// delivery with action `requested_action` and this `identifier`. GitHub
/// allows at most 3, `label` ≤ 20 characters, `description` ≤ 40,
/// `identifier` ≤ 20.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRunAction {
    pub label: String,
    pub description: String,
    pub identifier: String,
}

impl CheckRunAction {
    /// "Accept drift" ([`ACCEPT_DRIFT`]), on a run that concludes `action_required`
    /// for critical drift.
    pub fn accept_drift() -> Self {
        Self {
            label: "Accept drift".to_owned(),
            description: "Accept this commit's critical drift".to_owned(),
            identifier: ACCEPT_DRIFT.to_owned(),
        }
    }
}

/// How a completed run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Conclusion {
    Success,
    Failure,
    Neutral,
    Cancelled,
    Skipped,
    TimedOut,
    ActionRequired,
}

/// An annotation's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

/// One line annotation. Columns are 1-based and inclusive, and GitHub
/// accepts them only when `start_line == end_line`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotation {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_column: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_column: Option<u32>,
    pub annotation_level: AnnotationLevel,
    pub title: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_details: Option<String>,
}

impl Annotation {
    /// The annotation within GitHub's field limits.
    fn within_limits(mut self) -> Self {
        self.title = trim_chars(&self.title, MAX_TITLE_CHARS);
        self.message = trim_with_note(&self.message, MAX_ANNOTATION_TEXT);
        self.raw_details = self
            .raw_details
            .map(|details| trim_with_note(&details, MAX_ANNOTATION_TEXT));
        if self.start_line != self.end_line {
            self.start_column = None;
            self.end_column = None;
        }
        self
    }
}

/// The run's output: title, Markdown summary and text, and annotations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRunOutput {
    pub title: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default)]
    pub annotations: Vec<Annotation>,
    /// The run's requested actions (buttons). Not part of GitHub's `output`:
    /// [`Installation::complete`] sends them beside it, always (an empty list
    /// removes the buttons of an earlier completion).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<CheckRunAction>,
}

impl CheckRunOutput {
    /// The output within GitHub's limits: trimmed title, summary and text,
    /// and each annotation's fields.
    pub fn within_limits(self) -> Self {
        Self {
            title: trim_chars(&self.title, MAX_TITLE_CHARS),
            summary: trim_with_note(&self.summary, MAX_OUTPUT_TEXT),
            text: self.text.map(|text| trim_with_note(&text, MAX_OUTPUT_TEXT)),
            annotations: self
                .annotations
                .into_iter()
                .map(Annotation::within_limits)
                .collect(),
            actions: self.actions,
        }
    }

    /// The `output` object of one request carrying `annotations`.
    fn body(&self, annotations: &[Annotation], with_text: bool) -> serde_json::Value {
        let mut output = json!({
            "title": self.title,
            "summary": self.summary,
            "annotations": annotations,
        });
        if let (true, Some(text)) = (with_text, &self.text) {
            output["text"] = json!(text);
        }
        output
    }
}

/// A check run as GitHub returns it (the fields we read).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    pub status: String,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
}

impl Installation {
    /// Creates the check run `name` on `head_sha`, `in_progress`; returns its id.
    pub async fn create_in_progress(
        &self,
        repo: &RepoPath,
        head_sha: &str,
        name: &str,
    ) -> Result<u64, GitHubError> {
        let segments = ["repos", &repo.owner, &repo.name, "check-runs"];
        let body = json!({ "name": name, "head_sha": head_sha, "status": "in_progress" });
        let run: CheckRun = self
            .send_json(JsonMethod::Post, &segments, Some(&body))
            .await?;
        Ok(run.id)
    }

    /// Creates the check run `name` on `head_sha` already `completed` with `conclusion` and
    /// a summary (no annotations): one request.
    pub async fn create_completed(
        &self,
        repo: &RepoPath,
        head_sha: &str,
        name: &str,
        conclusion: &str,
        (title, summary): (&str, &str),
    ) -> Result<u64, GitHubError> {
        let segments = ["repos", &repo.owner, &repo.name, "check-runs"];
        let body = json!({
            "name": name, "head_sha": head_sha, "status": "completed", "conclusion": conclusion,
            "output": {
                "title": trim_chars(title, MAX_TITLE_CHARS),
                "summary": trim_chars(summary, MAX_OUTPUT_TEXT),
            },
        });
        let run: CheckRun = self
            .send_json(JsonMethod::Post, &segments, Some(&body))
            .await?;
        Ok(run.id)
    }

    /// Completes run `id`: every annotation batch but the last in its own
    /// PATCH, then the last with the conclusion. Makes ⌈annotations/50⌉
    /// requests (at least one).
    pub async fn complete(
        &self,
        repo: &RepoPath,
        id: u64,
        conclusion: Conclusion,
        output: CheckRunOutput,
    ) -> Result<CheckRun, GitHubError> {
        let output = output.within_limits();
        let mut batches: Vec<&[Annotation]> =
            output.annotations.chunks(ANNOTATIONS_PER_REQUEST).collect();
        let last = batches.pop().unwrap_or(&[]);
        for batch in batches {
            self.update(repo, id, json!({ "output": output.body(batch, false) }))
                .await?;
        }
        let body = json!({
            "status": "completed",
            "conclusion": conclusion,
            "output": output.body(last, true),
            "actions": output.actions,
        });
        self.update(repo, id, body).await
    }

    /// Shows `summary` under `title` on run `id`, which stays `in_progress`: one request.
    pub async fn show_progress(
        &self,
        repo: &RepoPath,
        id: u64,
        (title, summary): (&str, &str),
    ) -> Result<CheckRun, GitHubError> {
        let body = json!({
            "status": "in_progress",
            "output": {
                "title": trim_chars(title, MAX_TITLE_CHARS),
                "summary": trim_chars(summary, MAX_OUTPUT_TEXT),
            },
        });
        self.update(repo, id, body).await
    }

    /// Completes run `id` as `failure` with a plain explanation: what the
    /// pipeline does when it cannot finish, so no run stays `in_progress`.
    pub async fn fail_run(
        &self,
        repo: &RepoPath,
        id: u64,
        explanation: &str,
    ) -> Result<CheckRun, GitHubError> {
        let output = CheckRunOutput {
            title: "Astrolift could not check this commit".to_owned(),
            summary: explanation.to_owned(),
            text: None,
            annotations: Vec::new(),
            actions: Vec::new(),
        };
        self.complete(repo, id, Conclusion::Failure, output).await
    }

    async fn update(
        &self,
        repo: &RepoPath,
        id: u64,
        body: serde_json::Value,
    ) -> Result<CheckRun, GitHubError> {
        let id = id.to_string();
        let segments = ["repos", &repo.owner, &repo.name, "check-runs", &id];
        self.send_json(JsonMethod::Patch, &segments, Some(&body))
            .await
    }
}

/// At most `max` characters.
pub fn trim_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((index, _)) => text[..index].to_owned(),
        None => text.to_owned(),
    }
}

/// At most `max` bytes in all, cut on a UTF-8 boundary, ending with a note
/// saying how many bytes were cut when any were.
pub fn trim_with_note(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    // The note's length depends on the count it states; a few more digits
    // than the text's length can have is a safe reserve.
    let reserve = note(text.len(), max).len();
    let mut keep = max.saturating_sub(reserve);
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{}", &text[..keep], note(text.len() - keep, max))
}

fn note(cut: usize, max: usize) -> String {
    format!("\n\n… {cut} bytes cut (GitHub limits this field to {max} bytes).")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_cuts_on_a_char_boundary_and_says_how_much() {
        let text = "é".repeat(40_000);
        let trimmed = trim_with_note(&text, MAX_OUTPUT_TEXT);
        assert!(trimmed.len() <= MAX_OUTPUT_TEXT);
        let kept = trimmed.split("\n\n…").next().map_or(0, str::len);
        let expected = format!("… {} bytes cut", text.len() - kept);
        assert!(
            trimmed.ends_with("bytes)."),
            "{}",
            &trimmed[trimmed.len() - 80..]
        );
        assert!(trimmed.contains(&expected));
        assert_eq!(trim_with_note("short", MAX_OUTPUT_TEXT), "short");
        assert_eq!(
            trim_chars(&"ü".repeat(300), MAX_TITLE_CHARS)
                .chars()
                .count(),
            255
        );
    }
}
