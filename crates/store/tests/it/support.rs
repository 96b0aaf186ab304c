//! Harness: unique names, the moto switch, downloads of presigned URLs.

pub use astrolift_store::testing::{aws_endpoint, unique_name};

/// Downloads a URL as an outside consumer would: `file://` from disk, `http(s)://` by GET.
pub async fn download(url: &str) -> Vec<u8> {
    if url.starts_with("file://") {
        let path = url::Url::parse(url)
            .expect("file URL parses")
            .to_file_path()
            .expect("file URL is a path");
        return std::fs::read(path).expect("file URL is readable");
    }
    let response = reqwest::get(url).await.expect("GET presigned URL");
    assert_eq!(response.status(), 200, "GET presigned URL");
    response.bytes().await.expect("body").to_vec()
}

/// Deterministic filler bytes that differ from part to part.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ ((i >> 16) as u8))
        .collect()
}

/// Runs the DynamoDB contract tests on this existing table (the deploy smoke test's stack,
/// scripts/deploy-smoke.sh) instead of a fresh one per test.
pub const SHARED_TABLE: &str = "ASTROLIFT_TEST_TABLE";
/// Runs the S3 contract tests in this existing bucket, each under its own unique prefix.
pub const SHARED_BUCKET: &str = "ASTROLIFT_TEST_BUCKET";

/// The shared resource named by `variable`, when set and non-empty.
pub fn shared_resource(variable: &str) -> Option<String> {
    std::env::var(variable).ok().filter(|name| !name.is_empty())
}

/// The shared table, emptied, for one test. The tests share it, so they must run one at a
/// time (`RUST_TEST_THREADS=1`); each starts on an empty table.
pub async fn shared_table(store: &astrolift_store::state::DynamoStateStore) {
    assert_eq!(
        std::env::var("RUST_TEST_THREADS").as_deref(),
        Ok("1"),
        "{SHARED_TABLE} is set: the tests share one table, so run them with RUST_TEST_THREADS=1"
    );
    let client = store.client();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(store.table())
            .projection_expression("pk, sk")
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("scan the shared table");
        for item in page.items() {
            client
                .delete_item()
                .table_name(store.table())
                .set_key(Some(item.clone()))
                .send()
                .await
                .expect("delete an item of the shared table");
        }
        start = page.last_evaluated_key().cloned();
        if start.is_none() {
            return;
        }
    }
}
