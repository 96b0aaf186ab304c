//! The deliveries concern on DynamoDB ([`DeliveryStore`]).

use super::*;
use crate::state::deliveries::DeliveryStore;

impl DeliveryStore for DynamoStateStore {
    fn record_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        now: UnixSeconds,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<DeliveryOutcome>> {
        Box::pin(async move {
            let expires_at = now.saturating_add(i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX));
            let mut item = key(delivery_pk(delivery_id), "DELIVERY");
            item.insert("delivery_id".into(), s(delivery_id));
            item.insert("received_at".into(), n(now));
            item.insert(TTL_ATTRIBUTE.into(), n(expires_at));
            // TTL deletion lags (up to days), so an expired item still counts as absent.
            let stored = self
                .put_if(
                    item,
                    "attribute_not_exists(#pk) OR #e <= :now",
                    &[(":now", n(now))],
                )
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
                .map_err(|err| map_sdk_error("DeleteItem", err))?;
            self.counters.wrote(1);
            Ok(())
        })
    }
}
