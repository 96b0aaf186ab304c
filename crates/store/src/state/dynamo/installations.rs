//! The installations concern on DynamoDB ([`InstallationStore`]).

use super::*;
use crate::state::installations::InstallationStore;

impl InstallationStore for DynamoStateStore {
    fn get_installation(
        &self,
        installation_id: u64,
    ) -> BoxFuture<'_, StoreResult<Option<Installation>>> {
        Box::pin(self.get(key(INSTALLATIONS, installation_id.to_string())))
    }

    fn put_installation<'a>(
        &'a self,
        installation: &'a Installation,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.put(record_item(
                installation,
                key(INSTALLATIONS, installation.installation_id.to_string()),
            )?)
            .await
        })
    }

    fn delete_installation(&self, installation_id: u64) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            self.client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key(INSTALLATIONS, installation_id.to_string())))
                .send()
                .await
                .map_err(|err| map_sdk_error(DYNAMODB, "DeleteItem", err))?;
            self.counters.wrote(1);
            Ok(())
        })
    }
}
