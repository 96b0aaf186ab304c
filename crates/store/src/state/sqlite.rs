//! `sqlite:PATH`: the embedded state store (rusqlite, bundled SQLite, WAL).
//!
//! Each table keeps its key (and indexed) columns plus the record as JSON in `body`: the
//! records are owned by this crate's types, and keeping them whole avoids a second mapping
//! to maintain next to the DynamoDB one. Conditions are checked inside one savepoint per
//! call, itself inside the `IMMEDIATE` transaction that commits the calls waiting together
//! (`connection.rs`), which gives the same semantics as DynamoDB's conditional writes.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::change::{ApplyReport, ChangeSet};
use super::model::*;
use super::store::{StateStats, StateStore};
use crate::location::check_sqlite_path;
use crate::{BoxFuture, StoreError, StoreResult};
use error::sql_error;

mod agents;
mod bindings;
mod configs;
mod connection;
mod deliveries;
mod delivery_insert;
mod dispatches;
mod env_specs;
mod error;
mod installations;
mod jobs;
mod kept_requests;
mod layers;
mod outbox;
mod previews;
mod registrations;
mod rows;
mod seen_heads;
mod skills;
mod tasks;
mod workflows;
mod workspaces;

use connection::{Access, ConnectionThread, atomic};
pub use rows::SqliteStateStore;
use rows::{RecordCount, integer, query_bodies, query_body, text, to_json};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS repository_registrations (
    repository TEXT NOT NULL, manifest_path TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (repository, manifest_path));
CREATE TABLE IF NOT EXISTS synced_commits (
    repository TEXT NOT NULL, ref_name TEXT NOT NULL, commit_sha TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (repository, ref_name));
