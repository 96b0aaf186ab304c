//! Kept requests on DynamoDB ([`KeptRequestStore`]), in the one table, one partition per
//! binding, `pk = KEPT#<trigger id>`, two items per request:
//! - the request: `sk = REQUEST#<received at, 20 digits>#<id>`, the record's fields as
//!   attributes (the body a String: at most 256 KiB, within the 400 KB item limit);
//! - its key: `sk = KEY#<received at, 20 digits>#<id>`, a small item of the request's
//!   time, id, repository and expiry.
//!
//! Both carry `expires_at`, a Number of epoch seconds: the table's TTL deletes them.
//!
//! A body is up to 256 KiB, so the hot path never reads one. `keep_request` puts the
//! request, then its key, then reads the binding's keys (one `Query` of small items) and
//! deletes the request and the key of each one past the window, the request first. Every
//! read follows the keys: `list_kept_requests` picks the unexpired ones of the named
//! repository and reads only those requests (`BatchGetItem`), and a key whose request is
//! gone reads nothing. No write is conditional, so keeps of one binding never contend: two
//! at once each delete what is past the window they read, which is past it in any later
//! one too. A keep cut short leaves at most a request without its key (read by nothing) or
//! one request more than the window until the next keep; the TTL takes either.
//! `sweep_kept_requests` deletes none: the TTL does (docs/reference.md §10, "Kept
//! requests").

use std::cmp::Reverse;
use std::collections::HashSet;
use std::time::Duration;

use aws_sdk_dynamodb::types::KeysAndAttributes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{DynamoStateStore, Item, build, conditional_write, item_record, key, record_item};
use crate::aws::{DYNAMODB, map_sdk_error};
use crate::state::kept_requests::{KeptRequest, KeptRequestStore, kept_window};
use crate::state::model::UnixSeconds;
use crate::state::table::PK;
use crate::{BoxFuture, StoreError, StoreResult};

const REQUEST_PREFIX: &str = "REQUEST#";
const KEY_PREFIX: &str = "KEY#";
/// The most keys of one `BatchGetItem`.
const BATCH_GET_MAX_KEYS: usize = 100;
/// How many times a `BatchGetItem` asks again for the keys it left unprocessed.
const MAX_BATCH_GET_ROUNDS: u32 = 8;

fn kept_pk(trigger_id: &str) -> String {
    format!("KEPT#{trigger_id}")
}

/// `<received at, 20 digits>#<id>`: in sort-key order as the requests came.
fn kept_suffix(received_at: UnixSeconds, id: &str) -> String {
    format!("{received_at:020}#{id}")
}

/// A request's key item, as stored and read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct KeptKey {
    received_at: UnixSeconds,
    id: String,
    repository: String,
    expires_at: UnixSeconds,
}

impl KeptKey {
    fn of(request: &KeptRequest) -> Self {
        KeptKey {
            received_at: request.received_at,
            id: request.id.clone(),
            repository: request.repository.clone(),
            expires_at: request.expires_at,
        }
    }

    /// The keys of the request's item and of this key item.
    fn items(&self, trigger_id: &str) -> [Item; 2] {
        let suffix = kept_suffix(self.received_at, &self.id);
        [
            key(kept_pk(trigger_id), format!("{REQUEST_PREFIX}{suffix}")),
            key(kept_pk(trigger_id), format!("{KEY_PREFIX}{suffix}")),
        ]
    }

    /// Newest first: by (received at, id), descending.
    fn newest_first(&self) -> Reverse<(UnixSeconds, &str)> {
        Reverse((self.received_at, self.id.as_str()))
    }
}

/// The keys a keep of `kept` (its key stored) pushes out of `stored` (the binding's keys
/// read after it): another key of the same id (it replaced that request), and those past
/// the `keep` newest.
fn evicted(mut stored: Vec<KeptKey>, kept: &KeptKey, keep: usize) -> Vec<KeptKey> {
    stored.sort_by(|a, b| a.newest_first().cmp(&b.newest_first()));
    let (replaced, mut window): (Vec<_>, Vec<_>) = stored
        .into_iter()
        .partition(|k| k.id == kept.id && k != kept);
    let past = window.split_off(keep.min(window.len()));
    replaced.into_iter().chain(past).collect()
}

