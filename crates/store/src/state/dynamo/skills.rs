//! Skill repositories and the catalogue on DynamoDB, in the one table:
//! - a skill repository: `pk = SKILL_REPOS`, `sk = <project>#<alias>` (one partition, like
//!   env specs: written rarely, read by key, listed with one Query);
//! - its copy keyed by repository: `pk = SKILL_SOURCE#<owner/name, lower case>`, same `sk`,
//!   written and deleted in one transaction with it, so a push learns whether its
//!   repository is a skill source with one keyed Query ([`SkillSourceStore::skill_repos_of`])
//!   rather than a read of every project's skill repositories. Skill repositories written
//!   before the copies existed get theirs on the first such read, once per table (a marker
//!   item records it), each conditional on its record being unchanged, so a skill
//!   repository deleted or moved meanwhile is not brought back;
//! - the catalogue: `pk = CATALOGUE`, `sk = CATALOGUE`.
//!
//! An alias is a slug (no `#`), so `<project>#<alias>` names one (project, alias); a
//! project's listing reads the prefix `<project>#` and keeps the records of that project
//! (a project id may itself hold `#`).

use std::sync::atomic::Ordering;

use aws_sdk_dynamodb::types::{ConditionCheck, TransactWriteItem};
use serde_json::Value;

use super::{DynamoStateStore, MIGRATIONS, build, key, n, record_item, s};
use crate::state::skills::{Catalogue, SkillRepo, SkillSourceStore};
use crate::{BoxFuture, StoreError, StoreResult};

const SKILL_REPOS: &str = "SKILL_REPOS";
const CATALOGUE: &str = "CATALOGUE";
/// The marker item of the one-time backfill of the per-repository copies.
const SKILL_SOURCE_MIGRATION: &str = "SKILL_SOURCE_COPIES";

/// The partition of `repository`'s copies (GitHub's names are case-insensitive).
fn source_pk(repository: &str) -> String {
    format!("SKILL_SOURCE#{}", repository.to_ascii_lowercase())
}

fn skill_repo_sk(project_id: &str, alias: &str) -> String {
    format!("{project_id}#{alias}")
}

impl SkillSourceStore for DynamoStateStore {
    fn put_skill_repo<'a>(&'a self, repo: &'a SkillRepo) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let sk = skill_repo_sk(&repo.project_id, &repo.alias);
            let earlier: Option<SkillRepo> = self.get(key(SKILL_REPOS, &sk)).await?;
            let mut writes = vec![
                self.put_item(record_item(repo, key(SKILL_REPOS, &sk))?)?,
                self.put_item(record_item(repo, key(source_pk(&repo.repository), &sk))?)?,
            ];
            if let Some(earlier) =
                earlier.filter(|earlier| !earlier.repository.eq_ignore_ascii_case(&repo.repository))
            {
                writes.push(self.delete_item(key(source_pk(&earlier.repository), &sk))?);
            }
            let names = vec![format!("skill repository {sk}"); writes.len()];
            self.transact(writes, &names).await
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

    fn skill_repos_of<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<SkillRepo>>> {
        Box::pin(async move {
            self.ensure_skill_source_copies().await?;
            let mut repos: Vec<SkillRepo> =
                self.query_partition(&source_pk(repository), None).await?;
            repos.sort_by(|a, b| (&a.project_id, &a.alias).cmp(&(&b.project_id, &b.alias)));
            Ok(repos)
        })
    }

    fn delete_skill_repo<'a>(
        &'a self,
        project_id: &'a str,
        alias: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let sk = skill_repo_sk(project_id, alias);
            let Some(earlier) = self.get::<SkillRepo>(key(SKILL_REPOS, &sk)).await? else {
                return Ok(false);
            };
            let writes = vec![
                self.delete_item(key(SKILL_REPOS, &sk))?,
                self.delete_item(key(source_pk(&earlier.repository), &sk))?,
            ];
            let names = vec![format!("skill repository {sk}"); 2];
            self.transact(writes, &names).await?;
            Ok(true)
        })
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

impl DynamoStateStore {
    /// The one-time backfill of the per-repository copies (see the module docs). A
    /// compatibility shim: when it can go is in docs/operations.md, "Compatibility shims".
    async fn ensure_skill_source_copies(&self) -> StoreResult<()> {
        if self.skill_source_copies_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let marker: Option<Value> = self.get(key(MIGRATIONS, SKILL_SOURCE_MIGRATION)).await?;
        if marker.is_none() {
            let repos: Vec<SkillRepo> = self.query_partition(SKILL_REPOS, None).await?;
            for repo in &repos {
                self.copy_skill_repo(repo).await?;
            }
            let mut item = key(MIGRATIONS, SKILL_SOURCE_MIGRATION);
            item.insert("copied".into(), n(repos.len()));
            self.put(item).await?;
        }
        self.skill_source_copies_ready
            .store(true, Ordering::Release);
        Ok(())
    }

    /// Writes `repo`'s copy if its record is still as read (a conflict: it was moved or
    /// deleted meanwhile, and its writer wrote or deleted the copy).
    async fn copy_skill_repo(&self, repo: &SkillRepo) -> StoreResult<()> {
        let sk = skill_repo_sk(&repo.project_id, &repo.alias);
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key(SKILL_REPOS, &sk)))
            .condition_expression("#r = :r")
            .expression_attribute_names("#r", "repository")
            .expression_attribute_values(":r", s(&repo.repository));
        let writes = vec![
            TransactWriteItem::builder()
                .condition_check(build(check.build())?)
                .build(),
            self.put_item(record_item(repo, key(source_pk(&repo.repository), &sk))?)?,
        ];
        let names = [
            format!("skill repository {sk} (unchanged since read)"),
            format!("skill repository {sk} (copy)"),
        ];
        match self.transact(writes, &names).await {
            Ok(()) | Err(StoreError::Conflict(_)) => Ok(()),
            Err(error) => Err(error),
        }
    }
}
