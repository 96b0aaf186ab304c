//! The writes of a webhook delivery's row on SQLite that the deliveries concern
//! (`record_delivery`, `mark_delivery`) and the jobs concern (a delivery recorded or marked
//! with its job: `put_job_for_delivery`, `update_job_marking`, `delete_job_marking`) share:
//! a module of its own, so neither imports the other.

use std::time::Duration;

use rusqlite::{Connection, params};

use super::error::sql_error;
use crate::StoreResult;
use crate::state::deliveries::lease_until;
use crate::state::model::{DeliveryOutcome, DeliveryState, UnixSeconds};

/// Records `delivery_id` for `ttl`, `queued`, unless a live duplicate is recorded (the module
/// docs of `deliveries`): `record_delivery`, and the first write of a delivery recorded with
/// its job (`JobStore::put_job_for_delivery`). Expired rows are swept here: SQLite has no TTL
/// of its own. Both statements stay prepared: every webhook runs them.
pub(super) fn insert_delivery(
    c: &Connection,
    delivery_id: &str,
    now: UnixSeconds,
    ttl: Duration,
) -> StoreResult<DeliveryOutcome> {
    let expires_at = now.saturating_add(i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX));
    let lease = lease_until(DeliveryState::Queued, now);
    c.prepare_cached("DELETE FROM deliveries WHERE expires_at <= ?1")
        .and_then(|mut sweep| sweep.execute([now]))
        .map_err(sql_error)?;
    // New, or again when its job failed or its lease ran out.
    let inserted = c
        .prepare_cached(
            "INSERT INTO deliveries (delivery_id, expires_at, state, lease_until) \
             VALUES (?1, ?2, 'queued', ?3) \
             ON CONFLICT (delivery_id) DO UPDATE SET \
             expires_at = excluded.expires_at, state = 'queued', lease_until = excluded.lease_until \
             WHERE deliveries.state = 'failed' \
             OR (deliveries.state IN ('queued', 'running') AND deliveries.lease_until <= ?4)",
        )
        .and_then(|mut insert| insert.execute(params![delivery_id, expires_at, lease, now]))
        .map_err(sql_error)?;
    Ok(if inserted == 1 {
        DeliveryOutcome::New
    } else {
        DeliveryOutcome::Duplicate
    })
}

/// Moves the live recorded delivery `delivery_id` to `state` (a `running` or `queued` one's
/// lease starts at `now`); returns how many rows it wrote (`0`: none recorded, or expired).
/// Kept prepared: each job marks its delivery twice.
pub(super) fn mark_delivery_row(
    c: &Connection,
    delivery_id: &str,
    state: DeliveryState,
    now: UnixSeconds,
) -> StoreResult<usize> {
    let lease = lease_until(state, now);
    c.prepare_cached(
        "UPDATE deliveries SET state = ?2, lease_until = ?3 \
         WHERE delivery_id = ?1 AND expires_at > ?4",
    )
    .and_then(|mut update| update.execute(params![delivery_id, state.as_str(), lease, now]))
    .map_err(sql_error)
}