impl DynamoStateStore {
    /// The key items of `trigger_id`'s requests, oldest first.
    async fn kept_keys(&self, trigger_id: &str) -> StoreResult<Vec<KeptKey>> {
        self.query_partition(&kept_pk(trigger_id), Some(KEY_PREFIX))
            .await
    }

    /// Deletes the item at `keys`, whether or not there is one.
    async fn delete(&self, keys: Item) -> StoreResult<()> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(keys))
            .send()
            .await
            .map_err(|err| map_sdk_error(DYNAMODB, "DeleteItem", err))?;
        self.counters.wrote(1);
        Ok(())
    }

    /// Deletes the item at `keys`; `Ok(false)` when there was none. Unlike
    /// `delete_returning`, nothing of the item comes back.
    async fn delete_existing(&self, keys: Item) -> StoreResult<bool> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(keys))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await;
        let deleted = conditional_write("DeleteItem", result)?;
        self.counters.wrote(u64::from(deleted));
        Ok(deleted)
    }

    /// The records at `keys` (consistent reads), in no particular order; a key without an
    /// item reads nothing. `BatchGetItem` takes at most 100 keys and answers at most 16 MB,
    /// leaving the rest unprocessed: those are asked again, after a wait.
    async fn batch_get<T: DeserializeOwned>(&self, keys: Vec<Item>) -> StoreResult<Vec<T>> {
        let mut records = Vec::with_capacity(keys.len());
        for group in keys.chunks(BATCH_GET_MAX_KEYS) {
            let mut pending = group.to_vec();
            for round in 0..=MAX_BATCH_GET_ROUNDS {
                if pending.is_empty() {
                    break;
                }
                if round == MAX_BATCH_GET_ROUNDS {
                    return Err(StoreError::Unavailable(format!(
                        "BatchGetItem left {} keys unprocessed {MAX_BATCH_GET_ROUNDS} times",
                        pending.len()
                    )));
                }
                if round > 0 {
                    tokio::time::sleep(Duration::from_millis(25) * round).await;
                }
                let asked = build(
                    KeysAndAttributes::builder()
                        .set_keys(Some(std::mem::take(&mut pending)))
                        .consistent_read(true)
                        .build(),
                )?;
                self.counters.read();
                let mut output = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, asked)
                    .send()
                    .await
                    .map_err(|err| map_sdk_error(DYNAMODB, "BatchGetItem", err))?;
                let items = output
                    .responses
                    .as_mut()
                    .and_then(|responses| responses.remove(&self.table))
                    .unwrap_or_default();
                self.counters.read_records(items.len() as u64);
                for item in &items {
                    records.push(item_record(item)?);
                }
                pending = output
                    .unprocessed_keys
                    .as_mut()
                    .and_then(|unprocessed| unprocessed.remove(&self.table))
                    .map(|left| left.keys)
                    .unwrap_or_default();
            }
        }
        Ok(records)
    }
}