CREATE TABLE IF NOT EXISTS installations (installation_id INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS agents (
    repository TEXT NOT NULL, manifest_path TEXT NOT NULL, project_id TEXT NOT NULL,
    name TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (repository, manifest_path));
CREATE INDEX IF NOT EXISTS agents_by_project_name ON agents (project_id, name);
CREATE TABLE IF NOT EXISTS audit_events (
    repository TEXT NOT NULL, manifest_path TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (repository, manifest_path, version));
CREATE TABLE IF NOT EXISTS deliveries (
    delivery_id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued', lease_until INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS deliveries_by_expiry ON deliveries (expires_at);
CREATE TABLE IF NOT EXISTS env_specs (name TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trigger_bindings (
    trigger_id TEXT PRIMARY KEY, repository TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trigger_binding_events (
    repository TEXT NOT NULL, event TEXT NOT NULL, trigger_id TEXT NOT NULL,
    PRIMARY KEY (repository, event, trigger_id));
CREATE INDEX IF NOT EXISTS trigger_binding_events_by_id ON trigger_binding_events (trigger_id);
CREATE TABLE IF NOT EXISTS dispatches (idempotency_key TEXT PRIMARY KEY, id TEXT NOT NULL, body TEXT NOT NULL);
";

/// Version 2 keys trigger bindings by repository too (a delivery reads only its repository's
/// bindings). A version-1 file gets the column, filled from each record, when it is opened.
const MIGRATE_TRIGGER_REPOSITORY: &str = "
ALTER TABLE trigger_bindings ADD COLUMN repository TEXT NOT NULL DEFAULT '';
UPDATE trigger_bindings SET repository = json_extract(body, '$.repository');
";
/// Deliveries record where their job is (`state`, `lease_until`). A file written before
/// has rows without: they count as `succeeded`, a duplicate, as every recorded delivery
/// was then.
const MIGRATE_DELIVERY_STATE: &str = "
ALTER TABLE deliveries ADD COLUMN state TEXT NOT NULL DEFAULT 'succeeded';
ALTER TABLE deliveries ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
";
const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS trigger_bindings_by_repository ON trigger_bindings (repository, trigger_id);
";
/// Version 3 indexes `github` bindings by repository and event (`trigger_binding_events`): a
/// delivery reads only the bindings of its repository that list its event. Files of an older
/// version get the rows of their bindings when they are opened ([`index_binding_events`]).
const SCHEMA_VERSION: i64 = 3;

/// Registrations are keyed by (repository, manifest path), `''` standing for "every
/// manifest". A file written when a repository held one registration has a `registrations`
/// table keyed by repository: each of its rows becomes the registration of every manifest of
/// its repository (the `manifest_path` it recorded was never read, so every manifest was
/// applied; the migration keeps that behaviour and clears the field), and the old table is
/// dropped, in one transaction.
const MIGRATE_SINGLE_REGISTRATIONS: &str = "
INSERT OR IGNORE INTO repository_registrations (repository, manifest_path, body)
    SELECT repository, '', json_set(body, '$.manifest_path', json('null')) FROM registrations;
DROP TABLE registrations;
";

/// The key column of a registration's manifest path.
fn registration_scope(manifest_path: Option<&str>) -> String {
    manifest_path.unwrap_or_default().to_owned()
}

/// Pages the write-ahead log holds before SQLite copies them into the file.
const WAL_CHECKPOINT_PAGES: u32 = 10_000;

/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 128;

impl SqliteStateStore {
    /// Opens (creating if needed) the database at `path`, with its parent directory.
    pub async fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        let path = path.as_ref().to_owned();
        check_sqlite_path(&path)?;
        let opened = path.clone();
        let connection = ConnectionThread::start(move || open_connection(&opened)).await?;
        Ok(SqliteStateStore {
            connection,
            path,
            counters: Arc::default(),
        })
    }

    /// Runs `work`, which writes, on the connection (`connection.rs`).
    async fn with_connection<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        self.connection.call(Access::Write, work).await
    }

    async fn read<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: RecordCount + Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        self.counters.read();
        let records = self.connection.call(Access::Read, work).await?;
        self.counters.read_records(records.record_count());
        Ok(records)
    }

    /// Runs a statement that writes one row.
    async fn write_row(
        &self,
        sql: &'static str,
        values: Vec<rusqlite::types::Value>,
    ) -> StoreResult<()> {
        self.write_rows(sql, values).await.map(drop)
    }

    /// Runs a statement that writes (or deletes) rows; returns how many it wrote.
    async fn write_rows(
        &self,
        sql: &'static str,
        values: Vec<rusqlite::types::Value>,
    ) -> StoreResult<u64> {
        let written = self
            .with_connection(move |c| {
                c.prepare_cached(sql)
                    .and_then(|mut statement| statement.execute(rusqlite::params_from_iter(values)))
                    .map_err(sql_error)
            })
            .await? as u64;
        self.counters.wrote(written);
        Ok(written)
    }
}

fn open_connection(path: &Path) -> StoreResult<Connection> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|err| StoreError::io(parent, err))?;
    }
    let connection = Connection::open(path).map_err(sql_error)?;
    connection
        .busy_timeout(Duration::from_secs(5))
        .map_err(sql_error)?;
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .map_err(sql_error)?;
    connection
        .pragma_update(None, "synchronous", "NORMAL")
        .map_err(sql_error)?;
    // The log is copied back into the file every 10,000 pages (40 MiB) rather than SQLite's
    // 1,000: `serve`'s writes come in small commits to a few hot pages, which a copy every
    // 4 MiB would write and sync again and again (docs/operations.md).
    connection
        .pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)
        .map_err(sql_error)?;
    // Every statement of the hot paths (a delivery's reads, a dispatch's writes) stays
    // prepared: rusqlite's default keeps 16, fewer than the store's statements.
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    connection.execute_batch(SCHEMA).map_err(sql_error)?;
    connection
        .execute_batch(workflows::SCHEMA)
        .map_err(sql_error)?;
    connection
        .execute_batch(workspaces::SCHEMA)
        .map_err(sql_error)?;
    connection.execute_batch(tasks::SCHEMA).map_err(sql_error)?;
    connection
        .execute_batch(configs::SCHEMA)
        .map_err(sql_error)?;
    connection
        .execute_batch(seen_heads::SCHEMA)
        .map_err(sql_error)?;
    connection
        .execute_batch(previews::SCHEMA)
        .map_err(sql_error)?;
    connection
        .execute_batch(kept_requests::SCHEMA)
        .map_err(sql_error)?;
    connection
        .execute_batch(layers::SCHEMA)
        .map_err(sql_error)?;
    connection
        .execute_batch(skills::SCHEMA)
        .map_err(sql_error)?;
    connection
        .execute_batch(outbox::SCHEMA)
        .map_err(sql_error)?;
    jobs::migrate(&connection)?;
    connection.execute_batch(jobs::SCHEMA).map_err(sql_error)?;
    migrate(&connection)?;
    migrate_registrations(&connection)?;
    Ok(connection)
}

