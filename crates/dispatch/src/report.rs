//! Reporting a GitHub-sourced dispatch's terminal result back to the issue or
//! pull request it came from (a trigger's `report = "comment" | "check"`,
//! docs/reference.md §10).
//!
//! At dispatch, [`report_target`] takes from the verified event's envelope where the
//! report goes (installation, issue or pull request number, the pull
//! request's head) and the dispatch record keeps it. When the first terminal
//! callback of its task is recorded, [`report_back`] hands it to the
//! process's [`ResultReporter`]: the App's GitHub client where the App key
//! is (`astrolift serve`), or on the stack the trigger function's relay to the
//! sync worker, which calls [`report_recorded`] with the App's client. Reporting is best effort: the terminal status is recorded
//! whatever GitHub answers, and a failure is logged (`report failed`), never
//! turned into the callback's answer, so a runtime is not asked to repeat a
//! report that was recorded.

use astrolift_manifest::triggers::ReportKind;
use astrolift_store::BoxFuture;
use astrolift_store::StoreError;
use astrolift_store::state::{Dispatch, DispatchTask, ReportTarget, StateStore, TaskStatus};
use serde_json::Value;

use crate::dispatch::message_of;

/// The most characters of a result's JSON that a comment or check run shows
/// (GitHub refuses bodies over 65,536 characters).
pub const MAX_SHOWN_RESULT: usize = 60_000;

/// Posts terminal results to GitHub.
pub trait ResultReporter: Send + Sync + std::fmt::Debug {
    /// Reports `result` to `target`; `Err` says why it could not.
    fn report<'a>(
        &'a self,
        target: &'a ReportTarget,
        result: &'a TerminalResult,
    ) -> BoxFuture<'a, Result<(), String>>;
}

/// What a report says.
#[derive(Debug, Clone, PartialEq)]
pub struct TerminalResult {
    pub agent: String,
    pub dispatch_id: String,
    pub task_id: String,
    pub status: TaskStatus,
    pub result: Option<Value>,
}

impl TerminalResult {
    /// The Markdown of a comment or check run summary.
    pub fn markdown(&self) -> String {
        let mut text = format!(
            "Astrolift: agent `{}` **{}** (dispatch `{}`, task `{}`).",
            self.agent,
            self.status.as_str(),
            self.dispatch_id,
            self.task_id
        );
        if let Some(result) = &self.result {
            let json = serde_json::to_string_pretty(result).unwrap_or_default();
            let shown: String = json.chars().take(MAX_SHOWN_RESULT).collect();
            let cut = if shown.len() < json.len() {
                "\n(cut)"
            } else {
                ""
            };
            text.push_str(&format!("\n\n```json\n{shown}\n```{cut}"));
        }
        text
    }

    /// The check run conclusion of the status.
    pub fn conclusion(&self) -> &'static str {
        match self.status {
            TaskStatus::Succeeded => "success",
            TaskStatus::Cancelled => "cancelled",
            _ => "failure",
        }
    }
}

/// What a GitHub event names of where its report would go (read from its
/// envelope by the trigger service: `astrolift_forge::webhook::Envelope`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportSubject<'a> {
    /// The App installation that delivered the event.
    pub installation_id: Option<u64>,
    /// The pull request's number when the event has one, else the issue's.
    pub number: Option<u64>,
    /// The pull request's head commit.
    pub head_sha: Option<&'a str>,
}

/// Where a `kind` report of a verified GitHub event of `repository` goes;
/// `None` when the event names no installation, or no issue or pull request
/// (a `check` also needs the pull request's head).
pub fn report_target(
    kind: ReportKind,
    repository: &str,
    subject: ReportSubject<'_>,
) -> Option<ReportTarget> {
    let installation_id = subject.installation_id?;
    let number = subject.number?;
    if kind == ReportKind::Check && subject.head_sha.is_none() {
        return None;
    }
    Some(ReportTarget {
        kind: kind.as_str().to_owned(),
        repository: repository.to_owned(),
        installation_id,
        number,
        head_sha: subject.head_sha.map(str::to_owned),
    })
}

