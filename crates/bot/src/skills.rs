//! The sync's skill fetcher on GitHub (docs/reference.md §5.1, "Remote skills"): a skill
//! repository is read as the installation of the App that covers it, which need not be the
//! installation of the repository being synced.
//!
//! Per (repository, ref): the covering installation (`GET /repos/{o}/{r}/installation`, as
//! the App; none is [`SkillFetch::NotInstalled`]) → its token (cached per installation, as
//! for every call) → the commit the ref names (none is [`SkillFetch::UnknownRef`]; a 404,
//! the token cannot read the repository, is `NotInstalled` too) → that commit's tarball,
//! streamed into the same bounded tree as an agent repository's ([`fetch_tree`]). The sync
//! asks once per (repository, ref) per run.

use std::sync::Arc;

use astrolift_forge::github::{GitHubApp, RepoPath};
use astrolift_manifest::Limits;
use astrolift_package::TarballOptions;
use astrolift_sync::{SkillFetch, SkillFetchError, SkillFetchFuture, SkillFetcher};

use crate::config::{ConfigError, Environment};
use crate::job_error::{JobError, fetch_tree};

/// The fetcher of a local run (`astrolift check`): through the App on `GITHUB_API_URL` when
/// App credentials are configured (`GITHUB_APP_ID` set, with its key as `serve` reads it),
/// `None` when `GITHUB_APP_ID` is not set; credentials set but unusable are an error.
pub async fn fetcher_from_env(
    environment: &Environment,
    limits: Limits,
) -> Result<Option<GitHubSkillFetcher>, ConfigError> {
    let configured = std::env::var("GITHUB_APP_ID").is_ok_and(|id| !id.trim().is_empty());
    if !configured {
        return Ok(None);
    }
    let github = environment.github_app().await?;
    Ok(Some(GitHubSkillFetcher { github, limits }))
}

/// Fetches skill repositories through the App.
#[derive(Debug, Clone)]
pub struct GitHubSkillFetcher {
    pub github: Arc<GitHubApp>,
    /// The bounds of the tarball read (the agent repository's).
    pub limits: Limits,
}

impl SkillFetcher for GitHubSkillFetcher {
    fn fetch<'a>(&'a self, repository: &'a str, git_ref: &'a str) -> SkillFetchFuture<'a> {
        Box::pin(async move {
            let fetched = self.fetch_repository(repository, git_ref).await;
            fetched.map_err(|error| SkillFetchError {
                repository: repository.to_owned(),
                git_ref: git_ref.to_owned(),
                retryable: error.is_retryable(),
                reason: error.to_string(),
            })
        })
    }
}

impl GitHubSkillFetcher {
    async fn fetch_repository(
        &self,
        repository: &str,
        git_ref: &str,
    ) -> Result<SkillFetch, JobError> {
        let repo = RepoPath::parse(repository)?;
        let Some(id) = self.github.repository_installation(&repo).await? else {
            return Ok(SkillFetch::NotInstalled);
        };
        let installation = self.github.installation(id);
        let commit = match installation.commit_sha(&repo, git_ref).await {
            Ok(Some(commit)) => commit,
            Ok(None) => return Ok(SkillFetch::UnknownRef),
            Err(error) if error.status().is_some_and(|s| s.as_u16() == 404) => {
                return Ok(SkillFetch::NotInstalled);
            }
            Err(error) => return Err(error.into()),
        };
        // Smaller bounds than an agent repository's: a sync holds every skill tree it
        // fetched at once.
        let options = TarballOptions::for_skill_repository(&self.limits);
        let tree = fetch_tree(&installation, &repo, &commit, options).await?;
        Ok(SkillFetch::Tree {
            commit,
            tree: Arc::new(tree),
        })
    }
}
