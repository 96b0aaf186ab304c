//! The installations concern on SQLite ([`InstallationStore`]).

use super::*;
use crate::state::installations::InstallationStore;

impl InstallationStore for SqliteStateStore {
    fn get_installation(
        &self,
        installation_id: u64,
    ) -> BoxFuture<'_, StoreResult<Option<Installation>>> {
        Box::pin(async move {
            let id = integer(installation_id)?;
            self.read(move |c| {
                query_body(
                    c,
                    "SELECT body FROM installations WHERE installation_id = ?1",
                    [id],
                )
            })
            .await
        })
    }

    fn put_installation<'a>(
        &'a self,
        installation: &'a Installation,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let values = vec![
                integer(installation.installation_id)?,
                text(to_json(installation)?),
            ];
            self.write_row(
                "INSERT OR REPLACE INTO installations (installation_id, body) VALUES (?1, ?2)",
                values,
            )
            .await
        })
    }

    fn delete_installation(&self, installation_id: u64) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let values = vec![integer(installation_id)?];
            self.write_row(
                "DELETE FROM installations WHERE installation_id = ?1",
                values,
            )
            .await
        })
    }
}
