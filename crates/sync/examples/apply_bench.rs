//! Benchmark of applying a repository: the first apply of a repository, then a no-op re-run.
//!
//! Usage: `apply_bench DIR STATE_URL BLOB_URL` (for example
//! `sqlite:/tmp/s.db file:/tmp/blobs`, or `dynamodb:TABLE s3://BUCKET` with
//! `AWS_ENDPOINT_URL` set). Prints one JSON object with the wall time, blob
//! PUTs and state writes of each run. For DynamoDB and S3 it creates the
//! table and the bucket first.

use std::time::Instant;

use astrolift_manifest::{DirTree, ValidateOptions};
use astrolift_store::blob::S3BlobStore;
use astrolift_store::state::DynamoStateStore;
use astrolift_store::{
    BlobLocation, BlobOptions, StateLocation, open_blob_store, open_state_store,
};
use astrolift_sync::{Mode, Stores, SyncRequest, sync};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, state_url, blob_url] = args.as_slice() else {
        return Err("usage: apply_bench DIR STATE_URL BLOB_URL".into());
    };
    let state = StateLocation::parse(state_url)?;
    let blobs = BlobLocation::parse(blob_url)?;
    create_aws_resources(&state, &blobs).await?;
    let stores = Stores {
        blobs: open_blob_store(&blobs, BlobOptions::default()).await?,
        state: open_state_store(&state).await?,
        concurrency: Default::default(),
    };
    let tree = DirTree::open(dir, 1_000_000)?;
    let request = SyncRequest {
        repository: "bench/monorepo".into(),
        commit: "c1".into(),
        commit_time: 1,
        before: None,
        order: None,
        git_ref: Some("main".into()),
        mode: Mode::apply_all("bench"),
        now: 1,
        validate: ValidateOptions::default(),
        skills: None,
        previews: None,
        samples: None,
        relock: None,
    };
    let first = timed_run(&tree, &request, &stores).await?;
    let noop = timed_run(&tree, &request, &stores).await?;
    let ratio = noop.0 / first.0;
    println!(
        "{{\"agents\":{},\"first\":{{\"seconds\":{:.3},\"blob_puts\":{},\"state_writes\":{}}},\
         \"noop\":{{\"seconds\":{:.3},\"blob_puts\":{},\"state_writes\":{}}},\"noop_over_first\":{ratio:.4}}}",
        first.3, first.0, first.1, first.2, noop.0, noop.1, noop.2
    );
    Ok(())
}

/// Wall seconds, blob PUTs, state writes and plan size of one sync.
async fn timed_run(
    tree: &DirTree,
    request: &SyncRequest,
    stores: &Stores,
) -> Result<(f64, u64, u64, usize), Box<dyn std::error::Error>> {
    let (puts, writes) = (stores.blobs.stats().puts, stores.state.stats().writes);
    let started = Instant::now();
    let report = sync(tree, request, stores, &|_, _| {}).await?;
    let seconds = started.elapsed().as_secs_f64();
    if report.has_errors() {
        return Err(format!(
            "the benchmark repository has errors: {:?}",
            report.diagnostics.first()
        )
        .into());
    }
    Ok((
        seconds,
        stores.blobs.stats().puts - puts,
        stores.state.stats().writes - writes,
        report.plan.len(),
    ))
}

async fn create_aws_resources(
    state: &StateLocation,
    blobs: &BlobLocation,
) -> Result<(), Box<dyn std::error::Error>> {
    if let StateLocation::DynamoDb { table } = state {
        DynamoStateStore::from_env(table)
            .await?
            .create_table()
            .await?;
    }
    if let BlobLocation::S3 { bucket, .. } = blobs {
        S3BlobStore::from_env(bucket, "", Default::default())
            .await?
            .create_bucket()
            .await?;
    }
    Ok(())
}
