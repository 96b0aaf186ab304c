//! The registrations concern on SQLite ([`RegistrationStore`]).

use super::*;
use crate::state::registrations::RegistrationStore;

impl RegistrationStore for SqliteStateStore {
    fn get_registration<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<RepoRegistration>>> {
        let repository = repository.to_owned();
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM repository_registrations WHERE repository = ?1 AND manifest_path = ''",
                [repository],
            )
        }))
    }

    fn put_registration<'a>(
        &'a self,
        registration: &'a RepoRegistration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let registration = registration.clone();
        Box::pin(async move {
            self.with_connection(move |c| put_registration_in_transaction(c, &registration))
                .await?;
            self.counters.wrote(1);
            Ok(())
        })
    }

    fn list_registrations(&self) -> BoxFuture<'_, StoreResult<Vec<RepoRegistration>>> {
        Box::pin(self.read(|c| {
            query_bodies(
                c,
                "SELECT body FROM repository_registrations ORDER BY repository, manifest_path",
                [],
            )
        }))
    }

    fn list_repository_registrations<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<RepoRegistration>>> {
        let repository = repository.to_owned();
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM repository_registrations WHERE repository = ?1 ORDER BY manifest_path",
                [repository],
            )
        }))
    }

    fn delete_registration<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let values = vec![text(repository), text(registration_scope(manifest_path))];
        Box::pin(async move {
            let deleted = self
                .write_rows(
                    "DELETE FROM repository_registrations WHERE repository = ?1 AND manifest_path = ?2",
                    values,
                )
                .await?;
            Ok(deleted > 0)
        })
    }

    fn record_last_sync<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: Option<&'a str>,
        last_sync: &'a LastSync,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let values = vec![
                text(repository),
                text(registration_scope(manifest_path)),
                text(to_json(last_sync)?),
            ];
            // One statement: it updates the row if it is there, and creates none.
            let updated = self
                .write_rows(
                    "UPDATE repository_registrations SET body = json_set(body, '$.last_sync', json(?3))
                     WHERE repository = ?1 AND manifest_path = ?2",
                    values,
                )
                .await?;
            Ok(updated > 0)
        })
    }

    fn get_synced_commit<'a>(
        &'a self,
        repository: &'a str,
        ref_name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SyncedCommit>>> {
        let key = [repository.to_owned(), ref_name.to_owned()];
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM synced_commits WHERE repository = ?1 AND ref_name = ?2",
                key,
            )
        }))
    }
}
