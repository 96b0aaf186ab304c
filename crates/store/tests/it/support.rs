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
