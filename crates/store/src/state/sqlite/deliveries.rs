//! The deliveries concern on SQLite ([`DeliveryStore`]).

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
            let expires_at = now.saturating_add(i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX));
            let inserted = self
                .with_connection(move |c| {
                    // Expired rows are swept here: SQLite has no TTL of its own.
                    c.execute("DELETE FROM deliveries WHERE expires_at <= ?1", [now]).map_err(sql_error)?;
                    c.execute(
                        "INSERT INTO deliveries (delivery_id, expires_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                        params![delivery_id, expires_at],
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
}
