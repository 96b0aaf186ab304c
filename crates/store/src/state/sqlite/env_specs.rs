//! The env specs concern on SQLite ([`EnvSpecStore`]).

use super::*;
use crate::state::env_specs::EnvSpecStore;

impl EnvSpecStore for SqliteStateStore {
    fn put_env_spec<'a>(&'a self, spec: &'a EnvSpec) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let values = vec![text(&spec.name), text(to_json(spec)?)];
            self.write_row(
                "INSERT OR REPLACE INTO env_specs (name, body) VALUES (?1, ?2)",
                values,
            )
            .await
        })
    }

    fn get_env_spec<'a>(&'a self, name: &'a str) -> BoxFuture<'a, StoreResult<Option<EnvSpec>>> {
        let name = name.to_owned();
        Box::pin(
            self.read(move |c| query_body(c, "SELECT body FROM env_specs WHERE name = ?1", [name])),
        )
    }

    fn list_env_specs(&self) -> BoxFuture<'_, StoreResult<Vec<EnvSpec>>> {
        Box::pin(self.read(|c| query_bodies(c, "SELECT body FROM env_specs ORDER BY name", [])))
    }
}
