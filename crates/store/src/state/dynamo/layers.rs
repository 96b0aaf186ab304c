//! Layer builds on DynamoDB, in the one table: `pk = LAYERS#<layer key>`, `sk = LAYERS`.
//! Every write is one conditional `PutItem` (on `version`, or on the item not existing).

use super::workflows::expect;
use super::{DynamoStateStore, key, record_item};
use crate::state::layers::{LayerBuild, LayerStore};
use crate::{BoxFuture, StoreError, StoreResult};

const LAYERS: &str = "LAYERS";

/// Spelled out, not built from [`LAYERS`]: the trigger role's `dynamodb:LeadingKeys` name
/// this prefix, and scripts/deploy_smoke.py finds it here as a literal (docs/deploy.md).
fn layers_pk(layer_key: &str) -> String {
    format!("LAYERS#{layer_key}")
}

impl LayerStore for DynamoStateStore {
    fn get_layer_build<'a>(
        &'a self,
        layer_key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<LayerBuild>>> {
        Box::pin(async move { self.get(key(layers_pk(layer_key), LAYERS.to_owned())).await })
    }

    fn put_layer_build<'a>(
        &'a self,
        record: &'a LayerBuild,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let keys = key(layers_pk(&record.layer_key), LAYERS.to_owned());
            let item = record_item(record, keys)?;
            if self.put_expecting(item, expect(expected_version)).await? {
                return Ok(());
            }
            Err(StoreError::Conflict(format!(
                "layer build {} is not at version {expected_version:?}",
                record.layer_key
            )))
        })
    }
}
