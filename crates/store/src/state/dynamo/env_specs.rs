//! The env specs concern on DynamoDB ([`EnvSpecStore`]).

use super::*;
use crate::state::env_specs::EnvSpecStore;

impl EnvSpecStore for DynamoStateStore {
    fn put_env_spec<'a>(&'a self, spec: &'a EnvSpec) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.put(record_item(spec, key(ENV_SPECS, &spec.name))?)
                .await
        })
    }

    fn get_env_spec<'a>(&'a self, name: &'a str) -> BoxFuture<'a, StoreResult<Option<EnvSpec>>> {
        Box::pin(self.get(key(ENV_SPECS, name)))
    }

    fn list_env_specs(&self) -> BoxFuture<'_, StoreResult<Vec<EnvSpec>>> {
        Box::pin(self.query_partition(ENV_SPECS, None))
    }
}
