//! Config packages on SQLite: one table keyed like the DynamoDB items, the version
//! condition checked inside one `IMMEDIATE` transaction.

use rusqlite::params;

use super::rows::{SqliteStateStore, query_body, to_json};
use super::workflows::{VersionedRow, put_versioned_row};
use crate::state::configs::{ConfigPackage, ConfigPackageStore};
use crate::{BoxFuture, StoreResult};

/// Created with the rest of the schema when a file is opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS config_packages (
    repository TEXT NOT NULL, manifest_path TEXT NOT NULL, version INTEGER NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (repository, manifest_path));
";

impl ConfigPackageStore for SqliteStateStore {
    fn get_config_package<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<ConfigPackage>>> {
        let (repository, manifest_path) = (repository.to_owned(), manifest_path.to_owned());
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM config_packages WHERE repository = ?1 AND manifest_path = ?2",
                params![repository, manifest_path],
            )
        }))
    }

    fn put_config_package<'a>(
        &'a self,
        record: &'a ConfigPackage,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let record = record.clone();
        Box::pin(async move {
            self.with_connection(move |c| {
                let row = VersionedRow {
                    table: "config_packages",
                    key_column: "manifest_path",
                    repository: &record.repository,
                    key: &record.manifest_path,
                    version: record.version,
                    body: to_json(&record)?,
                };
                put_versioned_row(c, &row, expected_version, "config package")
            })
            .await?;
            self.counters.wrote(1);
            Ok(())
        })
    }
}
