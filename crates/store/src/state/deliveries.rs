//! Webhook delivery ids, remembered for a time so that a delivery is processed once,
//! with where its job is, so that a redelivery of one whose job failed or was lost is
//! processed again (docs/operations.md, "When a sync fails").
//!
//! A delivery is a duplicate while it is `queued` or `running` within its lease
//! ([`DELIVERY_LEASE`] from when it was queued or started running), or `succeeded`. A
//! `failed` one, or a `queued` or `running` one past its lease (its process stopped, or
//! its queue was lost), is recorded again as new. A record written before deliveries had
//! a state counts as `succeeded` (a compatibility shim: docs/operations.md,
//! "Compatibility shims").
//!
//! One concern of the state store: [`StateStore`](super::StateStore) is the union of
//! the concerns; its contract suite is `crates/store/tests/it/delivery_contract.rs`, run on
//! SQLite and DynamoDB.

use std::time::Duration;

use super::model::{DeliveryOutcome, DeliveryState, UnixSeconds};
use crate::{BoxFuture, StoreResult};

/// How long a `queued` or `running` delivery is presumed alive: longer than any sync runs
/// (a Lambda invocation ends within 15 minutes) and than a job waits in its lane.
pub const DELIVERY_LEASE: Duration = Duration::from_secs(15 * 60);

/// Webhook delivery ids, remembered for a time so that a delivery is processed once. Dyn-compatible.
pub trait DeliveryStore: Send + Sync {
    /// Records a webhook delivery id for `ttl`, `queued`; a live duplicate (see the module
    /// docs) is reported, not rewritten. One conditional write.
    fn record_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        now: UnixSeconds,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<DeliveryOutcome>>;

    /// Forgets a recorded delivery, so that its redelivery is processed: the
    /// webhook calls it when it recorded a delivery but could not queue its job.
    fn forget_delivery<'a>(&'a self, delivery_id: &'a str) -> BoxFuture<'a, StoreResult<()>>;

    /// Moves a recorded delivery to `state` at `now` (a `running` one's lease starts then);
    /// `Ok(false)`, writing nothing, when no such delivery is recorded (a job that no
    /// delivery made, such as a dependent's re-sync, or an expired one).
    fn mark_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        state: DeliveryState,
        now: UnixSeconds,
    ) -> BoxFuture<'a, StoreResult<bool>>;
}

/// The end of the lease of a delivery entering `state` at `now`: `now` + [`DELIVERY_LEASE`]
/// while queued or running, `0` (no lease) once finished.
pub fn lease_until(state: DeliveryState, now: UnixSeconds) -> UnixSeconds {
    match state {
        DeliveryState::Queued | DeliveryState::Running => {
            now.saturating_add(i64::try_from(DELIVERY_LEASE.as_secs()).unwrap_or(i64::MAX))
        }
        DeliveryState::Succeeded | DeliveryState::Failed => 0,
    }
}
