//! Webhook delivery ids, remembered for a time so that a delivery is processed once.
//!
//! One concern of the state store: [`StateStore`](super::StateStore) is the union of
//! the concerns; its contract suite is `crates/store/tests/it/delivery_contract.rs`, run on
//! SQLite and DynamoDB.

use std::time::Duration;

use super::model::{DeliveryOutcome, UnixSeconds};
use crate::{BoxFuture, StoreResult};

/// Webhook delivery ids, remembered for a time so that a delivery is processed once. Dyn-compatible.
pub trait DeliveryStore: Send + Sync {
    /// Records a webhook delivery id for `ttl`; a live duplicate is reported, not rewritten.
    fn record_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        now: UnixSeconds,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<DeliveryOutcome>>;

    /// Forgets a recorded delivery, so that its redelivery is processed: the
    /// webhook calls it when it recorded a delivery but could not queue its job.
    fn forget_delivery<'a>(&'a self, delivery_id: &'a str) -> BoxFuture<'a, StoreResult<()>>;
}
