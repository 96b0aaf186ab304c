//! The deliveries concern on SQLite ([`DeliveryStore`]).

use super::delivery_insert::{insert_delivery, mark_delivery_row};
use super::*;
use crate::state::deliveries::DeliveryStore;

impl DeliveryStore for SqliteStateStore {
    fn record_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        now: UnixSeconds,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<DeliveryOutcome>> {
        let delivery_id = delivery_id.to_owned();
        Box::pin(async move {
            let outcome = self
                .with_connection(move |c| insert_delivery(c, &delivery_id, now, ttl))
                .await?;
            if outcome == DeliveryOutcome::New {
                self.counters.wrote(1);
            }
            Ok(outcome)
        })
    }

    fn forget_delivery<'a>(&'a self, delivery_id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let values = vec![text(delivery_id)];
            self.write_row("DELETE FROM deliveries WHERE delivery_id = ?1", values)
                .await
        })
    }

    fn mark_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        state: DeliveryState,
        now: UnixSeconds,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let delivery_id = delivery_id.to_owned();
        Box::pin(async move {
            let updated = self
                .with_connection(move |c| mark_delivery_row(c, &delivery_id, state, now))
                .await?;
            self.counters.wrote(updated as u64);
            Ok(updated == 1)
        })
    }
}
