//! The App's reporter against the fake GitHub (docs/reference.md §10): a
//! `comment` report is one issue comment with the result, a `check` report one
//! completed check run on the pull request's head with the run's conclusion,
//! both with the token of the installation the event came through.

use astrolift_bot::report::GitHubReporter;
use astrolift_dispatch::report::{ResultReporter, TerminalResult};
use astrolift_store::state::{ReportTarget, TaskStatus};
use serde_json::json;

use crate::support::{INSTALLATION, MAIN_SHA, embedded_stores, fake_github, runner};

fn target(kind: &str, head_sha: Option<&str>) -> ReportTarget {
    ReportTarget {
        kind: kind.into(),
        repository: "octo/agents".into(),
        installation_id: INSTALLATION,
        number: 7,
        head_sha: head_sha.map(str::to_owned),
    }
}

fn result(status: TaskStatus) -> TerminalResult {
    TerminalResult {
        agent: "emr-triage".into(),
        dispatch_id: "d-1".into(),
        task_id: "t-1".into(),
        status,
        result: Some(json!({"labels": ["p1"]})),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reports_become_a_comment_or_a_completed_check_run() {
    let github = fake_github("monorepo").await;
    let (stores, _dir) = embedded_stores().await;
    let reporter = GitHubReporter::new(runner(&github, &stores).github);

    let done = result(TaskStatus::Succeeded);
    reporter
        .report(&target("comment", None), &done)
        .await
        .expect("commented");
    let comments = github.comments();
    assert_eq!(comments.len(), 1);
    assert_eq!(
        (comments[0].repo.as_str(), comments[0].number),
        ("agents", 7)
    );
    assert!(
        comments[0].body.contains("**succeeded**"),
        "{}",
        comments[0].body
    );
    assert!(comments[0].body.contains("\"p1\""), "{}", comments[0].body);

    let failed = result(TaskStatus::Failed);
    reporter
        .report(&target("check", Some(MAIN_SHA)), &failed)
        .await
        .expect("checked");
    let runs = github.check_runs();
    let run = runs.last().expect("a run");
    assert_eq!(run.name, "astrolift: emr-triage");
    assert_eq!(run.head_sha, MAIN_SHA);
    assert_eq!(run.status, "completed");
    assert_eq!(run.conclusion.as_deref(), Some("failure"));

    let elsewhere = ReportTarget {
        repository: "octo/unknown".into(),
        ..target("comment", None)
    };
    let refused = reporter.report(&elsewhere, &done).await;
    assert!(refused.is_err(), "GitHub's 404 is the reporter's error");
    assert_eq!(github.comments().len(), 1);
}
