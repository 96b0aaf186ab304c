//! Kept requests (docs/reference.md §10, "Kept requests"): the last accepted requests of each
//! trigger binding, what a pull request that changes the binding replays
//! (`astrolift_trigger::replay`).
//!
//! A request is kept when its binding accepted it (verified, in scope) and dispatched it
//! (`202`) or filtered it out (`204`): its body (at most [`MAX_KEPT_BODY`] bytes; a larger
//! body is not kept), the headers a binding's programs read, when it came and its outcome.
//! At most [`MAX_KEPT_REQUESTS`] per binding are kept (a binding's `keep_deliveries` may ask
//! for fewer, `0` for none); a new one replaces the binding's oldest. Each expires
//! [`KEPT_REQUEST_TTL`] after it came: DynamoDB's TTL attribute `expires_at` deletes it,
//! SQLite sweeps it, and no read returns an expired one. A binding's kept requests go with
//! the binding: an apply or a teardown that deletes it purges them.
//!
//! That purge runs after the apply's commit (`purge_deleted_bindings`, which each
//! backend's `AgentStore::apply` calls once its write is committed: on DynamoDB after each
//! transaction of the change set). A purge that fails does not fail the apply, whose write
//! stands: it is logged as a warning naming the binding and the error (never a body), and the
//! requests it left expire within [`KEPT_REQUEST_TTL`] like every other.
//!
//! Kept bodies are tenant data: reads are keyed by binding **and** repository, so a caller
//! that names another repository's binding reads nothing, and [`KeptRequest`]'s `Debug`
//! shows the body's size, never the body.
//!
//! One concern of the state store, reached through
//! [`StateStore::kept_requests`](super::StateStore::kept_requests); its contract suite is
//! `crates/store/tests/it/kept_request_contract.rs`, run on SQLite and DynamoDB.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::change::AgentChange;
use super::model::UnixSeconds;
use crate::{BoxFuture, StoreError, StoreResult};

/// The most requests kept per binding, and a binding's `keep_deliveries` default.
pub const MAX_KEPT_REQUESTS: usize = 20;
/// The largest body kept, in bytes (256 KiB); exactly this size is kept.
pub const MAX_KEPT_BODY: usize = 256 * 1024;
/// How long a kept request lives after it came.
pub const KEPT_REQUEST_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// What the binding did with a kept request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptOutcome {
    /// Dispatched (`202`).
    Dispatched,
    /// Filtered out (`204`).
    Filtered,
}

impl KeptOutcome {
    /// The wire name (`dispatched`, `filtered`).
    pub fn as_str(self) -> &'static str {
        match self {
            KeptOutcome::Dispatched => "dispatched",
            KeptOutcome::Filtered => "filtered",
        }
    }
}

/// One accepted request of a binding, kept for replay.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptRequest {
    /// The binding that accepted it.
    pub trigger_id: String,
    /// The binding's repository (`owner/name`): reads name it too.
    pub repository: String,
    /// Unique within the binding; ordered as the requests came (the stores order by
    /// (`received_at`, `id`)). The service makes it from the time and the request's
    /// idempotency key.
    pub id: String,
    /// When it came.
    pub received_at: UnixSeconds,
    /// When it expires: `received_at` + [`KEPT_REQUEST_TTL`].
    pub expires_at: UnixSeconds,
    /// The headers a binding's programs read, lowercase names (`x-github-event` for GitHub
    /// events; none for generic requests: their signature is never kept).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The verified body, JSON text of at most [`MAX_KEPT_BODY`] bytes.
    pub body: String,
    /// What the binding did with it.
    pub outcome: KeptOutcome,
}

impl KeptRequest {
    /// `received_at` + [`KEPT_REQUEST_TTL`].
    pub fn expiry_of(received_at: UnixSeconds) -> UnixSeconds {
        received_at.saturating_add(KEPT_REQUEST_TTL.as_secs() as i64)
    }

    /// Whether it has expired at `now` (expired at `expires_at` exactly).
    pub fn is_expired(&self, now: UnixSeconds) -> bool {
        self.expires_at <= now
    }
}

impl fmt::Debug for KeptRequest {
    /// The body's size, never the body: kept bodies are tenant data and never logged.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeptRequest")
            .field("trigger_id", &self.trigger_id)
            .field("repository", &self.repository)
            .field("id", &self.id)
            .field("received_at", &self.received_at)
            .field("expires_at", &self.expires_at)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("body_bytes", &self.body.len())
            .field("outcome", &self.outcome)
            .finish()
    }
}

