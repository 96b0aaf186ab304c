//! Keeping a binding's accepted requests for replay (docs/reference.md §10, "Kept requests").
//!
//! After a request is answered, the service keeps it when the answer is `202` (dispatched)
//! or `204` (filtered out): a duplicate (`200`), a refusal and a failure are not kept, so
//! every kept request is one the registered binding accepted once. The binding's
//! `keep_deliveries` (default and at most [`MAX_KEPT_REQUESTS`]) is how many it keeps; a
//! body over [`MAX_KEPT_BODY`] bytes is answered as before and not kept.
//!
//! Keeping is best effort and bounded: it never changes the answer, and a store that fails
//! is logged with the binding and the error, never the body (the body is tenant data and no
//! log line carries it).

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use astrolift_dispatch::Answer;
use astrolift_store::StateStore;
use astrolift_store::state::{
    KeptOutcome, KeptRequest, MAX_KEPT_BODY, MAX_KEPT_REQUESTS, TriggerBinding, UnixSeconds,
};
use sha2::{Digest, Sha256};

use crate::evaluate::CompiledBinding;

/// One answered request, as the service saw it.
pub(crate) struct Answered<'a> {
    pub binding: &'a TriggerBinding,
    pub compiled: &'a CompiledBinding,
    pub answer: &'a Answer,
    /// The headers a binding's programs read (`x-github-event` of a GitHub event).
    pub headers: BTreeMap<String, String>,
    pub body: &'a [u8],
    /// The request's idempotency key: the kept request's id is made from it.
    pub key: &'a str,
    /// When it was answered.
    pub at: SystemTime,
}

/// How many requests `binding` keeps: its `keep_deliveries`, at most [`MAX_KEPT_REQUESTS`].
pub(crate) fn keep_count(binding: &CompiledBinding) -> usize {
    usize::try_from(binding.spec.deliveries_kept())
        .map_or(MAX_KEPT_REQUESTS, |n| n.min(MAX_KEPT_REQUESTS))
}

/// Keeps `answered` if its answer and body qualify (see the module docs).
pub(crate) async fn keep(state: &dyn StateStore, answered: Answered<'_>) {
    let Some(request) = kept_request(&answered) else {
        return;
    };
    let keep = keep_count(answered.compiled);
    let trigger_id = answered.binding.trigger_id.as_str();
    match state.kept_requests().keep_request(&request, keep).await {
        Ok(()) => tracing::debug!(trigger_id, body_bytes = request.body.len(), "request kept"),
        Err(error) => tracing::warn!(trigger_id, %error, "request not kept for replay"),
    }
}

/// The record `answered` is kept as, or `None` when it is not kept.
fn kept_request(answered: &Answered<'_>) -> Option<KeptRequest> {
    let outcome = match answered.answer.status {
        202 => KeptOutcome::Dispatched,
        204 => KeptOutcome::Filtered,
        _ => return None,
    };
    if keep_count(answered.compiled) == 0 {
        return None;
    }
    let trigger_id = answered.binding.trigger_id.as_str();
    if answered.body.len() > MAX_KEPT_BODY {
        tracing::info!(
            trigger_id,
            body_bytes = answered.body.len(),
            "request not kept for replay: its body is over 256 KiB"
        );
        return None;
    }
    // A body that parsed as JSON is UTF-8; anything else is not kept.
    let body = std::str::from_utf8(answered.body).ok()?.to_owned();
    let since_epoch = answered.at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let received_at = UnixSeconds::try_from(since_epoch.as_secs()).unwrap_or(UnixSeconds::MAX);
    Some(KeptRequest {
        trigger_id: trigger_id.to_owned(),
        repository: answered.binding.repository.clone(),
        id: kept_id(since_epoch.subsec_nanos(), answered.key),
        received_at,
        expires_at: KeptRequest::expiry_of(received_at),
        headers: answered.headers.clone(),
        body,
        outcome,
    })
}

/// The nanoseconds within its second, 9 digits (so requests of one second are ordered as
/// they came), `-` and 32 hex digits of the idempotency key's SHA-256: unique per accepted
/// request of a binding (a duplicate is never kept), and naming nothing of the request.
fn kept_id(nanos: u32, key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    format!("{nanos:09}-{}", hex::encode(&digest[..16]))
}
