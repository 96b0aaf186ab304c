//! Where remote skills come from (docs/reference.md §5.1, "Remote skills"): organization skill repositories, registered
//! per project under an alias (`astrolift skill-repo register ALIAS OWNER/REPO --project-id
//! P`), and the built-in catalogue, one repository and ref per deployment (`astrolift
//! catalogue register OWNER/REPO [--ref main]`).
//!
//! An alias belongs to its project: a manifest's `"ALIAS/path@ref"` resolves only through
//! the registration of the agent's project with that alias. Registering an alias again
//! replaces its repository; removing it leaves the agents that used it registered as they
//! are (their next sync reports the reference as unknown).

use serde::{Deserialize, Serialize};

use super::model::UnixSeconds;
use crate::{BoxFuture, StoreResult};

/// An organization skill repository, registered for one project under an alias.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillRepo {
    /// The project whose agents may use it.
    pub project_id: String,
    /// The first segment of `"ALIAS/path/to/skill@ref"`: a slug.
    pub alias: String,
    /// `owner/name` of the repository holding the skills.
    pub repository: String,
    /// When it was last written.
    pub updated_at: UnixSeconds,
}

/// The built-in catalogue: `skills/<name>/<version>/SKILL.md` in `repository` at the commit
/// `registered_ref` points to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalogue {
    /// `owner/name` of the catalogue repository.
    pub repository: String,
    /// The branch (or tag) whose commit catalogue references resolve at; `main` by default.
    pub registered_ref: String,
    /// When it was last written.
    pub updated_at: UnixSeconds,
}

/// Skill repositories and the catalogue. Every [`super::StateStore`] offers it through
/// [`super::StateStore::skills`].
///
/// Contract (the contract suite runs it on SQLite and DynamoDB):
/// - `put_skill_repo` creates or replaces the registration of (project, alias);
/// - `put_catalogue` creates or replaces the one catalogue;
/// - reads see the last write.
pub trait SkillSourceStore: Send + Sync {
    /// Creates or replaces the skill repository of (`project_id`, `alias`).
    fn put_skill_repo<'a>(&'a self, repo: &'a SkillRepo) -> BoxFuture<'a, StoreResult<()>>;
    /// The skill repository a project registered under `alias`.
    fn get_skill_repo<'a>(
        &'a self,
        project_id: &'a str,
        alias: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SkillRepo>>>;
    /// Every skill repository, ordered by project, then alias (`project_id`: only that
    /// project's).
    fn list_skill_repos<'a>(
        &'a self,
        project_id: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<Vec<SkillRepo>>>;
    /// Every project's skill repositories whose `repository` is `repository` (GitHub's
    /// names compared ASCII case-insensitively), ordered by project, then alias: a keyed
    /// read, however many skill repositories the deployment holds (a push asks it).
    fn skill_repos_of<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<SkillRepo>>>;
    /// Deletes the skill repository of (`project_id`, `alias`); `Ok(false)` when there was
    /// none.
    fn delete_skill_repo<'a>(
        &'a self,
        project_id: &'a str,
        alias: &'a str,
    ) -> BoxFuture<'a, StoreResult<bool>>;
    /// Creates or replaces the catalogue.
    fn put_catalogue<'a>(&'a self, catalogue: &'a Catalogue) -> BoxFuture<'a, StoreResult<()>>;
    /// The catalogue, if one is registered.
    fn get_catalogue(&self) -> BoxFuture<'_, StoreResult<Option<Catalogue>>>;
}
