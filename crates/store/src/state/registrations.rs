//! Repository registrations (which repository, or which manifest of it, is registered, for which project and ref) and the commit each registered ref was last synced to.
//!
//! One concern of the state store: [`StateStore`](super::StateStore) is the union of
//! the concerns; its contract suite is `crates/store/tests/it/registration_contract.rs`, run on
//! SQLite and DynamoDB.

use super::model::{LastSync, RepoRegistration, SyncedCommit};
use crate::{BoxFuture, StoreResult};

/// Repository registrations (which repository, or which manifest of it, is registered, for which project and ref) and the commit each registered ref was last synced to. Dyn-compatible.
pub trait RegistrationStore: Send + Sync {
    /// The registration of a repository that covers every manifest (`manifest_path` is
    /// `None`), if there is one. A repository registered per manifest has none: use
    /// [`RegistrationStore::list_repository_registrations`].
    fn get_registration<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<RepoRegistration>>>;

    /// Creates or replaces the registration with the same (repository, manifest path).
    /// Refuses, writing nothing, one that overlaps another registration of the repository
    /// ([`StoreError::Overlap`]); the check and the write are atomic against concurrent
    /// writers (a lost race is a `Conflict`).
    fn put_registration<'a>(
        &'a self,
        registration: &'a RepoRegistration,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// Every registration, ordered by repository, then manifest path (the registration of
    /// every manifest first).
    fn list_registrations(&self) -> BoxFuture<'_, StoreResult<Vec<RepoRegistration>>>;

    /// The registrations of one repository, ordered by manifest path (the registration of
    /// every manifest first): a keyed read.
    fn list_repository_registrations<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<RepoRegistration>>>;

    /// Deletes the registration (repository, manifest path); `Ok(false)` when there was none.
    /// Its agents stay registered as they are: a sync no longer applies their manifests.
    fn delete_registration<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// Sets the [`RepoRegistration::last_sync`] of the registration (repository, manifest
    /// path), leaving the rest of it as stored. Never creates one: `Ok(false)` when there is
    /// none, or (DynamoDB) when it was written or deleted concurrently (the next sync records
    /// it again). One row, or one conditional transaction: a sync never brings back a
    /// registration an operator removed meanwhile.
    fn record_last_sync<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: Option<&'a str>,
        last_sync: &'a LastSync,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// The last applied commit of a repository's ref.
    fn get_synced_commit<'a>(
        &'a self,
        repository: &'a str,
        ref_name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SyncedCommit>>>;
}
