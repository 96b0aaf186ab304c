//! Workspace registrations and drift acceptances on DynamoDB, in the one table:
//! - a workspace: `pk = REPO#<repository>`, `sk = WORKSPACE#<id>` (next to the
//!   repository's agents and workflows);
//! - an acceptance: `pk = ACCEPTED#<repository>#<head sha>`, `sk = <manifest path>`.
//!
//! Every write is one conditional `PutItem` (on `version`, or on the item not existing).

use super::workflows::expect;
use super::{DynamoStateStore, key, record_item, repo_pk};
use crate::state::model::AuditEvent;
use crate::state::workspaces::{WorkspaceRecord, WorkspaceStore};
use crate::{BoxFuture, StoreError, StoreResult};

const WORKSPACE_PREFIX: &str = "WORKSPACE#";

fn workspace_sk(id: &str) -> String {
    format!("{WORKSPACE_PREFIX}{id}")
}

fn accepted_pk(repository: &str, head_sha: &str) -> String {
    format!("ACCEPTED#{repository}#{head_sha}")
}

impl WorkspaceStore for DynamoStateStore {
    fn list_workspaces<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<WorkspaceRecord>>> {
        Box::pin(async move {
            self.query_partition(&repo_pk(repository), Some(WORKSPACE_PREFIX))
                .await
        })
    }

    fn put_workspace<'a>(
        &'a self,
        record: &'a WorkspaceRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let keys = key(repo_pk(&record.repository), workspace_sk(&record.id));
            let item = record_item(record, keys)?;
            if self.put_expecting(item, expect(expected_version)).await? {
                return Ok(());
            }
            Err(StoreError::Conflict(format!(
                "workspace {}:{} is not at version {expected_version:?}",
                record.repository, record.id
            )))
        })
    }

    fn accept_drift<'a>(&'a self, event: &'a AuditEvent) -> BoxFuture<'a, StoreResult<AuditEvent>> {
        Box::pin(async move {
            let keys = key(
                accepted_pk(&event.repository, &event.commit),
                event.manifest_path.as_str(),
            );
            let what = || {
                format!(
                    "the drift acceptance of {} at {}",
                    event.manifest_path, event.commit
                )
            };
            self.put_once(event, keys, what).await
        })
    }

    fn list_drift_acceptances<'a>(
        &'a self,
        repository: &'a str,
        head_sha: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditEvent>>> {
        Box::pin(async move {
            self.query_partition(&accepted_pk(repository, head_sha), None)
                .await
        })
    }
}
