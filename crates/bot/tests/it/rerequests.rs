//! Re-run checks end to end: GitHub's own `check_run.rerequested` and
//! `check_suite.rerequested` payloads, signed and delivered to ingress, whose
//! in-process queue runs the job against the fake GitHub: the sync of that
//! head sha runs again and a new check run on it is completed, checked only.

use std::sync::Arc;
use std::time::Duration;

use astrolift_bot::queue::JobHandler;
use astrolift_bot::{Ingress, LocalJobQueue, SyncJob, SyncRunner};
use astrolift_fake_github::{FakeCheckRun, FakeGitHub};
use astrolift_forge::webhook::WebhookSecrets;
use astrolift_manifest::Limits;
use astrolift_sync::Stores;
use serde_json::{Value, json};

use crate::support::{
    INSTALLATION, SECRET, deliver, embedded_stores, examples, fake_github, register, repository,
    runner,
};

/// A feature branch's head: checked, never registered.
const FEATURE_SHA: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// GitHub's example payload of `event`/`file`, pointed at our repository,
/// installation and `head_sha`.
fn github_payload(file: &str, head_sha: &str) -> Value {
    let path = format!(
        "{}/../forge/tests/fixtures/payloads/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("payload fixture");
    let mut payload: Value = serde_json::from_str(&text).expect("payload JSON");
    payload["repository"] = repository();
    payload["installation"] = json!({ "id": INSTALLATION });
    let suite = if payload["check_run"].is_object() {
        payload["check_run"]["head_sha"] = json!(head_sha);
        &mut payload["check_run"]["check_suite"]
    } else {
        &mut payload["check_suite"]
    };
    suite["head_sha"] = json!(head_sha);
    suite["head_branch"] = json!("feature");
    payload
}

/// Ingress whose in-process queue runs each job with `runner`.
fn ingress_running_jobs(stores: &Stores, runner: SyncRunner) -> Ingress {
    let runner = Arc::new(runner);
    let handler: JobHandler = Arc::new(move |job: SyncJob| {
        let runner = Arc::clone(&runner);
        Box::pin(async move {
            let _ = runner.run(&job).await;
        })
    });
    Ingress {
        state: stores.state.clone(),
        secrets: WebhookSecrets::new(SECRET.into(), None).expect("secrets"),
        jobs: Arc::new(LocalJobQueue::new(handler)),
        triggers: None,
        limits: Limits::DEFAULT,
        function: "test",
    }
}

/// The completed runs on `sha`, once there are `count` of them (at most 30 s).
async fn completed_runs(github: &FakeGitHub, sha: &str, count: usize) -> Vec<FakeCheckRun> {
    for _ in 0..600 {
        let runs: Vec<FakeCheckRun> = github
            .check_runs()
            .into_iter()
            .filter(|r| r.head_sha == sha && r.status == "completed")
            .collect();
        if runs.len() >= count {
            return runs;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "no {count} completed runs on {sha}: {:#?}",
        github.check_runs()
    );
}

fn tarball_downloads(github: &FakeGitHub, sha: &str) -> usize {
    github
        .requests_to("GET", &format!("/repos/octo/agents/tarball/{sha}"))
        .len()
}

#[tokio::test(flavor = "multi_thread")]
async fn rerequested_check_runs_and_suites_sync_their_head_again() {
    let (stores, _dir) = embedded_stores().await;
    register(&stores).await;
    let github = fake_github("monorepo").await;
    github.add_repo(
        "octo",
        "agents",
        "feature",
        FEATURE_SHA,
        examples("monorepo"),
    );
    let ingress = ingress_running_jobs(&stores, runner(&github, &stores));

    let deliveries = [
        (
            "check_run",
            "check_run/rerequested.with-organization.with-installation.json",
        ),
        (
            "check_suite",
            "check_suite/rerequested.with-installation.json",
        ),
    ];
    for (done, (event, file)) in deliveries.into_iter().enumerate() {
        let payload = github_payload(file, FEATURE_SHA);
        let delivery = format!("d-{event}");
        let answer = deliver(&ingress, event, &delivery, &payload, SECRET).await;
        assert_eq!(
            (answer.status, answer.body["status"].clone()),
            (202, json!("queued"))
        );
        completed_runs(&github, FEATURE_SHA, done + 1).await;
        assert_eq!(
            tarball_downloads(&github, FEATURE_SHA),
            done + 1,
            "{event} synced again"
        );
    }
    let reruns = completed_runs(&github, FEATURE_SHA, 2).await;
    assert_ne!(reruns[0].id, reruns[1].id, "a new check run");
    for run in &reruns {
        assert_eq!(run.name, "Astrolift");
        assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
        let summary = run.summary.clone().unwrap_or_default();
        assert!(
            summary.contains("this is a re-requested check"),
            "{summary}"
        );
    }
    let registered = stores
        .state
        .list_agents("octo/agents")
        .await
        .expect("agents");
    assert!(
        registered.is_empty(),
        "a re-run only checks: {registered:#?}"
    );
}
