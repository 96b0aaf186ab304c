//! The deliveries concern on DynamoDB ([`DeliveryStore`]).

use super::*;
use crate::state::deliveries::{DeliveryStore, lease_until};

impl DeliveryStore for DynamoStateStore {
    fn record_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        now: UnixSeconds,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<DeliveryOutcome>> {
        Box::pin(async move {
            let put = DeliveryPut::new(delivery_id, now, ttl);
            let values = put.values();
            let stored = self
                .put_if(put.item, DeliveryPut::CONDITION, &values)
                .await?;
            Ok(if stored {
                DeliveryOutcome::New
            } else {
                DeliveryOutcome::Duplicate
            })
        })
    }

    fn forget_delivery<'a>(&'a self, delivery_id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key(delivery_pk(delivery_id), "DELIVERY")))
                .send()
                .await
                .map_err(|err| map_sdk_error(DYNAMODB, "DeleteItem", err))?;
            self.counters.wrote(1);
            Ok(())
        })
    }

    fn mark_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        state: DeliveryState,
        now: UnixSeconds,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let result = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key(delivery_pk(delivery_id), "DELIVERY")))
                .update_expression("SET delivery_state = :state, lease_until = :lease")
                .condition_expression("attribute_exists(#pk) AND #e > :now")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#e", TTL_ATTRIBUTE)
                .expression_attribute_values(":state", s(state.as_str()))
                .expression_attribute_values(":lease", n(lease_until(state, now)))
                .expression_attribute_values(":now", n(now))
                .send()
                .await;
            let written = conditional_write("UpdateItem", result)?;
            if written {
                self.counters.wrote(1);
            }
            Ok(written)
        })
    }
}

/// The attribute of a delivery's [`DeliveryState`] (`state` is a DynamoDB reserved word).
const DELIVERY_STATE: &str = "delivery_state";
/// The attribute of the end of a queued or running delivery's lease.
const LEASE_UNTIL: &str = "lease_until";

/// The conditional put that records a delivery `queued`: `record_delivery`'s one write, and the
/// first item of a delivery recorded with its job (`JobStore::put_job_for_delivery`).
pub(super) struct DeliveryPut {
    pub(super) item: Item,
    now: UnixSeconds,
}

impl DeliveryPut {
    /// TTL deletion lags (up to days), so an expired item still counts as absent; a failed
    /// one, or one past its lease, is recorded again (the module docs of `deliveries`). An
    /// item without a state (written before deliveries had one) is a duplicate.
    pub(super) const CONDITION: &str = "attribute_not_exists(#pk) OR #e <= :now \
        OR delivery_state = :failed \
        OR (delivery_state IN (:queued, :running) AND lease_until <= :now)";

    pub(super) fn new(delivery_id: &str, now: UnixSeconds, ttl: Duration) -> Self {
        let expires_at = now.saturating_add(i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX));
        let mut item = key(delivery_pk(delivery_id), "DELIVERY");
        item.insert("delivery_id".into(), s(delivery_id));
        item.insert("received_at".into(), n(now));
        item.insert(TTL_ATTRIBUTE.into(), n(expires_at));
        item.insert(DELIVERY_STATE.into(), s(DeliveryState::Queued.as_str()));
        item.insert(
            LEASE_UNTIL.into(),
            n(lease_until(DeliveryState::Queued, now)),
        );
        DeliveryPut { item, now }
    }

    /// The values [`Self::CONDITION`] names.
    pub(super) fn values(&self) -> [(&'static str, AttributeValue); 4] {
        [
            (":now", n(self.now)),
            (":failed", s(DeliveryState::Failed.as_str())),
            (":queued", s(DeliveryState::Queued.as_str())),
            (":running", s(DeliveryState::Running.as_str())),
        ]
    }
}
