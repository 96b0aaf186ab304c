//! Previews on SQLite: `previews` keyed by (repository, pull request, manifest path), so a
//! repository's listing is one range of the key in its order, with its project and name
//! indexed for look-ups by name; their `preview-closed` events in `preview_events`, keyed by
//! (repository, manifest path, pull request, version).
//!
//! The tables are created with the rest of the schema whenever a file is opened, so a file
//! written before previews existed gets them, empty, on its first open (nothing to
//! backfill, hence no `user_version` step).

use rusqlite::{Connection, params};

use super::connection::atomic;
use super::error::sql_error;
use super::rows::{SqliteStateStore, integer, query_bodies, query_body, to_json};
use crate::state::model::{AuditEvent, UnixSeconds};
use crate::state::previews::{Preview, PreviewStatus, PreviewStore};
use crate::{BoxFuture, StoreError, StoreResult};

/// Created with the rest of the schema when a file is opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS previews (
    repository TEXT NOT NULL, pull_request INTEGER NOT NULL, manifest_path TEXT NOT NULL,
    project_id TEXT NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL,
    version INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (repository, pull_request, manifest_path));
CREATE INDEX IF NOT EXISTS previews_by_project_name ON previews (project_id, name);
CREATE TABLE IF NOT EXISTS preview_events (
    repository TEXT NOT NULL, manifest_path TEXT NOT NULL, pull_request INTEGER NOT NULL,
    version INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (repository, manifest_path, pull_request, version));
";

/// The stored preview of (repository, manifest path, pull request), if there is one.
fn stored_preview(
    connection: &Connection,
    repository: &str,
    manifest_path: &str,
    pull_request: u64,
) -> StoreResult<Option<Preview>> {
    query_body(
        connection,
        "SELECT body FROM previews
         WHERE repository = ?1 AND pull_request = ?2 AND manifest_path = ?3",
        params![repository, integer(pull_request)?, manifest_path],
    )
}

/// Replaces the row of `preview`'s key.
fn write_preview(connection: &Connection, preview: &Preview) -> StoreResult<()> {
    let (pull_request, version) = (integer(preview.pull_request)?, integer(preview.version)?);
    let body = to_json(preview)?;
    connection
        .prepare_cached(
            "INSERT OR REPLACE INTO previews
             (repository, pull_request, manifest_path, project_id, name, status, version, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                preview.repository,
                pull_request,
                preview.manifest_path,
                preview.project_id,
                preview.name,
                preview.status.as_str(),
                version,
                body,
            ])
        })
        .map_err(sql_error)?;
    Ok(())
}

/// `put_preview` in one atomic unit: the stored version read and the row replaced.
fn put_preview_row(connection: &mut Connection, preview: &Preview) -> StoreResult<Preview> {
    let unit = atomic(connection)?;
    let stored = stored_preview(
        &unit,
        &preview.repository,
        &preview.manifest_path,
        preview.pull_request,
    )?;
    let written = preview.put_over(stored.map(|p| p.version));
    write_preview(&unit, &written)?;
    unit.commit().map_err(sql_error)?;
    Ok(written)
}

/// `close_preview` in one atomic unit; `Ok(None)` (nothing written) when the stored row is
/// not `preview` as given.
fn close_preview_row(
    connection: &mut Connection,
    preview: &Preview,
    detail: &str,
    at: UnixSeconds,
) -> StoreResult<Option<Preview>> {
    let Some((torn, event)) = preview.torn_down(detail, at) else {
        return Ok(None);
    };
    let unit = atomic(connection)?;
    let stored = stored_preview(
        &unit,
        &preview.repository,
        &preview.manifest_path,
        preview.pull_request,
    )?;
    let as_given = stored
        .as_ref()
        .is_some_and(|s| s.version == preview.version && s.status == PreviewStatus::Active);
    if !as_given {
        return Ok(None);
    }
    write_preview(&unit, &torn)?;
    let inserted = unit
        .execute(
            "INSERT INTO preview_events (repository, manifest_path, pull_request, version, body)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
            params![
                event.repository,
                event.manifest_path,
                integer(preview.pull_request)?,
                integer(event.version)?,
                to_json(&event)?
            ],
        )
        .map_err(sql_error)?;
    if inserted == 0 {
        // Dropping the unit rolls the record back with it.
        return Err(StoreError::Conflict(format!(
            "the preview-closed event {} of {}:{} (pull request #{}) exists",
            event.version, preview.repository, preview.manifest_path, preview.pull_request
        )));
    }
    unit.commit().map_err(sql_error)?;
    Ok(Some(torn))
}

impl PreviewStore for SqliteStateStore {
    fn put_preview<'a>(&'a self, preview: &'a Preview) -> BoxFuture<'a, StoreResult<Preview>> {
        let preview = preview.clone();
        Box::pin(async move {
            let written = self
                .with_connection(move |c| put_preview_row(c, &preview))
                .await?;
            self.counters.wrote(1);
            Ok(written)
        })
    }

    fn get_preview<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: &'a str,
        pull_request: u64,
    ) -> BoxFuture<'a, StoreResult<Option<Preview>>> {
        let (repository, manifest_path) = (repository.to_owned(), manifest_path.to_owned());
        Box::pin(self.read(move |c| stored_preview(c, &repository, &manifest_path, pull_request)))
    }

    fn list_previews<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<Preview>>> {
        let repository = repository.to_owned();
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM previews WHERE repository = ?1
                 ORDER BY pull_request, manifest_path",
                params![repository],
            )
        }))
    }

    fn find_preview<'a>(
        &'a self,
        project_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<Preview>>> {
        let (project_id, name) = (project_id.to_owned(), name.to_owned());
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM previews
                 WHERE project_id = ?1 AND name = ?2 AND status = 'active'
                 ORDER BY repository, pull_request, manifest_path",
                params![project_id, name],
            )
        }))
    }

    fn close_preview<'a>(
        &'a self,
        preview: &'a Preview,
        detail: &'a str,
        at: UnixSeconds,
    ) -> BoxFuture<'a, StoreResult<Option<Preview>>> {
        let (preview, detail) = (preview.clone(), detail.to_owned());
        Box::pin(async move {
            let torn = self
                .with_connection(move |c| close_preview_row(c, &preview, &detail, at))
                .await?;
            if torn.is_some() {
                // The record and its event.
                self.counters.wrote(2);
            }
            Ok(torn)
        })
    }

    fn list_preview_events<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditEvent>>> {
        let (repository, manifest_path) = (repository.to_owned(), manifest_path.to_owned());
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM preview_events WHERE repository = ?1 AND manifest_path = ?2
                 ORDER BY pull_request, version",
                params![repository, manifest_path],
            )
        }))
    }
}
