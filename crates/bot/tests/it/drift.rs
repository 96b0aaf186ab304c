//! Workspace drift on pull requests, and "Accept drift": the registered ref's
//! workspace manifest is registered by a push; a pull request that removes a
//! required credential concludes `action_required` with the drift in the
//! summary and an "Accept drift" button; a click is honoured only for a
//! sender with write permission, which turns the run `neutral` and records an
//! audit event for that head sha; a new head needs a new acceptance.

use std::path::PathBuf;

use astrolift_bot::{AcceptDriftRequest, JobTrigger, SyncJob};
use astrolift_fake_github::{FakeCheckRun, FakeGitHub};
use astrolift_store::state::{AuditAction, WorkspaceStatus};
use astrolift_sync::Stores;
use serde_json::json;

use crate::support::{
    INSTALLATION, MAIN_SHA, aws_stores, embedded_stores, push_job, register, runner,
};

const REMOVES: &str = "cccccccccccccccccccccccccccccccccccccccc";
const NO_DRIFT: &str = "dddddddddddddddddddddddddddddddddddddddd";
const NEW_PUSH: &str = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/fixtures/drift")
        .join(name)
}

/// Main registered (workspace manifest included), and three pull-request heads.
async fn registered_with_pull_requests(stores: &Stores) -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", MAIN_SHA, fixture("registered"));
    for (sha, folder) in [
        (REMOVES, "removes-credential"),
        (NO_DRIFT, "registered"),
        (NEW_PUSH, "removes-credential"),
    ] {
        github.add_repo("octo", "agents", "feature", sha, fixture(folder));
    }
    github.add_collaborator("octo", "agents", "reader", "read");
    github.add_collaborator("octo", "agents", "mona", "maintain");
    register(stores).await;
    let pushed = runner(&github, stores)
        .run(&push_job("d-main"))
        .await
        .expect("push");
    assert!(pushed.applied);
    github
}

fn pull_request_job(delivery: &str, head: &str) -> SyncJob {
    SyncJob {
        trigger: JobTrigger::PullRequest,
        head_sha: head.into(),
        branch: Some("feature".into()),
        pull_request: Some(7),
        ..push_job(delivery)
    }
}

fn accept_job(delivery: &str, run: &FakeCheckRun, sender: &str) -> SyncJob {
    SyncJob {
        trigger: JobTrigger::Rerequest,
        head_sha: run.head_sha.clone(),
        branch: Some("feature".into()),
        accept_drift: Some(AcceptDriftRequest {
            check_run_id: run.id,
            sender: sender.into(),
        }),
        ..push_job(delivery)
    }
}

fn run_by_id(github: &FakeGitHub, id: u64) -> FakeCheckRun {
    let runs = github.check_runs();
    runs.into_iter().find(|r| r.id == id).expect("the run")
}

