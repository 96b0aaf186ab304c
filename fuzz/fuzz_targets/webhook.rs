//! Webhook ingress: `accept` (size, base64, signature, headers, payload) with
//! a fixed secret, and `parse_event` directly.
//!
//! Input layout, HTTP-like so that fixture payloads seed it directly
//! (`fuzz/seed.sh` writes them this way):
//!
//! ```text
//! <mode byte><name>: <value>\n…\n\n<body>
//! ```
//!
//! The mode byte's low two bits: 0 sign with the current secret, 1 with the
//! previous one, 2 send the header block as is, 3 drop any signature. Bit 2:
//! send the body base64-encoded. So half the inputs carry a valid signature
//! and reach the event parser.
#![no_main]

use astrolift_forge::webhook::{WebhookRequest, WebhookSecrets, accept, parse_event, sign};
use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "fuzz-webhook-secret";
const PREVIOUS: &str = "fuzz-previous-secret";
const SIGNATURE: &str = "x-hub-signature-256";
/// Small, so the size check is reached too.
const LIMIT: u64 = 64 * 1024;

/// Splits the header block from the body at the first empty line.
fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (data, &[]),
    }
}

fn header_map(block: &[u8]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for line in block.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let value = line[colon + 1..].trim_ascii_start();
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(value),
        ) {
            headers.append(name, value);
        }
    }
    headers
}

fn event_name(headers: &HeaderMap) -> &str {
    headers
        .get("x-github-event")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("push")
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (block, body) = split(rest);
    let mut headers = header_map(block);
    let _ = parse_event(event_name(&headers), body);

    let signer = match mode & 3 {
        0 => Some(SECRET),
        1 => Some(PREVIOUS),
        _ => None,
    };
    if let Some(secret) = signer {
        if let Ok(value) = HeaderValue::from_str(&sign(body, secret)) {
            headers.insert(SIGNATURE, value);
        }
    } else if mode & 3 == 3 {
        headers.remove(SIGNATURE);
    }
    let base64 = mode & 4 != 0;
    let encoded;
    let sent: &[u8] = if base64 {
        encoded = base64::engine::general_purpose::STANDARD.encode(body);
        encoded.as_bytes()
    } else {
        body
    };
    let Ok(secrets) = WebhookSecrets::new(SECRET.to_owned(), Some(PREVIOUS.to_owned())) else {
        return;
    };
    let request = WebhookRequest {
        headers: &headers,
        body: sent,
        is_base64_encoded: base64,
    };
    match accept(request, &secrets, LIMIT) {
        Ok(accepted) => {
            assert_eq!(accepted.body, body, "the verified body is the body sent");
            let _ = accepted.event.repository();
            let _ = accepted.event.wants_sync();
        }
        Err(error) => {
            // Payload errors may quote the payload; a secret the sender wrote
            // there themselves is not a leak.
            let message = error.to_string();
            for secret in [SECRET, PREVIOUS] {
                let sent = data.windows(secret.len()).any(|w| w == secret.as_bytes());
                assert!(sent || !message.contains(secret), "secret in: {message}");
            }
            let _ = error.status();
        }
    }
});
