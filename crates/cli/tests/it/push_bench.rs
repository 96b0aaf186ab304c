//! The push benchmark, as an ignored test that `bench/push.sh` runs
//! in release mode: one push of an N-agent monorepo (`ASTROLIFT_BENCH_REPO`,
//! written by `bench/gen_monorepo.py`) through a real `astrolift serve`, the
//! fake GitHub and moto (DynamoDB + S3), end to end, from the POST to the
//! completed check run. It prints one JSON line with the time and GitHub call
//! counts, and asserts only the call counts (never a time).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use astrolift_fake_github::FakeGitHub;
use astrolift_store::blob::BlobOptions;
use astrolift_store::state::DynamoStateStore;
use astrolift_store::{S3BlobStore, testing::unique_name};
use serde_json::json;

use crate::serve::{INSTALLATION, SECRET, completed_runs, deliver, push, start_serve_on};

const SHA: &str = "5555555555555555555555555555555555555555";

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
    github.add_repo("octo", "agents", "main", SHA, repo);
    github.add_example_skill_repos();
    let server = start_serve_on(&github, true, home, &state, &blobs);

    let started = Instant::now();
    let (status, _) = deliver(&server, "push", "d-bench", &push("main", SHA), SECRET).await;
    assert_eq!(status, 202);
    let runs = completed_runs(&github, SHA).await;
    let elapsed = started.elapsed();
    let annotations = runs[0].annotations.len();
    let ours = format!("/app/installations/{INSTALLATION}/");
    let tokens = github.requests_to("POST", &ours).len();
    let tarballs = github
        .requests_to("GET", "/repos/octo/agents/tarball/")
        .len();
    let check_calls = github
        .requests_to("POST", "/repos/octo/agents/check-runs")
        .len()
        + github
            .requests_to("PATCH", "/repos/octo/agents/check-runs/")
            .len();
    let summary = runs[0].summary.clone().unwrap_or_default();
    println!(
        "{}",
        json!({
            "stores": state.split(':').next(),
            "seconds": elapsed.as_secs_f64(),
            "conclusion": runs[0].conclusion,
            "annotations": annotations,
            "token_requests": tokens,
            "tarball_downloads": tarballs,
            "check_run_calls": check_calls,
            "added": summary.matches("| added |").count(),
        })
    );
    assert_eq!(tokens, 1);
    assert_eq!(tarballs, 1);
    assert_eq!(check_calls, 1 + annotations.div_ceil(50).max(1));
    drop(server);
    tokio::time::sleep(Duration::from_millis(10)).await;
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
