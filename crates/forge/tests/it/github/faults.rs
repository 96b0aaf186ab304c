//! Retries under each injected fault, and what is never retried.

use std::time::{Duration, Instant};

use astrolift_fake_github::Fault;
use astrolift_forge::github::{CHECK_RUN_NAME, CheckRunOutput, Conclusion, GitHubError};

use super::{SHA, setup, setup_with, with_run};

const CHECK_RUNS: &str = "/repos/octo/agents/check-runs";
const TOKENS: &str = "/app/installations/";

fn output() -> CheckRunOutput {
    CheckRunOutput {
        title: "ok".to_owned(),
        summary: "nothing to report".to_owned(),
        text: None,
        annotations: Vec::new(),
        actions: Vec::new(),
    }
}

#[tokio::test]
async fn a_500_then_success_is_retried_once() {
    let setup = setup().await;
    setup
        .fake
        .inject(Fault::server_error(1).on("POST", CHECK_RUNS));
    let id = setup
        .installation()
        .create_in_progress(&setup.repo(), SHA, CHECK_RUN_NAME)
        .await;
    assert!(id.is_ok(), "{id:?}");
    assert_eq!(setup.fake.requests_to("POST", CHECK_RUNS).len(), 2);
    assert_eq!(setup.fake.check_runs().len(), 1);
}

#[tokio::test]
async fn two_502s_on_the_token_exchange_are_retried() {
    let setup = setup().await;
    setup.fake.inject(Fault::bad_gateway(2).on("POST", TOKENS));
    setup
        .installation()
        .token()
        .await
        .expect("third attempt succeeds");
    assert_eq!(setup.fake.requests_to("POST", TOKENS).len(), 3);
}

#[tokio::test]
async fn persistent_500s_stop_after_four_attempts_with_the_status() {
    let setup = setup().await;
    setup
        .fake
        .inject(Fault::server_error(10).on("POST", CHECK_RUNS));
    let error = setup
        .installation()
        .create_in_progress(&setup.repo(), SHA, CHECK_RUN_NAME)
        .await
        .expect_err("gives up");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(500), "{error}");
    assert_eq!(setup.fake.requests_to("POST", CHECK_RUNS).len(), 4);
}

#[tokio::test]
async fn a_secondary_rate_limit_waits_for_retry_after() {
    let (setup, gh, repo, id) = with_run().await;
    setup
        .fake
        .inject(Fault::secondary_rate_limit().on("PATCH", CHECK_RUNS));
    let started = Instant::now();
    gh.complete(&repo, id, Conclusion::Success, output())
        .await
        .expect("completed");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(setup.fake.requests_to("PATCH", CHECK_RUNS).len(), 2);
}

#[tokio::test]
async fn a_primary_rate_limit_waits_for_the_reset_or_reports_it() {
    let setup = setup().await;
    let gh = setup.installation();
    setup
        .fake
        .inject(Fault::primary_rate_limit(1).on("POST", CHECK_RUNS));
    gh.create_in_progress(&setup.repo(), SHA, CHECK_RUN_NAME)
        .await
        .expect("after the reset");
    assert_eq!(setup.fake.requests_to("POST", CHECK_RUNS).len(), 2);

    setup
        .fake
        .inject(Fault::primary_rate_limit(3600).on("POST", CHECK_RUNS));
    let started = Instant::now();
    let error = gh
        .create_in_progress(&setup.repo(), SHA, CHECK_RUN_NAME)
        .await
        .expect_err("an hour is past the budget");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(&error, GitHubError::RateLimited { wait, .. } if wait.as_secs() > 3000),
        "{error}"
    );
    assert_eq!(setup.fake.requests_to("POST", CHECK_RUNS).len(), 3);
}

#[tokio::test]
async fn a_slow_answer_times_out_and_is_retried() {
    let setup = setup_with(|config| config.request_timeout = Duration::from_millis(300)).await;
    setup
        .installation()
        .token()
        .await
        .expect("token first, so only the check run is slow");
    setup
        .fake
        .inject(Fault::delay(Duration::from_secs(2), 1).on("POST", CHECK_RUNS));
    let started = Instant::now();
    let id = setup
        .installation()
        .create_in_progress(&setup.repo(), SHA, CHECK_RUN_NAME)
        .await;
    assert!(id.is_ok(), "{id:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(setup.fake.requests_to("POST", CHECK_RUNS).len(), 2);
}

#[tokio::test]
async fn a_422_is_not_retried_and_carries_githubs_message() {
    let setup = setup().await;
    let error = setup
        .installation()
        .create_in_progress(&setup.repo(), "", CHECK_RUN_NAME)
        .await
        .expect_err("empty head_sha");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(422));
    assert!(error.to_string().contains("head_sha"), "{error}");
    assert_eq!(setup.fake.requests_to("POST", CHECK_RUNS).len(), 1);
}

#[tokio::test]
async fn a_404_update_is_not_retried() {
    let setup = setup().await;
    let error = setup
        .installation()
        .complete(&setup.repo(), 999_999, Conclusion::Success, output())
        .await
        .expect_err("no such run");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(404));
    assert_eq!(setup.fake.requests_to("PATCH", CHECK_RUNS).len(), 1);
}

#[tokio::test]
async fn a_failed_pipeline_never_leaves_the_run_in_progress() {
    let (setup, gh, repo, id) = with_run().await;
    let missing = "0000000000000000000000000000000000000000";
    let error = gh
        .tarball(&repo, missing)
        .await
        .expect_err("no such commit");
    // A transient failure on the way to reporting is retried too.
    setup
        .fake
        .inject(Fault::bad_gateway(1).on("PATCH", CHECK_RUNS));
    gh.fail_run(
        &repo,
        id,
        &format!("Could not download the commit: {error}"),
    )
    .await
    .expect("reported");
    let runs = setup.fake.check_runs();
    assert_eq!(runs[0].status, "completed");
    assert_eq!(runs[0].conclusion.as_deref(), Some("failure"));
    assert!(
        runs[0]
            .summary
            .as_deref()
            .is_some_and(|s| s.contains("404")),
        "{:?}",
        runs[0].summary
    );
}

#[tokio::test]
async fn errors_never_carry_a_token() {
    let setup = setup().await;
    setup
        .fake
        .inject(Fault::server_error(10).on("GET", "/_codeload/"));
    let error = setup
        .installation()
        .tarball(&setup.repo(), SHA)
        .await
        .expect_err("download fails");
    let shown = format!("{error} {error:?}");
    assert!(
        !shown.contains("ghs_") && !shown.contains("GHSAT0"),
        "{shown}"
    );
    let token = setup.installation().token().await.expect("token");
    assert!(!format!("{token:?}").contains("ghs_"));
}