/// Reports the terminal task of `dispatch` back, if its trigger asked for it.
pub async fn report_back(
    reporter: Option<&dyn ResultReporter>,
    dispatch: &Dispatch,
    status: TaskStatus,
    result: Option<Value>,
) {
    let Some(target) = &dispatch.report else {
        return;
    };
    let Some(reporter) = reporter else {
        tracing::warn!(
            dispatch_id = %dispatch.id,
            kind = %target.kind,
            "report failed: this process has no GitHub App credentials to report with"
        );
        return;
    };
    let agent =
        message_of(dispatch).map_or_else(|_| dispatch.manifest_path.clone(), |m| m.agent.name);
    let terminal = TerminalResult {
        agent,
        dispatch_id: dispatch.id.clone(),
        task_id: dispatch.task_id.clone(),
        status,
        result,
    };
    match reporter.report(target, &terminal).await {
        Ok(()) => tracing::info!(dispatch_id = %dispatch.id, kind = %target.kind, "reported"),
        Err(why) => {
            tracing::warn!(dispatch_id = %dispatch.id, kind = %target.kind, why, "report failed")
        }
    }
}

/// Reports the terminal `task` back through `reporter`, if its dispatch asks for it: what the
/// first terminal callback does, and what the sync worker does with a relayed report job.
pub async fn report_terminal_task(
    state: &dyn StateStore,
    reporter: Option<&dyn ResultReporter>,
    task: &DispatchTask,
) {
    let Some(dispatch) = dispatch_of(state, &task.idempotency_key).await else {
        return;
    };
    let result = task
        .result
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok());
    report_back(reporter, &dispatch, task.status, result).await;
}

/// Why [`report_recorded`] reported nothing.
#[derive(Debug, thiserror::Error)]
pub enum NotReported {
    #[error("no task has the id {0}")]
    NoSuchTask(String),
    #[error("task {0} has no terminal status yet")]
    NotTerminal(String),
    #[error("the task could not be read: {0}")]
    Store(#[from] StoreError),
}

/// Reports the recorded terminal result of the task `task_id` (a relayed report job: the
/// callback recorded the status where the App's key is not, and the worker that holds it
/// reports). Everything is read from the state store, so the job names only the task.
pub async fn report_recorded(
    state: &dyn StateStore,
    reporter: &dyn ResultReporter,
    task_id: &str,
) -> Result<(), NotReported> {
    let task = state
        .tasks()
        .get_task(task_id)
        .await?
        .ok_or_else(|| NotReported::NoSuchTask(task_id.to_owned()))?;
    if !task.status.is_terminal() {
        return Err(NotReported::NotTerminal(task_id.to_owned()));
    }
    report_terminal_task(state, Some(reporter), &task).await;
    Ok(())
}

/// The dispatch of a task, for [`report_back`]; `None` when it cannot be read
/// (logged: reporting is best effort).
pub async fn dispatch_of(state: &dyn StateStore, idempotency_key: &str) -> Option<Dispatch> {
    match state.get_dispatch(idempotency_key).await {
        Ok(dispatch) => dispatch,
        Err(error) => {
            tracing::warn!(%error, "report failed: the dispatch could not be read");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(
        installation_id: Option<u64>,
        number: Option<u64>,
        head_sha: Option<&str>,
    ) -> ReportSubject<'_> {
        ReportSubject {
            installation_id,
            number,
            head_sha,
        }
    }

    #[test]
    fn an_issue_event_reports_to_its_issue_a_pull_request_to_its_head() {
        let issue = subject(Some(31), Some(7), None);
        let comment = report_target(ReportKind::Comment, "octo/agents", issue).expect("a target");
        assert_eq!((comment.number, comment.installation_id), (7, 31));
        assert_eq!(comment.head_sha, None);
        assert_eq!(
            report_target(ReportKind::Check, "octo/agents", issue),
            None,
            "no head to check"
        );
        let pull = subject(Some(31), Some(9), Some("abc"));
        let check = report_target(ReportKind::Check, "octo/agents", pull).expect("a target");
        assert_eq!((check.kind.as_str(), check.number), ("check", 9));
        assert_eq!(check.head_sha.as_deref(), Some("abc"));
    }

    #[test]
    fn an_event_without_installation_or_subject_reports_nowhere() {
        let no_installation = subject(None, Some(7), None);
        assert_eq!(
            report_target(ReportKind::Comment, "o/r", no_installation),
            None
        );
        let no_subject = subject(Some(31), None, None);
        assert_eq!(report_target(ReportKind::Comment, "o/r", no_subject), None);
    }

    #[test]
    fn a_long_result_is_cut_in_the_markdown() {
        let result = TerminalResult {
            agent: "triage".into(),
            dispatch_id: "d".into(),
            task_id: "t".into(),
            status: TaskStatus::Failed,
            result: Some(Value::String("x".repeat(MAX_SHOWN_RESULT * 2))),
        };
        let text = result.markdown();
        assert!(text.chars().count() < MAX_SHOWN_RESULT + 200);
        assert!(text.ends_with("(cut)"));
        assert_eq!(result.conclusion(), "failure");
    }
}
