//! Workspace registrations and drift acceptances on SQLite: one table each, keyed like
//! the DynamoDB items, conditions checked inside one `IMMEDIATE` transaction.

use rusqlite::{Connection, params};

use super::rows::{SqliteStateStore, query_bodies, to_json};
use super::workflows::{VersionedRow, insert_once, put_versioned_row};
use crate::state::model::AuditEvent;
use crate::state::workspaces::{WorkspaceRecord, WorkspaceStore};
use crate::{BoxFuture, StoreResult};

/// Created with the rest of the schema when a file is opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS workspaces (
    repository TEXT NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (repository, id));
CREATE TABLE IF NOT EXISTS drift_acceptances (
    repository TEXT NOT NULL, commit_sha TEXT NOT NULL, manifest_path TEXT NOT NULL,
    body TEXT NOT NULL, PRIMARY KEY (repository, commit_sha, manifest_path));
";

fn put_workspace_row(
    connection: &mut Connection,
    record: &WorkspaceRecord,
    expected: Option<u64>,
) -> StoreResult<()> {
    let row = VersionedRow {
        table: "workspaces",
        key_column: "id",
        repository: &record.repository,
        key: &record.id,
        version: record.version,
        body: to_json(record)?,
    };
    put_versioned_row(connection, &row, expected, "workspace")
}

/// Inserts the acceptance unless its key has one; returns the stored one and rows written.
fn accept_drift_row(
    connection: &mut Connection,
    event: &AuditEvent,
) -> StoreResult<(AuditEvent, u64)> {
    let body = to_json(event)?;
    insert_once(
        connection,
        "INSERT INTO drift_acceptances (repository, commit_sha, manifest_path, body)
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
        params![event.repository, event.commit, event.manifest_path, body],
        "SELECT body FROM drift_acceptances
         WHERE repository = ?1 AND commit_sha = ?2 AND manifest_path = ?3",
        params![event.repository, event.commit, event.manifest_path],
    )
}

impl WorkspaceStore for SqliteStateStore {
    fn list_workspaces<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<WorkspaceRecord>>> {
        let repository = repository.to_owned();
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM workspaces WHERE repository = ?1 ORDER BY id",
                params![repository],
            )
        }))
    }

    fn put_workspace<'a>(
        &'a self,
        record: &'a WorkspaceRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let record = record.clone();
        Box::pin(async move {
            self.with_connection(move |c| put_workspace_row(c, &record, expected_version))
                .await?;
            self.counters.wrote(1);
            Ok(())
        })
    }

    fn accept_drift<'a>(&'a self, event: &'a AuditEvent) -> BoxFuture<'a, StoreResult<AuditEvent>> {
        let event = event.clone();
        Box::pin(async move {
            let (stored, written) = self
                .with_connection(move |c| accept_drift_row(c, &event))
                .await?;
            self.counters.wrote(written);
            Ok(stored)
        })
    }

    fn list_drift_acceptances<'a>(
        &'a self,
        repository: &'a str,
        head_sha: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditEvent>>> {
        let (repository, head_sha) = (repository.to_owned(), head_sha.to_owned());
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM drift_acceptances WHERE repository = ?1 AND commit_sha = ?2
                 ORDER BY manifest_path",
                params![repository, head_sha],
            )
        }))
    }
}
