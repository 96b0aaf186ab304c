//! From an HTTP request to a verified, typed event.
//!
//! The order is fixed and matters: size, body decoding, signature, then
//! headers and payload. Nothing unauthenticated is ever parsed.

use base64::Engine as _;
use bytes::Bytes;
use http::HeaderMap;

use super::envelope::Envelope;
use super::events::{Event, parse_delivery};
use super::signature::{SignatureError, WebhookSecrets, verify_signature};

/// An incoming webhook request, as Lambda or `serve` sees it.
#[derive(Debug, Clone)]
pub struct WebhookRequest<'a> {
    /// Header names are case-insensitive (`http::HeaderMap`).
    pub headers: &'a HeaderMap,
    /// The body as received: shared, never copied on the way to [`Accepted`]
    /// (unless it is base64 to decode).
    pub body: Bytes,
    /// Lambda function URLs and API Gateway base64-encode binary bodies.
    pub is_base64_encoded: bool,
}

/// A verified delivery.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// `X-GitHub-Delivery`: the dedupe key.
    pub delivery_id: String,
    /// `X-GitHub-Event`.
    pub event_name: String,
    /// What every reader needs (repository, action, sender, trust facts,
    /// report subject), read once.
    pub envelope: Envelope,
    /// The typed payload of the kinds we act on.
    pub event: Event,
    /// The decoded, verified body (GitHub-sourced triggers map it).
    pub body: Bytes,
}

/// Why a delivery was refused, each with its HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum IngressError {
    #[error("body is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("body is not valid base64")]
    BadBase64,
    #[error(transparent)]
    Signature(#[from] SignatureError),
    #[error("missing or invalid {0} header")]
    MissingHeader(&'static str),
    #[error("unparseable payload: {0}")]
    BadPayload(String),
}

impl IngressError {
    pub fn status(&self) -> u16 {
        match self {
            IngressError::TooLarge { .. } => 413,
            IngressError::Signature(_) => 401,
            IngressError::BadBase64
            | IngressError::MissingHeader(_)
            | IngressError::BadPayload(_) => 400,
        }
    }
}

/// Verifies and parses one delivery. `limit` is the decoded body limit (25 MiB by default).
pub fn accept(
    request: WebhookRequest<'_>,
    secrets: &WebhookSecrets,
    limit: u64,
) -> Result<Accepted, IngressError> {
    let headers = request.headers;
    let body = decode_body(request, limit)?;
    verify_signature(&body, header(headers, "x-hub-signature-256"), secrets)?;
    let event_name = header(headers, "x-github-event")
        .filter(|v| is_token(v))
        .ok_or(IngressError::MissingHeader("X-GitHub-Event"))?
        .to_owned();
    let delivery_id = header(headers, "x-github-delivery")
        .filter(|v| is_token(v))
        .ok_or(IngressError::MissingHeader("X-GitHub-Delivery"))?
        .to_owned();
    let (envelope, event) =
        parse_delivery(&event_name, &body).map_err(|e| IngressError::BadPayload(e.to_string()))?;
    Ok(Accepted {
        delivery_id,
        event_name,
        envelope,
        event,
        body,
    })
}

fn decode_body(request: WebhookRequest<'_>, limit: u64) -> Result<Bytes, IngressError> {
    let too_large = IngressError::TooLarge { limit };
    if !request.is_base64_encoded {
        if request.body.len() as u64 > limit {
            return Err(too_large);
        }
        return Ok(request.body);
    }
    // Refuse before decoding: base64 of `limit` bytes is at most 4 * ceil(limit / 3).
    if request.body.len() as u64 > limit.div_ceil(3) * 4 {
        return Err(too_large);
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(&request.body)
        .map_err(|_| IngressError::BadBase64)?;
    if decoded.len() as u64 > limit {
        return Err(too_large);
    }
    Ok(Bytes::from(decoded))
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Event names and delivery ids are short ASCII tokens; anything else is refused
/// rather than carried into logs and queue messages.
fn is_token(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 128
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}
