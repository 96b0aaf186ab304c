//! Env specs: the named runtime environments a project's agents may be dispatched into.
//!
//! One concern of the state store: [`StateStore`](super::StateStore) is the union of
//! the concerns; its contract suite is `crates/store/tests/it/env_spec_contract.rs`, run on
//! SQLite and DynamoDB.

use super::model::EnvSpec;
use crate::{BoxFuture, StoreResult};

/// Env specs: the named runtime environments a project's agents may be dispatched into. Dyn-compatible.
pub trait EnvSpecStore: Send + Sync {
    /// Creates or replaces an env spec.
    fn put_env_spec<'a>(&'a self, spec: &'a EnvSpec) -> BoxFuture<'a, StoreResult<()>>;

    /// An env spec by name.
    fn get_env_spec<'a>(&'a self, name: &'a str) -> BoxFuture<'a, StoreResult<Option<EnvSpec>>>;

    /// Every env spec, ordered by name.
    fn list_env_specs(&self) -> BoxFuture<'_, StoreResult<Vec<EnvSpec>>>;
}
