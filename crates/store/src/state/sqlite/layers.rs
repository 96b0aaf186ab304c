//! Layer builds on SQLite: one table keyed by layer key, the version condition checked
//! inside one `IMMEDIATE` transaction. Layer builds belong to no repository: the
//! `repository` column every versioned table shares is always empty here.

use rusqlite::params;

use super::rows::{SqliteStateStore, query_body, to_json};
use super::workflows::{VersionedRow, put_versioned_row};
use crate::state::layers::{LayerBuild, LayerStore};
use crate::{BoxFuture, StoreResult};

/// Created with the rest of the schema when a file is opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS layer_builds (
    repository TEXT NOT NULL, layer_key TEXT NOT NULL, version INTEGER NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (repository, layer_key));
";

impl LayerStore for SqliteStateStore {
    fn get_layer_build<'a>(
        &'a self,
        layer_key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<LayerBuild>>> {
        let layer_key = layer_key.to_owned();
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM layer_builds WHERE repository = '' AND layer_key = ?1",
                params![layer_key],
            )
        }))
    }

    fn put_layer_build<'a>(
        &'a self,
        record: &'a LayerBuild,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let record = record.clone();
        Box::pin(async move {
            self.with_connection(move |c| {
                let row = VersionedRow {
                    table: "layer_builds",
                    key_column: "layer_key",
                    repository: "",
                    key: &record.layer_key,
                    version: record.version,
                    body: to_json(&record)?,
                };
                put_versioned_row(c, &row, expected_version, "layer build")
            })
            .await?;
            self.counters.wrote(1);
            Ok(())
        })
    }
}
