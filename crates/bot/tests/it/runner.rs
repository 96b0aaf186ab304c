//! The runner against the fake GitHub: apply on the registered ref, check
//! elsewhere, and every failure path ending in a completed check run.

use astrolift_fake_github::{FakeGitHub, Fault};
use astrolift_sync::{PlanStatus, Stores};

use crate::support::{
    INSTALLATION, aws_stores, embedded_stores, fake_github, push_job, register, runner,
};

fn assert_no_run_in_progress(github: &FakeGitHub) {
    let runs = github.check_runs();
    assert!(!runs.is_empty());
    assert!(runs.iter().all(|r| r.status == "completed"), "{runs:#?}");
}

async fn applies_then_converges(stores: Stores) {
    let github = fake_github("monorepo").await;
    register(&stores).await;
    let runner = runner(&github, &stores);

    let first = runner.run(&push_job("d-1")).await.expect("first run");
    assert!(first.applied);
    assert!(
        first
            .report
            .plan
            .iter()
            .any(|e| e.status == PlanStatus::Added)
    );
    let registered = stores
        .state
        .list_agents("octo/agents")
        .await
        .expect("agents");
    assert!(!registered.is_empty());

    let second = runner.run(&push_job("d-2")).await.expect("second run");
    assert!(
        second
            .report
            .plan
            .iter()
            .all(|e| matches!(e.status, PlanStatus::Unchanged | PlanStatus::Disabled))
    );
    assert_eq!(
        second.report.counts.state_writes, 0,
        "a re-run writes nothing"
    );
    assert_eq!(
        stores
            .state
            .list_agents("octo/agents")
            .await
            .expect("agents"),
        registered
    );
    assert_eq!(
        github
            .requests_to("POST", &format!("/app/installations/{INSTALLATION}/"))
            .len(),
        1,
        "token cached"
    );
    assert_eq!(
        github
            .requests_to("GET", "/repos/octo/agents/tarball/")
            .len(),
        2
    );
    assert_no_run_in_progress(&github);
}

