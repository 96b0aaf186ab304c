//! The agents concern on SQLite ([`AgentStore`]).

use super::*;
use crate::state::agents::AgentStore;
use crate::state::kept_requests::purge_deleted_bindings;

impl AgentStore for SqliteStateStore {
    fn get_agent<'a>(&'a self, key: &'a AgentKey) -> BoxFuture<'a, StoreResult<Option<Agent>>> {
        let key = [key.repository.clone(), key.manifest_path.clone()];
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM agents WHERE repository = ?1 AND manifest_path = ?2",
                key,
            )
        }))
    }

    fn list_agents<'a>(&'a self, repository: &'a str) -> BoxFuture<'a, StoreResult<Vec<Agent>>> {
        let repository = repository.to_owned();
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM agents WHERE repository = ?1 ORDER BY manifest_path",
                [repository],
            )
        }))
    }

    fn find_agents<'a>(
        &'a self,
        project_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<Agent>>> {
        let key = [project_id.to_owned(), name.to_owned()];
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM agents WHERE project_id = ?1 AND name = ?2 ORDER BY repository, manifest_path",
                key,
            )
        }))
    }

    fn apply(&self, changes: ChangeSet) -> BoxFuture<'_, StoreResult<ApplyReport>> {
        Box::pin(async move {
            changes.validate()?;
            if changes.is_empty() {
                return Ok(ApplyReport::default());
            }
            let agents_written = changes.agents.len();
            let (items_written, changes) = self
                .with_connection(move |c| {
                    apply_in_transaction(c, &changes).map(|written| (written, changes))
                })
                .await?;
            self.counters.wrote(items_written);
            self.counters.transaction();
            purge_deleted_bindings(self, &changes.agents).await;
            Ok(ApplyReport {
                agents_written,
                items_written,
                transactions: 1,
            })
        })
    }

    fn list_audit_events<'a>(
        &'a self,
        key: &'a AgentKey,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditEvent>>> {
        let key = [key.repository.clone(), key.manifest_path.clone()];
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM audit_events WHERE repository = ?1 AND manifest_path = ?2 ORDER BY version",
                key,
            )
        }))
    }
}
