//! The bindings concern on DynamoDB ([`TriggerBindingStore`]).

use super::*;
use crate::state::bindings::TriggerBindingStore;

impl TriggerBindingStore for DynamoStateStore {
    fn get_trigger_binding<'a>(
        &'a self,
        trigger_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TriggerBinding>>> {
        Box::pin(self.get(key(TRIGGERS, trigger_id)))
    }

    fn list_trigger_bindings(&self) -> BoxFuture<'_, StoreResult<Vec<TriggerBinding>>> {
        Box::pin(self.query_partition(TRIGGERS, None))
    }

    fn list_repository_trigger_bindings<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TriggerBinding>>> {
        Box::pin(async move {
            self.ensure_repository_trigger_copies().await?;
            self.query_partition(&repo_pk(repository), Some(REPO_TRIGGER_PREFIX))
                .await
        })
    }

    fn list_event_trigger_bindings<'a>(
        &'a self,
        repository: &'a str,
        event: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TriggerBinding>>> {
        Box::pin(async move {
            // A name that is never indexed has no copies: no read at all.
            if !is_event_name(event) {
                return Ok(Vec::new());
            }
            let (partition, prefix) = (repo_pk(repository), event_trigger_prefix(event));
            let query = self.query_partition(&partition, Some(&prefix));
            let mut bindings: Vec<TriggerBinding> = if self.event_copies_known() {
                query.await?
            } else {
                // A process's first read by event: the migration marker is read alongside
                // the query (one round trip before a cold start's first answer, not two);
                // the query is trusted once the marker says the table is migrated.
                let (migrated, found) = tokio::join!(self.event_copies_migrated(), query);
                if migrated? {
                    found?
                } else {
                    self.ensure_event_trigger_copies().await?;
                    self.query_partition(&partition, Some(&prefix)).await?
                }
            };
            // Defensive: a copy whose record no longer lists the event is not a match.
            bindings.retain(|binding| binding.lists_event(event));
            Ok(bindings)
        })
    }
}
