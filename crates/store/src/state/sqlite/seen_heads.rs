//! The heads reconcile last saw, on SQLite: `seen_heads` keyed by (repository, ref).
//!
//! The table is created with the rest of the schema whenever a file is opened, so a file
//! written before reconcile existed gets it, empty, on its first open (a cache: nothing to
//! backfill, hence no `user_version` step).

use rusqlite::params;

use super::rows::{SqliteStateStore, query_body, text, to_json};
use crate::state::seen_heads::{SeenHead, SeenHeadStore};
use crate::{BoxFuture, StoreResult};

/// Created with the rest of the schema when a file is opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS seen_heads (
    repository TEXT NOT NULL, ref_name TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (repository, ref_name));
";

impl SeenHeadStore for SqliteStateStore {
    fn get_seen_head<'a>(
        &'a self,
        repository: &'a str,
        git_ref: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SeenHead>>> {
        let (repository, git_ref) = (repository.to_owned(), git_ref.to_owned());
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM seen_heads WHERE repository = ?1 AND ref_name = ?2",
                params![repository, git_ref],
            )
        }))
    }

    fn put_seen_head<'a>(&'a self, head: &'a SeenHead) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.write_row(
                "INSERT OR REPLACE INTO seen_heads (repository, ref_name, body) VALUES (?1, ?2, ?3)",
                vec![
                    text(head.repository.as_str()),
                    text(head.git_ref.as_str()),
                    text(to_json(head)?),
                ],
            )
            .await
        })
    }
}
