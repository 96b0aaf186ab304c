//! The bindings concern on SQLite ([`TriggerBindingStore`]).

use super::*;
use crate::state::bindings::TriggerBindingStore;

impl TriggerBindingStore for SqliteStateStore {
    fn get_trigger_binding<'a>(
        &'a self,
        trigger_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TriggerBinding>>> {
        let trigger_id = trigger_id.to_owned();
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM trigger_bindings WHERE trigger_id = ?1",
                [trigger_id],
            )
        }))
    }

    fn list_trigger_bindings(&self) -> BoxFuture<'_, StoreResult<Vec<TriggerBinding>>> {
        Box::pin(self.read(|c| {
            query_bodies(
                c,
                "SELECT body FROM trigger_bindings ORDER BY trigger_id",
                [],
            )
        }))
    }

    fn list_repository_trigger_bindings<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TriggerBinding>>> {
        let repository = repository.to_owned();
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM trigger_bindings WHERE repository = ?1 ORDER BY trigger_id",
                [repository],
            )
        }))
    }

    fn list_event_trigger_bindings<'a>(
        &'a self,
        repository: &'a str,
        event: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TriggerBinding>>> {
        let (repository, event) = (repository.to_owned(), event.to_owned());
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT b.body FROM trigger_binding_events e
                 JOIN trigger_bindings b ON b.trigger_id = e.trigger_id
                 WHERE e.repository = ?1 AND e.event = ?2 ORDER BY e.trigger_id",
                [repository, event],
            )
        }))
    }
}
