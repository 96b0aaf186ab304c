//! What the bot's benchmarks share: the webhook secret, GitHub's recorded push payload,
//! and the headers of a signed delivery.

use http::{HeaderMap, HeaderValue};

pub const SECRET: &str = "bench-secret";

/// GitHub's recorded `branch.created.with-installation` push example (8.8 KiB).
pub const PAYLOAD: &str = include_str!(
    "../../../forge/tests/fixtures/payloads/push/branch.created.with-installation.json"
);

/// The headers of a `push` delivery with id `delivery`, signed `signature`.
pub fn headers(delivery: &str, signature: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("x-github-event", "push"),
        ("x-github-delivery", delivery),
        ("x-hub-signature-256", signature),
        ("content-type", "application/json"),
    ] {
        headers.insert(name, HeaderValue::from_str(value).expect("header"));
    }
    headers
}
