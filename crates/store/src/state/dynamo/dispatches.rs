//! The dispatches concern on DynamoDB ([`DispatchStore`]).

use super::*;
use crate::state::dispatches::DispatchStore;

impl DispatchStore for DynamoStateStore {
    fn record_dispatch<'a>(
        &'a self,
        dispatch: &'a Dispatch,
    ) -> BoxFuture<'a, StoreResult<DispatchOutcome>> {
        Box::pin(async move {
            let dispatch_key = key(dispatch_pk(&dispatch.idempotency_key), "DISPATCH");
            let mut writes = vec![(
                self.put_if_absent(record_item(dispatch, dispatch_key.clone())?)?,
                format!("dispatch {}", dispatch.idempotency_key),
            )];
            if !dispatch.task_id.is_empty() {
                writes.extend(self.task_writes(dispatch)?);
            }
            let (writes, names): (Vec<_>, Vec<_>) = writes.into_iter().unzip();
            match self.transact(writes, &names).await {
                Ok(()) => return Ok(DispatchOutcome::New),
                Err(StoreError::Conflict(_)) => {}
                Err(other) => return Err(other),
            }
            let existing: Dispatch = self.get(dispatch_key).await?.ok_or_else(|| {
                StoreError::Conflict(format!(
                    "dispatch {} was refused, but no dispatch has its key",
                    dispatch.id
                ))
            })?;
            Ok(DispatchOutcome::Existing(existing.id))
        })
    }

    fn get_dispatch<'a>(
        &'a self,
        idempotency_key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<Dispatch>>> {
        Box::pin(self.get(key(dispatch_pk(idempotency_key), "DISPATCH")))
    }

    fn list_dispatches(&self) -> BoxFuture<'_, StoreResult<Vec<Dispatch>>> {
        Box::pin(async move {
            // No partition holds every dispatch: a Scan for the items whose sort key is
            // `DISPATCH` (an operator's listing, never a request path).
            let scan = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .filter_expression("#sk = :sk")
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":sk", s("DISPATCH"));
            let mut dispatches: Vec<Dispatch> = self.scan_all(scan).await?;
            crate::state::dispatches::newest_first(&mut dispatches);
            Ok(dispatches)
        })
    }
}
