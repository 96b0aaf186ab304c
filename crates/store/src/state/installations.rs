//! The GitHub App's installations, as its `installation` and `installation_repositories` webhooks report them.
//!
//! One concern of the state store: [`StateStore`](super::StateStore) is the union of
//! the concerns; its contract suite is `crates/store/tests/it/installation_contract.rs`, run on
//! SQLite and DynamoDB.

use super::model::Installation;
use crate::{BoxFuture, StoreResult};

/// The GitHub App's installations, as its `installation` and `installation_repositories` webhooks report them. Dyn-compatible.
pub trait InstallationStore: Send + Sync {
    /// An installation.
    fn get_installation(
        &self,
        installation_id: u64,
    ) -> BoxFuture<'_, StoreResult<Option<Installation>>>;

    /// Creates or replaces an installation.
    fn put_installation<'a>(
        &'a self,
        installation: &'a Installation,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// Deletes an installation (GitHub's `installation.deleted`); absent is fine.
    fn delete_installation(&self, installation_id: u64) -> BoxFuture<'_, StoreResult<()>>;
}
