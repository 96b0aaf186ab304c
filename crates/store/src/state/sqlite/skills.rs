//! Skill repositories and the catalogue on SQLite: `skill_repos` keyed by (project, alias)
//! with the repository indexed, and `catalogue`, a table of at most one row.
//!
//! The tables are created with the rest of the schema whenever a file is opened, so a file
//! written before skill sources existed gets them, empty, on its first open (nothing to
//! backfill, hence no `user_version` step).

use rusqlite::params;

use super::rows::{SqliteStateStore, query_bodies, query_body, text, to_json};
use crate::state::skills::{Catalogue, SkillRepo, SkillSourceStore};
use crate::{BoxFuture, StoreResult};

/// Created with the rest of the schema when a file is opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS skill_repos (
    project_id TEXT NOT NULL, alias TEXT NOT NULL, repository TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (project_id, alias));
CREATE INDEX IF NOT EXISTS skill_repos_by_repository ON skill_repos (repository);
CREATE INDEX IF NOT EXISTS skill_repos_by_repository_nocase
    ON skill_repos (repository COLLATE NOCASE);
CREATE TABLE IF NOT EXISTS catalogue (
    id INTEGER PRIMARY KEY CHECK (id = 1), body TEXT NOT NULL);
";

impl SkillSourceStore for SqliteStateStore {
    fn put_skill_repo<'a>(&'a self, repo: &'a SkillRepo) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.write_row(
                "INSERT OR REPLACE INTO skill_repos (project_id, alias, repository, body)
                 VALUES (?1, ?2, ?3, ?4)",
                vec![
                    text(repo.project_id.as_str()),
                    text(repo.alias.as_str()),
                    text(repo.repository.as_str()),
                    text(to_json(repo)?),
                ],
            )
            .await
        })
    }

    fn get_skill_repo<'a>(
        &'a self,
        project_id: &'a str,
        alias: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SkillRepo>>> {
        let (project_id, alias) = (project_id.to_owned(), alias.to_owned());
        Box::pin(self.read(move |c| {
            query_body(
                c,
                "SELECT body FROM skill_repos WHERE project_id = ?1 AND alias = ?2",
                params![project_id, alias],
            )
        }))
    }

    fn list_skill_repos<'a>(
        &'a self,
        project_id: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<Vec<SkillRepo>>> {
        let project_id = project_id.map(str::to_owned);
        Box::pin(self.read(move |c| match project_id {
            Some(project_id) => query_bodies(
                c,
                "SELECT body FROM skill_repos WHERE project_id = ?1 ORDER BY alias",
                params![project_id],
            ),
            None => query_bodies(
                c,
                "SELECT body FROM skill_repos ORDER BY project_id, alias",
                [],
            ),
        }))
    }

    fn skill_repos_of<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<SkillRepo>>> {
        let repository = repository.to_owned();
        Box::pin(self.read(move |c| {
            query_bodies(
                c,
                "SELECT body FROM skill_repos WHERE repository = ?1 COLLATE NOCASE
                 ORDER BY project_id, alias",
                params![repository],
            )
        }))
    }

    fn delete_skill_repo<'a>(
        &'a self,
        project_id: &'a str,
        alias: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let deleted = self
                .write_rows(
                    "DELETE FROM skill_repos WHERE project_id = ?1 AND alias = ?2",
                    vec![text(project_id), text(alias)],
                )
                .await?;
            Ok(deleted > 0)
        })
    }

    fn put_catalogue<'a>(&'a self, catalogue: &'a Catalogue) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.write_row(
                "INSERT OR REPLACE INTO catalogue (id, body) VALUES (1, ?1)",
                vec![text(to_json(catalogue)?)],
            )
            .await
        })
    }

    fn get_catalogue(&self) -> BoxFuture<'_, StoreResult<Option<Catalogue>>> {
        Box::pin(self.read(|c| query_body(c, "SELECT body FROM catalogue WHERE id = 1", [])))
    }
}
