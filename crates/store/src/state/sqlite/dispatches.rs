//! The dispatches concern on SQLite ([`DispatchStore`]).

use super::*;
use crate::state::dispatches::DispatchStore;

impl DispatchStore for SqliteStateStore {
    fn record_dispatch<'a>(
        &'a self,
        dispatch: &'a Dispatch,
    ) -> BoxFuture<'a, StoreResult<DispatchOutcome>> {
        let dispatch = dispatch.clone();
        Box::pin(async move {
            let (outcome, written) = self
                .with_connection(move |c| tasks::insert_dispatch(c, &dispatch))
                .await?;
            self.counters.wrote(written);
            Ok(outcome)
        })
    }

    fn get_dispatch<'a>(
        &'a self,
        idempotency_key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<Dispatch>>> {
        let key = idempotency_key.to_owned();
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM dispatches WHERE idempotency_key = ?1",
                [key],
            )
        }))
    }

    fn list_dispatches(&self) -> BoxFuture<'_, StoreResult<Vec<Dispatch>>> {
        Box::pin(async move {
            let mut dispatches: Vec<Dispatch> = self
                .read(|c| query_bodies(c, "SELECT body FROM dispatches", []))
                .await?;
            crate::state::dispatches::newest_first(&mut dispatches);
            Ok(dispatches)
        })
    }
}
