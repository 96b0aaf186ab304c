//! GitHub failing for a moment does not fail the sync (docs/operations.md, "How a delivery
//! flows, and where it can fail"): two 502s and then a 200, or a 429 with `retry-after`,
//! are retried inside one run, which applies, so no redelivery is needed. The wait is
//! measured on the fake's own record of when each request came, not on the test's clock.

use std::time::Duration;

use astrolift_fake_github::{FakeGitHub, Fault, RecordedRequest};

use crate::support::{embedded_stores, fake_github, push_job, register, runner};

const TARBALL: &str = "/repos/octo/agents/tarball";

/// Runs one push job to the end; panics unless it applied.
async fn applied_in_one_run(github: &FakeGitHub, delivery: &str) {
    let (stores, _dir) = embedded_stores().await;
    register(&stores).await;
    let outcome = runner(github, &stores)
        .run(&push_job(delivery))
        .await
        .expect("retried inside the run");
    assert!(outcome.applied, "{outcome:?}");
    let runs = github.check_runs();
    assert_eq!(
        runs.len(),
        1,
        "one run, no second attempt of the job: {runs:#?}"
    );
    assert_eq!(runs[0].status, "completed");
    assert_ne!(runs[0].conclusion.as_deref(), Some("failure"), "{runs:#?}");
}

fn tarball_requests(github: &FakeGitHub) -> Vec<RecordedRequest> {
    github.requests_to("GET", TARBALL)
}

#[tokio::test(flavor = "multi_thread")]
async fn two_502s_then_a_200_apply_without_a_redelivery() {
    let github = fake_github("monorepo").await;
    github.inject(Fault::bad_gateway(2).on("GET", TARBALL));
    applied_in_one_run(&github, "d-502").await;
    assert_eq!(tarball_requests(&github).len(), 3, "502, 502, then 200");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_429_is_retried_no_sooner_than_its_retry_after() {
    let github = fake_github("monorepo").await;
    github.inject(Fault::too_many_requests(2).on("GET", TARBALL));
    applied_in_one_run(&github, "d-429").await;
    let requests = tarball_requests(&github);
    assert_eq!(requests.len(), 2, "429, then 200");
    let waited = requests[1]
        .received_at
        .duration_since(requests[0].received_at);
    assert!(
        waited >= Duration::from_secs(2),
        "the retry came {waited:?} after the 429 that asked for 2 s"
    );
}