/// Brings a file written by an older version to the current schema, in one transaction.
/// A compatibility shim: when it can go is in docs/operations.md, "Compatibility shims".
fn migrate(connection: &Connection) -> StoreResult<()> {
    let has_repository: bool = connection
        .query_row(
            "SELECT COUNT(*) > 0 FROM pragma_table_info('trigger_bindings') WHERE name = 'repository'",
            [],
            |row| row.get(0),
        )
        .map_err(sql_error)?;
    let has_delivery_state: bool = connection
        .query_row(
            "SELECT COUNT(*) > 0 FROM pragma_table_info('deliveries') WHERE name = 'state'",
            [],
            |row| row.get(0),
        )
        .map_err(sql_error)?;
    let tx = rusqlite::Transaction::new_unchecked(connection, TransactionBehavior::Immediate)
        .map_err(sql_error)?;
    if !has_delivery_state {
        tx.execute_batch(MIGRATE_DELIVERY_STATE)
            .map_err(sql_error)?;
    }
    let version: i64 = tx
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(sql_error)?;
    if !has_repository {
        tx.execute_batch(MIGRATE_TRIGGER_REPOSITORY)
            .map_err(sql_error)?;
    }
    tx.execute_batch(INDEXES).map_err(sql_error)?;
    if version < SCHEMA_VERSION {
        let bindings: Vec<TriggerBinding> =
            query_bodies(&tx, "SELECT body FROM trigger_bindings", [])?;
        for binding in &bindings {
            index_binding_events(&tx, binding)?;
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(sql_error)?;
    }
    tx.commit().map_err(sql_error)
}

/// Replaces the event rows of `binding` (one per [`TriggerBinding::event_names`]); returns
/// the rows inserted.
fn index_binding_events(connection: &Connection, binding: &TriggerBinding) -> StoreResult<u64> {
    unindex_binding_events(connection, &binding.trigger_id)?;
    let mut insert = connection
        .prepare_cached(
            "INSERT OR REPLACE INTO trigger_binding_events (repository, event, trigger_id) VALUES (?1, ?2, ?3)",
        )
        .map_err(sql_error)?;
    let mut inserted = 0;
    for event in binding.event_names() {
        inserted += insert
            .execute(params![binding.repository, event, binding.trigger_id])
            .map_err(sql_error)? as u64;
    }
    Ok(inserted)
}

/// Deletes the event rows of a binding.
fn unindex_binding_events(connection: &Connection, trigger_id: &str) -> StoreResult<()> {
    connection
        .execute(
            "DELETE FROM trigger_binding_events WHERE trigger_id = ?1",
            params![trigger_id],
        )
        .map_err(sql_error)?;
    Ok(())
}

/// Moves the registrations of a file written before registrations were per manifest (see
/// [`MIGRATE_SINGLE_REGISTRATIONS`]); a no-op once the old table is gone. A compatibility
/// shim: when it can go is in docs/operations.md, "Compatibility shims".
fn migrate_registrations(connection: &Connection) -> StoreResult<()> {
    let has_old_table: bool = connection
        .query_row(
            "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'registrations'",
            [],
            |row| row.get(0),
        )
        .map_err(sql_error)?;
    if !has_old_table {
        return Ok(());
    }
    let batch = format!("BEGIN IMMEDIATE;{MIGRATE_SINGLE_REGISTRATIONS}COMMIT;");
    connection.execute_batch(&batch).map_err(sql_error)
}

/// Writes a registration unless it overlaps another of its repository, in one transaction.
fn put_registration_in_transaction(
    connection: &mut Connection,
    registration: &RepoRegistration,
) -> StoreResult<()> {
    let tx = atomic(connection)?;
    let existing: Vec<RepoRegistration> = query_bodies(
        &tx,
        "SELECT body FROM repository_registrations WHERE repository = ?1",
        [&registration.repository],
    )?;
    refuse_overlap(&existing, registration)?;
    tx.execute(
        "INSERT OR REPLACE INTO repository_registrations (repository, manifest_path, body)
         VALUES (?1, ?2, ?3)",
        params![
            registration.repository,
            registration_scope(registration.manifest_path.as_deref()),
            to_json(registration)?
        ],
    )
    .map_err(sql_error)?;
    tx.commit().map_err(sql_error)
}

/// Applies a validated change set in one transaction; returns the rows written.
fn apply_in_transaction(connection: &mut Connection, changes: &ChangeSet) -> StoreResult<u64> {
    let tx = atomic(connection)?;
    let mut written = 0u64;
    for change in &changes.agents {
        let agent = &change.agent;
        let stored: Option<i64> = tx
            .query_row(
                "SELECT version FROM agents WHERE repository = ?1 AND manifest_path = ?2",
                params![agent.repository, agent.manifest_path],
                |row| row.get(0),
            )
            .optional()
            .map_err(sql_error)?;
        // A negative stored version cannot be ours; u64::MAX never matches (validation
        // guarantees expected + 1 fits).
        let stored = stored.map(|v| u64::try_from(v).unwrap_or(u64::MAX));
        if stored != change.expected_version {
            return Err(StoreError::Conflict(format!(
                "agent {} is at version {stored:?}, expected {:?}",
                agent.key(),
                change.expected_version
            )));
        }
        tx.execute(
            "INSERT OR REPLACE INTO agents (repository, manifest_path, project_id, name, version, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![agent.repository, agent.manifest_path, agent.project_id, agent.name, integer(agent.version)?, to_json(agent)?],
        )
        .map_err(sql_error)?;
        let audit = &change.audit;
        let inserted = tx
            .execute(
                "INSERT INTO audit_events (repository, manifest_path, version, body) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT DO NOTHING",
                params![audit.repository, audit.manifest_path, integer(audit.version)?, to_json(audit)?],
            )
            .map_err(sql_error)?;
        if inserted == 0 {
            return Err(StoreError::Conflict(format!(
                "audit event {} of {} exists",
                audit.version,
                agent.key()
            )));
        }
        written += 2;
        for binding in &change.put_bindings {
            written += tx
                .execute(
                    "INSERT OR REPLACE INTO trigger_bindings (trigger_id, repository, body) VALUES (?1, ?2, ?3)",
                    params![binding.trigger_id, binding.repository, to_json(binding)?],
                )
                .map_err(sql_error)? as u64;
            index_binding_events(&tx, binding)?;
        }
        for trigger_id in &change.delete_bindings {
            written += tx
                .execute(
                    "DELETE FROM trigger_bindings WHERE trigger_id = ?1",
                    params![trigger_id],
                )
                .map_err(sql_error)? as u64;
            unindex_binding_events(&tx, trigger_id)?;
        }
    }
    if let Some(update) = &changes.synced {
        let commit = &update.commit;
        let stored: Option<String> = tx
            .query_row(
                "SELECT commit_sha FROM synced_commits WHERE repository = ?1 AND ref_name = ?2",
                params![commit.repository, commit.ref_name],
                |row| row.get(0),
            )
            .optional()
            .map_err(sql_error)?;
        if stored != update.expected_previous {
            return Err(StoreError::Conflict(format!(
                "synced commit of {}:{} is {stored:?}, expected {:?}",
                commit.repository, commit.ref_name, update.expected_previous
            )));
        }
        tx.execute(
            "INSERT OR REPLACE INTO synced_commits (repository, ref_name, commit_sha, body) VALUES (?1, ?2, ?3, ?4)",
            params![commit.repository, commit.ref_name, commit.commit, to_json(commit)?],
        )
        .map_err(sql_error)?;
        written += 1;
    }
    tx.commit().map_err(sql_error)?;
    Ok(written)
}

impl StateStore for SqliteStateStore {
    fn stats(&self) -> StateStats {
        self.counters.snapshot()
    }

    fn location(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }

    fn workflows(&self) -> &dyn super::workflows::WorkflowStore {
        self
    }

    fn workspaces(&self) -> &dyn super::workspaces::WorkspaceStore {
        self
    }

    fn layers(&self) -> &dyn super::layers::LayerStore {
        self
    }

    fn config_packages(&self) -> &dyn super::configs::ConfigPackageStore {
        self
    }

    fn tasks(&self) -> &dyn super::tasks::TaskStore {
        self
    }

    fn skills(&self) -> &dyn super::skills::SkillSourceStore {
        self
    }

    fn jobs(&self) -> &dyn super::jobs::JobStore {
        self
    }

    fn seen_heads(&self) -> &dyn super::seen_heads::SeenHeadStore {
        self
    }

    fn previews(&self) -> &dyn super::previews::PreviewStore {
        self
    }

    fn kept_requests(&self) -> &dyn super::kept_requests::KeptRequestStore {
        self
    }

    fn dispatch_outbox(&self) -> Option<&dyn super::outbox::DispatchOutbox> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The connection's settings that the durability and throughput claims rest on
    /// (docs/operations.md, "Failed jobs on serve").
    #[tokio::test]
    async fn the_connection_logs_ahead_syncs_normally_and_checkpoints_every_10000_pages() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("the store opens");
        let settings = store
            .with_connection(|c| {
                let setting = |name: &str| {
                    c.pragma_query_value(None, name, |row| row.get::<_, rusqlite::types::Value>(0))
                        .map(|value| match value {
                            rusqlite::types::Value::Text(text) => text,
                            other => format!("{other:?}"),
                        })
                        .map_err(sql_error)
                };
                Ok([
                    setting("journal_mode")?,
                    setting("synchronous")?,
                    setting("wal_autocheckpoint")?,
                ])
            })
            .await
            .expect("the settings read");
        // `synchronous` 1 is NORMAL.
        assert_eq!(settings, ["wal", "Integer(1)", "Integer(10000)"]);
    }
}
