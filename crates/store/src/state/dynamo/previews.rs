//! Previews on DynamoDB, in the one table:
//! - a preview: `pk = REPO#<owner/name>`, `sk = PREVIEW#<pull request, 20 digits>#<manifest
//!   path>`, next to the repository's agents, so a repository's previews are one
//!   sort-key prefix query, in (pull request, manifest path) order. An active one is also
//!   in the project/name index `gsi1` at `PROJECT#<project>` | `PREVIEW#<name>` (beside the
//!   agents' `AGENT#<name>`); a torn-down one is written without those attributes, so the
//!   index holds only active previews (a sparse index; no new index for the table);
//! - a `preview-closed` event: `pk = PREVIEW_AUDIT#<owner/name>#<manifest path>`,
//!   `sk = PR#<pull request, 20 digits>#V#<version, 20 digits>`.
//!
//! A put is one `PutItem` conditional on the version read (read again on a lost race); a
//! teardown one `TransactWriteItems` of the record, conditional on its version, and its
//! event, conditional on none being at its key.

use serde_json::Value;

use super::workflows::expect;
use super::{DynamoStateStore, Item, key, n, project_index_pk, record_item, repo_pk, s};
use crate::state::model::{AuditEvent, UnixSeconds};
use crate::state::previews::{Preview, PreviewStatus, PreviewStore};
use crate::state::table::{GSI_PK, GSI_SK};
use crate::{BoxFuture, StoreError, StoreResult};

const PREVIEW_PREFIX: &str = "PREVIEW#";
/// How often `put_preview` reads the stored version again after a concurrent write won.
const MAX_PUT_ATTEMPTS: usize = 3;

fn preview_sk(pull_request: u64, manifest_path: &str) -> String {
    format!("{PREVIEW_PREFIX}{pull_request:020}#{manifest_path}")
}

fn name_index_sk(name: &str) -> String {
    format!("{PREVIEW_PREFIX}{name}")
}

fn events_pk(repository: &str, manifest_path: &str) -> String {
    format!("PREVIEW_AUDIT#{repository}#{manifest_path}")
}

fn event_sk(pull_request: u64, version: u64) -> String {
    format!("PR#{pull_request:020}#V#{version:020}")
}

/// A preview's item: its key and, while it is active, its project/name index attributes.
fn preview_item(preview: &Preview) -> StoreResult<Item> {
    let mut keys = key(
        repo_pk(&preview.repository),
        preview_sk(preview.pull_request, &preview.manifest_path),
    );
    if preview.status == PreviewStatus::Active {
        keys.insert(GSI_PK.into(), s(project_index_pk(&preview.project_id)));
        keys.insert(GSI_SK.into(), s(name_index_sk(&preview.name)));
    }
    record_item(preview, keys)
}

impl DynamoStateStore {
    /// One attempt of `put_preview`; `Ok(None)` when another write came between the read
    /// and the put.
    async fn try_put_preview(&self, preview: &Preview) -> StoreResult<Option<Preview>> {
        let keys = key(
            repo_pk(&preview.repository),
            preview_sk(preview.pull_request, &preview.manifest_path),
        );
        let stored: Option<Value> = self.get(keys).await?;
        let version = stored
            .as_ref()
            .map(|item| {
                item.get("version")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| StoreError::Backend {
                        operation: "decode item".into(),
                        message: "a stored preview has no version".into(),
                    })
            })
            .transpose()?;
        let written = preview.put_over(version);
        Ok(self
            .put_expecting(preview_item(&written)?, expect(version))
            .await?
            .then_some(written))
    }
}

impl PreviewStore for DynamoStateStore {
    fn put_preview<'a>(&'a self, preview: &'a Preview) -> BoxFuture<'a, StoreResult<Preview>> {
        Box::pin(async move {
            for _ in 0..MAX_PUT_ATTEMPTS {
                if let Some(written) = self.try_put_preview(preview).await? {
                    return Ok(written);
                }
            }
            Err(StoreError::Conflict(format!(
                "the preview of {}:{} for pull request #{} was written concurrently {MAX_PUT_ATTEMPTS} times",
                preview.repository, preview.manifest_path, preview.pull_request
            )))
        })
    }

    fn get_preview<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: &'a str,
        pull_request: u64,
    ) -> BoxFuture<'a, StoreResult<Option<Preview>>> {
        Box::pin(self.get(key(
            repo_pk(repository),
            preview_sk(pull_request, manifest_path),
        )))
    }

    fn list_previews<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<Preview>>> {
        Box::pin(async move {
            self.query_partition(&repo_pk(repository), Some(PREVIEW_PREFIX))
                .await
        })
    }

    fn find_preview<'a>(
        &'a self,
        project_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<Preview>>> {
        Box::pin(async move {
            let mut previews: Vec<Preview> = self
                .query_project_index(project_id, name_index_sk(name))
                .await?;
            // The index is eventually consistent: a preview torn down a moment ago may
            // still be in it.
            previews.retain(|p| p.status == PreviewStatus::Active);
            previews.sort_by(|a, b| {
                (&a.repository, a.pull_request, &a.manifest_path).cmp(&(
                    &b.repository,
                    b.pull_request,
                    &b.manifest_path,
                ))
            });
            Ok(previews)
        })
    }

    fn close_preview<'a>(
        &'a self,
        preview: &'a Preview,
        detail: &'a str,
        at: UnixSeconds,
    ) -> BoxFuture<'a, StoreResult<Option<Preview>>> {
        Box::pin(async move {
            let Some((torn, event)) = preview.torn_down(detail, at) else {
                return Ok(None);
            };
            // Stored as given: at its version, which only an active preview's write sets.
            let record = self.transact_put_if(
                preview_item(&torn)?,
                "attribute_exists(#pk) AND #v = :v",
                &[(":v", n(preview.version))],
            )?;
            let event_item = record_item(
                &event,
                key(
                    events_pk(&event.repository, &event.manifest_path),
                    event_sk(preview.pull_request, event.version),
                ),
            )?;
            let event_write = self.transact_put_if(event_item, "attribute_not_exists(#pk)", &[])?;
            // An event is at its key only once the record went past `preview.version`, so
            // either condition failing means the same: the record is not as given.
            let cancelled = self
                .transact_conditionally(vec![record, event_write])
                .await?;
            Ok(cancelled.is_none().then_some(torn))
        })
    }

    fn list_preview_events<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditEvent>>> {
        Box::pin(async move {
            self.query_partition(&events_pk(repository, manifest_path), None)
                .await
        })
    }
}
