//! Harness: unique names, the moto switch, downloads of presigned URLs.

use std::sync::atomic::{AtomicU64, Ordering};

/// The local AWS endpoint, or `None` when the AWS tests must be skipped.
/// Panics (fails the test) when `ASTROLIFT_REQUIRE_AWS=1` and no endpoint is set.
pub fn aws_endpoint(test: &str) -> Option<String> {
    match std::env::var("AWS_ENDPOINT_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("ASTROLIFT_REQUIRE_AWS").as_deref() == Ok("1") => panic!(
            "{test}: ASTROLIFT_REQUIRE_AWS=1 but AWS_ENDPOINT_URL is not set; start moto with \
             `eval \"$(scripts/moto.sh start)\"`"
        ),
        _ => {
            eprintln!(
                "note: skipping {test}: AWS_ENDPOINT_URL is not set (start moto with scripts/moto.sh)"
            );
            None
        }
    }
}

/// A name unique to this process and call, valid as an S3 bucket and a DynamoDB table.
pub fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

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
