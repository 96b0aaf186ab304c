//! Skill repositories and the catalogue on DynamoDB, in the one table:
//! - a skill repository: `pk = SKILL_REPOS`, `sk = <project>#<alias>` (one partition, like
//!   env specs: written rarely, read by key, listed with one Query);
//! - the catalogue: `pk = CATALOGUE`, `sk = CATALOGUE`.
//!
//! An alias is a slug (no `#`), so `<project>#<alias>` names one (project, alias); a
//! project's listing reads the prefix `<project>#` and keeps the records of that project
//! (a project id may itself hold `#`).

use super::{DynamoStateStore, key, record_item};
use crate::state::skills::{Catalogue, SkillRepo, SkillSourceStore};
use crate::{BoxFuture, StoreResult};

const SKILL_REPOS: &str = "SKILL_REPOS";
const CATALOGUE: &str = "CATALOGUE";

fn skill_repo_sk(project_id: &str, alias: &str) -> String {
    format!("{project_id}#{alias}")
}

impl SkillSourceStore for DynamoStateStore {
    fn put_skill_repo<'a>(&'a self, repo: &'a SkillRepo) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let keys = key(SKILL_REPOS, skill_repo_sk(&repo.project_id, &repo.alias));
            self.put(record_item(repo, keys)?).await
        })
    }

    fn get_skill_repo<'a>(
        &'a self,
        project_id: &'a str,
        alias: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SkillRepo>>> {
        Box::pin(self.get(key(SKILL_REPOS, skill_repo_sk(project_id, alias))))
    }

    fn list_skill_repos<'a>(
        &'a self,
        project_id: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<Vec<SkillRepo>>> {
        Box::pin(async move {
            let prefix = project_id.map(|project| skill_repo_sk(project, ""));
            let mut repos: Vec<SkillRepo> =
                self.query_partition(SKILL_REPOS, prefix.as_deref()).await?;
            repos.retain(|repo| project_id.is_none_or(|project| repo.project_id == project));
            // Sort-key order puts `a!#x` before `a#y`; the contract orders by project id.
            repos.sort_by(|a, b| (&a.project_id, &a.alias).cmp(&(&b.project_id, &b.alias)));
            Ok(repos)
        })
    }

    fn delete_skill_repo<'a>(
        &'a self,
        project_id: &'a str,
        alias: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.delete_returning(key(SKILL_REPOS, skill_repo_sk(project_id, alias))))
    }

    fn put_catalogue<'a>(&'a self, catalogue: &'a Catalogue) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.put(record_item(catalogue, key(CATALOGUE, CATALOGUE))?)
                .await
        })
    }

    fn get_catalogue(&self) -> BoxFuture<'_, StoreResult<Option<Catalogue>>> {
        Box::pin(self.get(key(CATALOGUE, CATALOGUE)))
    }
}