#[tokio::test(flavor = "multi_thread")]
async fn applies_then_converges_on_embedded_stores() {
    let (stores, _dir) = embedded_stores().await;
    applies_then_converges(stores).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn applies_then_converges_on_dynamodb_and_s3() {
    let Some(stores) = aws_stores("applies_then_converges_on_dynamodb_and_s3").await else {
        return;
    };
    applies_then_converges(stores).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn transient_github_faults_are_retried() {
    let (stores, _dir) = embedded_stores().await;
    register(&stores).await;
    let github = fake_github("monorepo").await;
    github.inject(Fault::bad_gateway(1).on("GET", "/repos/octo/agents/tarball"));
    github.inject(Fault::server_error(1).on("PATCH", "/repos/octo/agents/check-runs"));
    github.inject(Fault::secondary_rate_limit().on("POST", "/repos/octo/agents/check-runs"));
    let outcome = runner(&github, &stores)
        .run(&push_job("d-f"))
        .await
        .expect("retried");
    assert!(outcome.applied);
    assert_no_run_in_progress(&github);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_download_completes_the_run_as_failure() {
    let (stores, _dir) = embedded_stores().await;
    register(&stores).await;
    let github = fake_github("monorepo").await;
    github.inject(Fault::server_error(100).on("GET", "/repos/octo/agents/tarball"));
    let error = runner(&github, &stores)
        .run(&push_job("d-down"))
        .await
        .expect_err("GitHub is down");
    assert!(error.is_retryable(), "a 5xx is worth retrying: {error}");
    let runs = github.check_runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, "completed");
    assert_eq!(runs[0].conclusion.as_deref(), Some("failure"));
    let summary = runs[0].summary.clone().unwrap_or_default();
    assert!(summary.contains("could not finish"), "{summary}");
    assert!(
        stores
            .state
            .list_agents("octo/agents")
            .await
            .expect("agents")
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_installation_fails_without_a_run() {
    let (stores, _dir) = embedded_stores().await;
    let github = fake_github("monorepo").await;
    let mut job = push_job("d-gone");
    job.installation_id = 999;
    let error = runner(&github, &stores)
        .run(&job)
        .await
        .expect_err("no such installation");
    assert!(
        !error.is_retryable(),
        "a deleted installation will not come back: {error}"
    );
    assert!(github.check_runs().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_push_through_another_installation_is_checked_only_and_the_run_says_so() {
    // The App is installed twice (say the repository moved to another owner
    // who installed it too); the registration records the first one.
    let (stores, _dir) = embedded_stores().await;
    register(&stores).await;
    let github = fake_github("monorepo").await;
    let other = crate::support::INSTALLATION + 1;
    github.add_installation(other);
    let mut job = push_job("d-other-installation");
    job.installation_id = other;
    let outcome = runner(&github, &stores).run(&job).await.expect("checked");
    assert!(!outcome.applied, "another installation never applies");
    assert!(
        stores
            .state
            .list_agents("octo/agents")
            .await
            .expect("agents")
            .is_empty()
    );
    let runs = github.check_runs();
    assert_eq!(runs.len(), 1);
    let summary = runs[0].summary.clone().unwrap_or_default();
    assert!(
        summary.contains(&format!(
            "came from GitHub App installation {other}, but the registration records installation {}",
            crate::support::INSTALLATION
        )),
        "{summary}"
    );

    // The registered installation still applies.
    let outcome = runner(&github, &stores)
        .run(&push_job("d-registered-installation"))
        .await
        .expect("applied");
    assert!(outcome.applied);
}

#[test]
fn running_out_of_disk_is_a_permanent_failure_not_a_retry() {
    use astrolift_bot::JobError;
    use astrolift_package::TarballError;
    let full = || std::io::Error::from_raw_os_error(28);
    for error in [
        JobError::Tarball(TarballError::Spool(full())),
        JobError::Sync(astrolift_sync::SyncError::Spool(full())),
    ] {
        assert!(error.is_out_of_space(), "{error}");
        assert!(!error.is_retryable(), "{error}");
    }
    // Any other spool error (a transient I/O failure) is still retried.
    let other = JobError::Tarball(TarballError::Spool(std::io::Error::other("EIO")));
    assert!(!other.is_out_of_space());
    assert!(other.is_retryable());
}

/// A sync past its first-update time shows `N of M agents packaged` on its `in_progress`
/// run, each update one PATCH no sooner than the interval after the last, all before the
/// run completes (docs/reference.md §9, "Progress"). The times are shortened here; the
/// App's are 5 s and 2 s (the `progress` module's unit tests hold those).
#[tokio::test(flavor = "multi_thread")]
async fn a_long_sync_shows_its_progress_on_the_run() {
    use std::sync::Arc;
    use std::time::Duration;

    use astrolift_bot::progress::ProgressTiming;
    use astrolift_store::testing::{FaultPlan, FaultyBlobStore};

    let (stores, _dir) = embedded_stores().await;
    let slow = Stores {
        blobs: Arc::new(
            FaultyBlobStore::new(stores.blobs.clone(), FaultPlan::nth_call(u64::MAX))
                .with_delay(Duration::from_millis(40)),
        ),
        ..stores.clone()
    };
    let github = fake_github("monorepo").await;
    register(&slow).await;
    let mut runner = runner(&github, &slow);
    let every = Duration::from_millis(30);
    runner.progress = ProgressTiming {
        first: Duration::from_millis(10),
        every,
    };
    let outcome = runner.run(&push_job("d-progress")).await.expect("run");
    let packaged = outcome.report.plan.len();

    let patches = github.requests_to("PATCH", "/repos/octo/agents/check-runs/");
    let bodies: Vec<serde_json::Value> = patches
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("JSON body"))
        .collect();
    let (updates, completion) = bodies.split_at(bodies.len() - 1);
    assert!(!updates.is_empty(), "no progress shown: {bodies:#?}");
    for update in updates {
        assert_eq!(update["status"], "in_progress");
        let summary = update["output"]["summary"].as_str().expect("summary");
        assert!(
            summary.ends_with(&format!(" of {packaged} agents packaged")),
            "{summary}"
        );
    }
    assert_eq!(completion[0]["status"], "completed");
    let shown: Vec<&str> = updates
        .iter()
        .filter_map(|u| u["output"]["summary"].as_str())
        .collect();
    let mut distinct = shown.clone();
    distinct.dedup();
    assert_eq!(shown, distinct, "an unmoved count is sent again");
    for pair in patches[..updates.len()].windows(2) {
        assert!(pair[1].received_at - pair[0].received_at >= every);
    }
    assert_no_run_in_progress(&github);
}