fn summary(run: &FakeCheckRun) -> String {
    run.summary.clone().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_removed_required_credential_needs_action_and_no_drift_does_not() {
    let (stores, _dir) = embedded_stores().await;
    let github = registered_with_pull_requests(&stores).await;
    let workspaces = stores
        .state
        .workspaces()
        .list_workspaces("octo/agents")
        .await;
    let workspaces = workspaces.expect("workspaces");
    assert_eq!(
        workspaces.len(),
        1,
        "registered like agents: {workspaces:#?}"
    );
    assert_eq!(workspaces[0].id, "workspace/triage");
    assert_eq!(workspaces[0].status, WorkspaceStatus::Active);
    let runner = runner(&github, &stores);

    let drifted = runner
        .run(&pull_request_job("d-pr", REMOVES))
        .await
        .expect("checked");
    let run = run_by_id(&github, drifted.check_run_id);
    assert_eq!(run.conclusion.as_deref(), Some("action_required"));
    insta::assert_snapshot!("removed_credential_summary", summary(&run));
    assert_eq!(
        run.actions,
        [json!({
            "label": "Accept drift",
            "description": "Accept this commit's critical drift",
            "identifier": "accept-drift"
        })]
    );
    assert!(
        !summary(&run).contains("project/secrets/jira"),
        "values never show"
    );

    let clean = runner
        .run(&pull_request_job("d-pr-clean", NO_DRIFT))
        .await
        .expect("checked");
    let run = run_by_id(&github, clean.check_run_id);
    assert_eq!(
        run.conclusion.as_deref(),
        Some("success"),
        "{}",
        summary(&run)
    );
    assert!(summary(&run).contains("no drift from the registered ones"));
    assert!(run.actions.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn accepting_drift_needs_write_permission_and_holds_for_one_head_on_embedded_stores() {
    let (stores, _dir) = embedded_stores().await;
    accepting_drift_needs_write_permission_and_holds_for_one_head(stores).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn accepting_drift_needs_write_permission_and_holds_for_one_head_on_dynamodb_and_s3() {
    let test = "accepting_drift_needs_write_permission_and_holds_for_one_head_on_dynamodb_and_s3";
    let Some(stores) = aws_stores(test).await else {
        return;
    };
    accepting_drift_needs_write_permission_and_holds_for_one_head(stores).await;
}

async fn accepting_drift_needs_write_permission_and_holds_for_one_head(stores: Stores) {
    let github = registered_with_pull_requests(&stores).await;
    let runner = runner(&github, &stores);
    let checked = runner
        .run(&pull_request_job("d-pr", REMOVES))
        .await
        .expect("checked");
    let run = run_by_id(&github, checked.check_run_id);

    for (delivery, sender, why) in [
        (
            "d-read",
            "reader",
            "has `read` permission on the repository",
        ),
        (
            "d-stranger",
            "stranger",
            "is not a collaborator of the repository",
        ),
    ] {
        runner
            .run(&accept_job(delivery, &run, sender))
            .await
            .expect("refused");
        let refused = run_by_id(&github, run.id);
        assert_eq!(refused.conclusion.as_deref(), Some("action_required"));
        assert!(summary(&refused).contains(why), "{}", summary(&refused));
        assert_eq!(refused.actions.len(), 1, "the button stays");
    }
    let accepted = stores
        .state
        .workspaces()
        .list_drift_acceptances("octo/agents", REMOVES);
    assert!(accepted.await.expect("acceptances").is_empty());
    assert_eq!(
        github.check_runs().len(),
        2,
        "the clicked run is completed again"
    );

    runner
        .run(&accept_job("d-mona", &run, "mona"))
        .await
        .expect("accepted");
    let neutral = run_by_id(&github, run.id);
    assert_eq!(neutral.conclusion.as_deref(), Some("neutral"));
    assert!(
        summary(&neutral).contains("**Drift accepted** by @mona"),
        "{}",
        summary(&neutral)
    );
    assert!(neutral.actions.is_empty(), "the button goes");
    let events = stores
        .state
        .workspaces()
        .list_drift_acceptances("octo/agents", REMOVES);
    let events = events.await.expect("acceptances");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].action, AuditAction::DriftAccepted);
    assert_eq!(events[0].manifest_path, "workspaces/triage.yaml");
    assert_eq!(
        events[0].detail,
        "accepted by @mona (maintain): credential-removed JIRA_TOKEN"
    );

    let again = runner
        .run(&pull_request_job("d-pr-again", REMOVES))
        .await
        .expect("checked");
    assert_eq!(
        run_by_id(&github, again.check_run_id).conclusion.as_deref(),
        Some("neutral"),
        "the same head stays accepted"
    );
    let pushed = runner
        .run(&pull_request_job("d-pr-push", NEW_PUSH))
        .await
        .expect("checked");
    let fresh = run_by_id(&github, pushed.check_run_id);
    assert_eq!(
        fresh.conclusion.as_deref(),
        Some("action_required"),
        "a new head"
    );
}

#[test]
fn only_our_button_makes_a_job_and_it_names_the_run_and_the_sender() {
    use astrolift_bot::job_for_event;
    use astrolift_forge::webhook::parse_event;
    let path = format!(
        "{}/../forge/tests/fixtures/payloads/check_run/requested_action.with-organization.with-installation.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).expect("GitHub's payload");
    let mut payload: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let parse = |payload: &serde_json::Value| {
        let body = serde_json::to_vec(payload).expect("json");
        parse_event("check_run", &body).expect("parsed")
    };
    assert!(
        job_for_event("d-other", &parse(&payload)).is_err(),
        "another app's button"
    );

    payload["requested_action"]["identifier"] = json!("accept-drift");
    let job = job_for_event("d-ours", &parse(&payload)).expect("a job");
    assert_eq!(job.trigger, JobTrigger::Rerequest);
    assert_eq!(
        job.head_sha,
        payload["check_run"]["head_sha"]
            .as_str()
            .unwrap_or_default()
    );
    assert_eq!(
        job.accept_drift,
        Some(AcceptDriftRequest {
            check_run_id: 1_494_503_112,
            sender: "codebytere".into(),
        })
    );
}
