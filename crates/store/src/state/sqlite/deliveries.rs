//! The deliveries concern on SQLite ([`DeliveryStore`]).

use super::delivery_insert::insert_delivery;
use super::error::sql_error;
use super::*;
use crate::state::deliveries::{DeliveryStore, lease_until};

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
            let lease = lease_until(state, now);
            let updated = self
                .with_connection(move |c| {
                    c.execute(
                        "UPDATE deliveries SET state = ?2, lease_until = ?3 \
                         WHERE delivery_id = ?1 AND expires_at > ?4",
                        params![delivery_id, state.as_str(), lease, now],
                    )
                    .map_err(sql_error)
                })
                .await?;
            self.counters.wrote(updated as u64);
            Ok(updated == 1)
        })
    }
}
