//! Config packages on DynamoDB, in the one table: `pk = REPO#<repository>`,
//! `sk = CONFIG#<manifest path>` (next to the repository's agents and workspaces). Every
//! write is one conditional `PutItem` (on `version`, or on the item not existing).

use super::workflows::expect;
use super::{DynamoStateStore, key, record_item, repo_pk};
use crate::state::configs::{ConfigPackage, ConfigPackageStore};
use crate::{BoxFuture, StoreError, StoreResult};

fn config_sk(manifest_path: &str) -> String {
    format!("CONFIG#{manifest_path}")
}

impl ConfigPackageStore for DynamoStateStore {
    fn get_config_package<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<ConfigPackage>>> {
        Box::pin(async move {
            self.get(key(repo_pk(repository), config_sk(manifest_path)))
                .await
        })
    }

    fn put_config_package<'a>(
        &'a self,
        record: &'a ConfigPackage,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let keys = key(
                repo_pk(&record.repository),
                config_sk(&record.manifest_path),
            );
            let item = record_item(record, keys)?;
            if self.put_expecting(item, expect(expected_version)).await? {
                return Ok(());
            }
            Err(StoreError::Conflict(format!(
                "config package {}:{} is not at version {expected_version:?}",
                record.repository, record.manifest_path
            )))
        })
    }
}
