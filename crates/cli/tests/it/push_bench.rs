//! The push benchmark, as an ignored test that `bench/push.sh` runs
//! in release mode: one push of an N-agent monorepo (`ASTROLIFT_BENCH_REPO`,
//! written by `bench/gen_monorepo.py`) through a real `astrolift serve`, the
//! fake GitHub and moto (DynamoDB + S3), end to end, from the POST to the
//! completed check run. It prints one JSON line with the time and GitHub call
//! counts, and asserts only the call counts (never a time).
//!
//! - `ASTROLIFT_BENCH_UNCHANGED=1` times a second push of the same tree under another
//!   commit instead (the first is waited for, untimed).
//! - `ASTROLIFT_BENCH_PROXY_PID`: the process sent `SIGUSR1` right before the timed POST
//!   (`bench/latency_proxy.py` then starts counting afresh), so that its counts are the
//!   timed push's own.
//! - `ASTROLIFT_BENCH_TIMEOUT`: seconds to wait for the check run (default 600).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use astrolift_fake_github::{FakeCheckRun, FakeGitHub};
use astrolift_store::blob::BlobOptions;
use astrolift_store::state::DynamoStateStore;
use astrolift_store::{S3BlobStore, testing::unique_name};
use serde_json::json;

use crate::serve::{INSTALLATION, SECRET, completed_runs_within, deliver, push, start_serve_on};

const SHA: &str = "5555555555555555555555555555555555555555";
const SECOND_SHA: &str = "6666666666666666666666666666666666666666";

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run by bench/push.sh"]
async fn push_benchmark() {
    let repo = PathBuf::from(std::env::var("ASTROLIFT_BENCH_REPO").expect("ASTROLIFT_BENCH_REPO"));
    let home = tempfile::tempdir().expect("temp dir");
    let (state, blobs) = if std::env::var("ASTROLIFT_BENCH_STORES").as_deref() == Ok("embedded") {
        (
            format!("sqlite:{}", home.path().join("state.db").display()),
            format!("file:{}", home.path().join("blobs").display()),
        )
    } else {
        aws_stores().await
    };
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", SHA, repo.clone());
    github.add_example_skill_repos();
    let server = start_serve_on(&github, true, home, &state, &blobs);

    let unchanged = std::env::var("ASTROLIFT_BENCH_UNCHANGED").as_deref() == Ok("1");
    let sha = if unchanged {
        github.add_repo("octo", "agents", "main", SECOND_SHA, repo.clone());
        let (status, _) = deliver(&server, "push", "d-first", &push("main", SHA), SECRET).await;
        assert_eq!(status, 202);
        wait_for_completed(&github, SHA).await;
        SECOND_SHA
    } else {
        SHA
    };
    let mut body = push("main", sha);
    if unchanged {
        body["before"] = json!(SHA);
    }
    let earlier = github.requests().len();
    restart_proxy_counts();
    let started = Instant::now();
    let (status, _) = deliver(&server, "push", "d-bench", &body, SECRET).await;
    assert_eq!(status, 202);
    let runs = wait_for_completed(&github, sha).await;
    let elapsed = started.elapsed();
    let annotations = runs[0].annotations.len();
    let timed: Vec<_> = github.requests().into_iter().skip(earlier).collect();
    let count = |method: &str, prefix: &str| {
        timed
            .iter()
            .filter(|r| r.method == method && r.path.starts_with(prefix))
            .count()
    };
    let tokens = count("POST", &format!("/app/installations/{INSTALLATION}/"));
    let tarballs = count("GET", "/repos/octo/agents/tarball/");
    let check_calls = count("POST", "/repos/octo/agents/check-runs")
        + count("PATCH", "/repos/octo/agents/check-runs/");
    let summary = runs[0].summary.clone().unwrap_or_default();
    println!(
        "{}",
        json!({
            "stores": state.split(':').next(),
            "unchanged": unchanged,
            "seconds": elapsed.as_secs_f64(),
            "conclusion": runs[0].conclusion,
            "annotations": annotations,
            "token_requests": tokens,
            "tarball_downloads": tarballs,
            "check_run_calls": check_calls,
            "added": summary.matches("| added |").count(),
        })
    );
    assert!(tokens <= 1, "{tokens} token requests");
    assert_eq!(tarballs, 1);
    assert!(check_calls > annotations.div_ceil(50).max(1));
    drop(server);
    tokio::time::sleep(Duration::from_millis(10)).await;
}

/// The runs on `sha` once all are completed, waiting at most `ASTROLIFT_BENCH_TIMEOUT`.
async fn wait_for_completed(github: &FakeGitHub, sha: &str) -> Vec<FakeCheckRun> {
    let seconds = std::env::var("ASTROLIFT_BENCH_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    completed_runs_within(github, sha, Duration::from_secs(seconds)).await
}

/// Tells the latency proxy of `ASTROLIFT_BENCH_PROXY_PID` to count from now.
fn restart_proxy_counts() {
    let Ok(pid) = std::env::var("ASTROLIFT_BENCH_PROXY_PID") else {
        return;
    };
    let status = std::process::Command::new("kill")
        .args(["-USR1", &pid])
        .status()
        .expect("kill");
    assert!(status.success(), "cannot signal the proxy {pid}");
    std::thread::sleep(Duration::from_millis(100));
}

/// A fresh table and bucket on moto.
async fn aws_stores() -> (String, String) {
    assert!(
        std::env::var("AWS_ENDPOINT_URL").is_ok(),
        "start moto first"
    );
    let table = unique_name("push-bench");
    DynamoStateStore::from_env(&table)
        .await
        .expect("dynamo")
        .create_table()
        .await
        .expect("table");
    let bucket = unique_name("push-bench");
    S3BlobStore::from_env(&bucket, "", BlobOptions::default())
        .await
        .expect("s3")
        .create_bucket()
        .await
        .expect("bucket");
    (format!("dynamodb:{table}"), format!("s3://{bucket}"))
}