/// Kept requests of trigger bindings. Dyn-compatible.
///
/// Contract (the contract suite runs it on SQLite and DynamoDB):
/// - `keep_request` stores the request and then keeps only the binding's `keep` newest (by
///   (`received_at`, `id`)); `keep == 0` writes nothing; a body over [`MAX_KEPT_BODY`] bytes
///   is refused (`Invalid`), writing nothing; the same `id` again replaces the request;
/// - the hot path is bounded: keeping one request never reads the binding's kept bodies;
/// - `list_kept_requests` returns the newest `limit` unexpired requests of the binding whose
///   repository is the one named, newest first; another repository's name reads none;
/// - `purge_kept_requests` deletes every kept request of the binding, expired or not;
/// - expired requests are never returned, and `sweep_kept_requests` (SQLite's; DynamoDB's
///   TTL does it there) deletes them.
pub trait KeptRequestStore: Send + Sync {
    /// Keeps `request`, then drops the binding's oldest past `keep`.
    fn keep_request<'a>(
        &'a self,
        request: &'a KeptRequest,
        keep: usize,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// The newest `limit` unexpired requests of `trigger_id` whose repository is
    /// `repository`, newest first.
    fn list_kept_requests<'a>(
        &'a self,
        trigger_id: &'a str,
        repository: &'a str,
        now: UnixSeconds,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<KeptRequest>>>;

    /// Deletes every kept request of `trigger_id`; returns how many there were.
    fn purge_kept_requests<'a>(&'a self, trigger_id: &'a str) -> BoxFuture<'a, StoreResult<usize>>;

    /// Deletes the requests expired at `now`; returns how many. DynamoDB's TTL deletes them
    /// there, so its implementation deletes none.
    fn sweep_kept_requests(&self, now: UnixSeconds) -> BoxFuture<'_, StoreResult<usize>>;
}

/// How many of `request`'s binding a keep leaves: `keep`, at most [`MAX_KEPT_REQUESTS`];
/// `None` when that is none (nothing is written). A body over [`MAX_KEPT_BODY`] bytes is
/// `Invalid`. What both backends' `keep_request` check first.
pub(crate) fn kept_window(request: &KeptRequest, keep: usize) -> StoreResult<Option<usize>> {
    if keep == 0 {
        return Ok(None);
    }
    if request.body.len() > MAX_KEPT_BODY {
        return Err(StoreError::Invalid(format!(
            "the kept request {} of binding {} has a body of {} bytes, over {MAX_KEPT_BODY}",
            request.id,
            request.trigger_id,
            request.body.len()
        )));
    }
    Ok(Some(keep.min(MAX_KEPT_REQUESTS)))
}

/// Purges the kept requests of every binding that `committed` (agent changes whose write is
/// committed) deleted. A failure is logged, not returned: the module docs say why.
pub(crate) async fn purge_deleted_bindings<S: KeptRequestStore + ?Sized>(
    store: &S,
    committed: &[AgentChange],
) {
    for trigger_id in committed.iter().flat_map(|c| &c.delete_bindings) {
        if let Err(error) = store.purge_kept_requests(trigger_id).await {
            tracing::warn!(
                trigger_id = trigger_id.as_str(),
                %error,
                "the kept requests of a deleted binding were not purged; they expire within 7 days"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: String) -> KeptRequest {
        KeptRequest {
            trigger_id: "trg-1".into(),
            repository: "octo/agents".into(),
            id: "0123456789abcdef".into(),
            received_at: 1_000,
            expires_at: KeptRequest::expiry_of(1_000),
            headers: BTreeMap::from([("x-github-event".into(), "issues".into())]),
            body,
            outcome: KeptOutcome::Dispatched,
        }
    }

    #[test]
    fn the_debug_output_shows_the_bodys_size_and_never_the_body() {
        let kept = request(r#"{"secret":"tenant-data-7f3a"}"#.into());
        let shown = format!("{kept:?}");
        assert!(!shown.contains("tenant-data-7f3a"), "{shown}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("body_bytes: 29"), "{shown}");
        assert!(shown.contains("x-github-event"), "{shown}");
        let pretty = format!("{kept:#?}");
        assert!(!pretty.contains("tenant-data-7f3a"), "{pretty}");
    }

    #[test]
    fn a_request_expires_a_week_after_it_came() {
        let kept = request(String::new());
        assert_eq!(kept.expires_at, 1_000 + 7 * 24 * 60 * 60);
        assert!(!kept.is_expired(kept.expires_at - 1));
        assert!(kept.is_expired(kept.expires_at));
    }

    #[test]
    fn the_window_is_at_most_twenty_and_a_body_over_256_kib_is_refused() {
        let kept = request("x".repeat(MAX_KEPT_BODY));
        assert_eq!(kept_window(&kept, 0).ok(), Some(None));
        assert_eq!(kept_window(&kept, 3).ok(), Some(Some(3)));
        assert_eq!(kept_window(&kept, 50).ok(), Some(Some(MAX_KEPT_REQUESTS)));
        let over = request("x".repeat(MAX_KEPT_BODY + 1));
        assert!(matches!(
            kept_window(&over, 20),
            Err(StoreError::Invalid(_))
        ));
        assert_eq!(
            kept_window(&over, 0).ok(),
            Some(None),
            "keeping none refuses nothing"
        );
    }

    #[test]
    fn outcomes_have_their_wire_names() {
        for outcome in [KeptOutcome::Dispatched, KeptOutcome::Filtered] {
            assert_eq!(
                serde_json::to_value(outcome).ok(),
                Some(serde_json::json!(outcome.as_str()))
            );
        }
    }
}
