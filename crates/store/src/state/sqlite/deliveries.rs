//! The deliveries concern on SQLite ([`DeliveryStore`]).

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
            let expires_at = now.saturating_add(i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX));
            let lease = lease_until(DeliveryState::Queued, now);
            let inserted = self
                .with_connection(move |c| {
                    // Expired rows are swept here: SQLite has no TTL of its own.
                    c.execute("DELETE FROM deliveries WHERE expires_at <= ?1", [now]).map_err(sql_error)?;
                    // New, or again when its job failed or its lease ran out (the module
                    // docs of `deliveries`).
                    c.execute(
                        "INSERT INTO deliveries (delivery_id, expires_at, state, lease_until) \
                         VALUES (?1, ?2, 'queued', ?3) \
                         ON CONFLICT (delivery_id) DO UPDATE SET \
                         expires_at = excluded.expires_at, state = 'queued', lease_until = excluded.lease_until \
                         WHERE deliveries.state = 'failed' \
                         OR (deliveries.state IN ('queued', 'running') AND deliveries.lease_until <= ?4)",
                        params![delivery_id, expires_at, lease, now],
                    )
                    .map_err(sql_error)
                })
                .await?;
            self.counters.wrote(inserted as u64);
            Ok(if inserted == 1 {
                DeliveryOutcome::New
            } else {
                DeliveryOutcome::Duplicate
            })
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