impl KeptRequestStore for DynamoStateStore {
    fn keep_request<'a>(
        &'a self,
        request: &'a KeptRequest,
        keep: usize,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let Some(keep) = kept_window(request, keep)? else {
                return Ok(());
            };
            let trigger_id = request.trigger_id.as_str();
            let kept = KeptKey::of(request);
            let [request_item, key_item] = kept.items(trigger_id);
            // The request before its key: a key never names a request not yet written.
            self.put(record_item(request, request_item)?).await?;
            self.put(record_item(&kept, key_item)?).await?;
            let stored = self.kept_keys(trigger_id).await?;
            // An evicted request and its key go at once: this runs before the trigger's
            // answer, and a key without its request is skipped by a read.
            for gone in evicted(stored, &kept, keep) {
                let [request_item, key_item] = gone.items(trigger_id);
                tokio::try_join!(self.delete(request_item), self.delete(key_item))?;
            }
            Ok(())
        })
    }

    fn list_kept_requests<'a>(
        &'a self,
        trigger_id: &'a str,
        repository: &'a str,
        now: UnixSeconds,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<KeptRequest>>> {
        Box::pin(async move {
            let mut keys = self.kept_keys(trigger_id).await?;
            keys.sort_by(|a, b| a.newest_first().cmp(&b.newest_first()));
            keys.retain(|k| k.repository == repository && k.expires_at > now);
            // A keep cut short may leave an older key of the same id: the newest stands.
            let mut ids = HashSet::new();
            keys.retain(|k| ids.insert(k.id.clone()));
            keys.truncate(limit);
            if keys.is_empty() {
                return Ok(Vec::new());
            }
            let items = keys
                .iter()
                .map(|k| {
                    let [request_item, _] = k.items(trigger_id);
                    request_item
                })
                .collect();
            let mut requests: Vec<KeptRequest> = self.batch_get(items).await?;
            // Read after the keys: a request may have expired or been replaced since.
            requests.retain(|r| {
                r.trigger_id == trigger_id && r.repository == repository && !r.is_expired(now)
            });
            requests.sort_by(|a, b| (b.received_at, &b.id).cmp(&(a.received_at, &a.id)));
            Ok(requests)
        })
    }

    fn purge_kept_requests<'a>(&'a self, trigger_id: &'a str) -> BoxFuture<'a, StoreResult<usize>> {
        Box::pin(async move {
            let mut purged = 0;
            for gone in self.kept_keys(trigger_id).await? {
                let [request_item, key_item] = gone.items(trigger_id);
                if self.delete_existing(request_item).await? {
                    purged += 1;
                }
                self.delete(key_item).await?;
            }
            Ok(purged)
        })
    }

    fn sweep_kept_requests(&self, _now: UnixSeconds) -> BoxFuture<'_, StoreResult<usize>> {
        // The table's TTL on `expires_at` deletes them.
        Box::pin(async { Ok(0) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(received_at: UnixSeconds, id: &str) -> KeptKey {
        KeptKey {
            received_at,
            id: id.into(),
            repository: "octo/agents".into(),
            expires_at: KeptRequest::expiry_of(received_at),
        }
    }

    fn ids(keys: &[KeptKey]) -> Vec<&str> {
        keys.iter().map(|k| k.id.as_str()).collect()
    }

    #[test]
    fn a_keep_into_a_full_window_pushes_out_the_oldest() {
        let mut stored: Vec<KeptKey> = (0..21).map(|i| at(100 + i, &format!("r{i:02}"))).collect();
        let kept = stored[20].clone();
        assert_eq!(ids(&evicted(stored.clone(), &kept, 20)), ["r00"]);
        // A smaller window pushes out more, oldest last.
        assert_eq!(
            ids(&evicted(stored.clone(), &kept, 18)),
            ["r02", "r01", "r00"]
        );
        stored.truncate(20);
        assert!(evicted(stored, &kept, 20).is_empty());
    }

    #[test]
    fn another_key_of_the_same_id_is_replaced() {
        let kept = at(30, "a");
        let stored = vec![at(10, "a"), at(20, "b"), kept.clone()];
        assert_eq!(evicted(stored.clone(), &kept, 20), vec![at(10, "a")]);
        // The same key again replaced its own items: nothing to delete.
        let again = at(10, "a");
        let stored = vec![again.clone(), at(20, "b")];
        assert!(evicted(stored, &again, 20).is_empty());
    }

    #[test]
    fn a_request_older_than_the_whole_window_is_pushed_out_itself() {
        let kept = at(5, "old");
        let stored = vec![kept.clone(), at(10, "a"), at(20, "b")];
        assert_eq!(evicted(stored, &kept, 2), vec![kept]);
    }

    #[test]
    fn sort_keys_order_as_the_requests_came() {
        assert!(kept_suffix(99, "z") < kept_suffix(100, "a"));
        assert!(kept_suffix(100, "a") < kept_suffix(100, "b"));
    }
}
