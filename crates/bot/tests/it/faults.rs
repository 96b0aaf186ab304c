//! Faults end to end: each run is interrupted by one fault, then
//! the job is run again, as SQS redelivers it. The final state must equal a
//! clean run's: the same agents with the same snapshots and versions, one
//! audit event per change, every referenced blob stored, and no check run
//! left `in_progress`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use astrolift_bot::{SyncJob, SyncRunner};
use astrolift_fake_github::{FakeGitHub, Fault};
use astrolift_store::BlobKey;
use astrolift_store::testing::{FaultPlan, FaultyBlobStore};
use astrolift_sync::Stores;

use crate::support::{aws_stores, embedded_stores, fake_github, push_job, register, runner};

/// What must be equal to a clean run: agents (without timestamps), their
/// audit trail lengths.
type View = Vec<(String, String, String, String, String, u64, usize)>;

async fn view(stores: &Stores) -> View {
    let agents = stores
        .state
        .list_agents("octo/agents")
        .await
        .expect("agents");
    let mut view = Vec::new();
    for agent in agents {
        let audit = stores
            .state
            .list_audit_events(&agent.key())
            .await
            .expect("audit")
            .len();
        for key in [
            BlobKey::package(agent.payload_digest.trim_start_matches("sha256:")),
            BlobKey::snapshot(&agent.snapshot_hash),
        ] {
            let key = key.expect("a valid key");
            assert!(
                stores.blobs.exists(&key).await.expect("exists"),
                "{key:?} is stored"
            );
        }
        view.push((
            agent.manifest_path,
            agent.name,
            format!("{:?}", agent.status),
            agent.snapshot_hash,
            agent.payload_digest,
            agent.version,
            audit,
        ));
    }
    view
}

async fn clean_view() -> View {
    let (stores, _dir) = embedded_stores().await;
    register(&stores).await;
    let github = fake_github("monorepo").await;
    runner(&github, &stores)
        .run(&push_job("clean"))
        .await
        .expect("clean run");
    view(&stores).await
}

fn assert_no_run_in_progress(github: &FakeGitHub) {
    let runs = github.check_runs();
    assert!(runs.iter().all(|r| r.status == "completed"), "{runs:#?}");
}

/// Runs the job until it succeeds (at most 5 times, like the SQS redrive policy).
async fn run_until_done(runner: &SyncRunner, job: &SyncJob) -> usize {
    for attempt in 1..=5 {
        match runner.run(job).await {
            Ok(_) => return attempt,
            Err(error) => assert!(error.is_retryable(), "{error}"),
        }
    }
    panic!("the job never succeeded");
}

#[tokio::test(flavor = "multi_thread")]
async fn github_down_for_30_seconds_mid_sync() {
    let (stores, _dir) = embedded_stores().await;
    register(&stores).await;
    let github = fake_github("monorepo").await;
    let mut runner = runner(&github, &stores);
    runner.fail_run_patience = Duration::from_secs(60);
    // The outage starts once the run exists and the tarball is being read.
    github.inject(
        Fault::delay(Duration::from_millis(300), 1).on("GET", "/repos/octo/agents/tarball"),
    );
    let job = push_job("d-outage");
    let outage = {
        let github_state = &github;
        async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            github_state.down_for(Duration::from_secs(30));
        }
    };
    let started = Instant::now();
    let (first, ()) = tokio::join!(runner.run(&job), outage);
    if let Err(error) = first {
        assert!(error.is_retryable(), "{error}");
        assert!(
            started.elapsed() >= Duration::from_secs(29),
            "the failed run was completed after the outage"
        );
        run_until_done(&runner, &job).await;
    }
    assert_no_run_in_progress(&github);
    assert_eq!(view(&stores).await, clean_view().await);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_s3_put_failing_once() {
    let (stores, _dir) = embedded_stores().await;
    register(&stores).await;
    let stores = Stores {
        blobs: Arc::new(FaultyBlobStore::new(
            stores.blobs.clone(),
            FaultPlan::nth_write(3),
        )),
        state: stores.state.clone(),
        concurrency: Default::default(),
    };
    let github = fake_github("monorepo").await;
    let runner = runner(&github, &stores);
    let attempts = run_until_done(&runner, &push_job("d-s3")).await;
    assert_eq!(
        attempts, 2,
        "the first run failed on the PUT, the second converged"
    );
    assert_no_run_in_progress(&github);
    let failed = github
        .check_runs()
        .into_iter()
        .filter(|r| r.conclusion.as_deref() == Some("failure"))
        .count();
    assert_eq!(failed, 1, "the interrupted run says it failed");
    assert_eq!(view(&stores).await, clean_view().await);
}

async fn concurrent_syncs_converge(stores: Stores) {
    register(&stores).await;
    let github = fake_github("monorepo").await;
    let runner = runner(&github, &stores);
    let (first, second) = (push_job("d-a"), push_job("d-b"));
    let (a, b) = tokio::join!(
        run_until_done(&runner, &first),
        run_until_done(&runner, &second)
    );
    assert!(a >= 1 && b >= 1);
    assert_no_run_in_progress(&github);
    assert_eq!(view(&stores).await, clean_view().await);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_syncs_of_one_commit_converge_on_sqlite() {
    let (stores, _dir) = embedded_stores().await;
    concurrent_syncs_converge(stores).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dynamodb_conditional_write_conflict_from_a_concurrent_sync() {
    let Some(stores) =
        aws_stores("a_dynamodb_conditional_write_conflict_from_a_concurrent_sync").await
    else {
        return;
    };
    concurrent_syncs_converge(stores).await;
}
