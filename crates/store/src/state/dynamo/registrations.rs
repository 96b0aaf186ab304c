//! The registrations concern on DynamoDB ([`RegistrationStore`]).

use super::*;
use crate::state::registrations::RegistrationStore;

impl RegistrationStore for DynamoStateStore {
    fn get_registration<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<RepoRegistration>>> {
        Box::pin(self.get_whole_registration(repository))
    }

    fn put_registration<'a>(
        &'a self,
        registration: &'a RepoRegistration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let mut attempt = 1;
            loop {
                match self.try_put_registration(registration).await {
                    // Another writer changed the repository's registrations between the read
                    // and the write: check again against what it wrote.
                    Err(StoreError::Conflict(_)) if attempt < MAX_REGISTRATION_ATTEMPTS => {
                        attempt += 1;
                    }
                    result => return result,
                }
            }
        })
    }

    fn list_registrations(&self) -> BoxFuture<'_, StoreResult<Vec<RepoRegistration>>> {
        Box::pin(async move {
            let items: Vec<StoredRegistration> = self.query_partition(REGISTRATIONS, None).await?;
            let mut registrations = Vec::with_capacity(items.len());
            for StoredRegistration { sk, registration } in items {
                let legacy = sk == registration.repository && registration.manifest_path.is_some();
                if !legacy {
                    registrations.push(registration);
                } else if let Some(migrated) = self
                    .get_whole_registration(&registration.repository)
                    .await?
                {
                    registrations.push(migrated);
                }
            }
            registrations.sort_by(|a, b| {
                (&a.repository, &a.manifest_path).cmp(&(&b.repository, &b.manifest_path))
            });
            Ok(registrations)
        })
    }

    fn list_repository_registrations<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<RepoRegistration>>> {
        Box::pin(self.registrations_of(repository))
    }

    fn delete_registration<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.delete_returning(key(
            REGISTRATIONS,
            registration_sk(repository, manifest_path),
        )))
    }

    fn record_last_sync<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: Option<&'a str>,
        last_sync: &'a LastSync,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.try_record_last_sync(repository, manifest_path, last_sync))
    }

    fn get_synced_commit<'a>(
        &'a self,
        repository: &'a str,
        ref_name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SyncedCommit>>> {
        Box::pin(self.get(key(repo_pk(repository), format!("REF#{ref_name}"))))
    }
}
