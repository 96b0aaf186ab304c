//! The idempotency key of a verified request.
//!
//! `{trigger_id}:signed:{timestamp}:{signature hex}` for a timestamped
//! signature (replay protection: a replay is a duplicate whatever its other
//! headers), else `{trigger_id}:delivery:{X-GitHub-Delivery}`, else
//! `{trigger_id}:key:{Idempotency-Key}`, else
//! `{trigger_id}:body:{sha256 hex of trigger_id, a NUL byte, the verified body}`.
//! The trigger id is part of every key: one GitHub delivery that matches two
//! bindings dispatches each once, and two senders cannot collide by reusing a key.
//! An `Idempotency-Key` or `X-GitHub-Delivery` over `Limits::idempotency_key`
//! bytes (256), or not visible ASCII, is a 400, whichever key is used.
use astrolift_dispatch::dispatch::delivery_key;
use http::HeaderMap;
use sha2::{Digest, Sha256};

use crate::error::TriggerError;

/// The idempotency key of a verified request (see the module docs):
/// `replay_key` is [`crate::verify::Verified::replay_key`], `limit` is
/// `Limits::idempotency_key`.
pub fn idempotency_key(
    headers: &HeaderMap,
    trigger_id: &str,
    body: &[u8],
    replay_key: Option<&str>,
    limit: usize,
) -> Result<String, TriggerError> {
    let delivery = key_header(headers, "X-GitHub-Delivery", limit)?;
    let key = key_header(headers, "Idempotency-Key", limit)?;
    if let Some(replay) = replay_key {
        return Ok(format!("{trigger_id}:signed:{replay}"));
    }
    if let Some(delivery) = delivery {
        return Ok(delivery_key(trigger_id, delivery));
    }
    if let Some(key) = key {
        return Ok(format!("{trigger_id}:key:{key}"));
    }
    let mut hasher = Sha256::new();
    hasher.update(trigger_id.as_bytes());
    hasher.update([0u8]);
    hasher.update(body);
    Ok(format!(
        "{trigger_id}:body:{}",
        hex::encode(hasher.finalize())
    ))
}

/// A key header, trimmed; `None` when absent or blank. Over `limit` bytes or
/// not visible ASCII is a 400 (the message names neither header nor value).
fn key_header<'h>(
    headers: &'h HeaderMap,
    name: &str,
    limit: usize,
) -> Result<Option<&'h str>, TriggerError> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    if value.len() > limit {
        return Err(TriggerError::BadIdempotencyKey(format!(
            "is {} bytes, over the {limit}-byte limit",
            value.len()
        )));
    }
    let text = value
        .to_str()
        .map_err(|_| TriggerError::BadIdempotencyKey("is not visible ASCII".to_owned()))?;
    Ok(Some(text.trim()).filter(|t| !t.is_empty()))
}
