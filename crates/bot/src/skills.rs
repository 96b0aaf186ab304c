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
//!
//! Every sync's fetcher is a [`RoutedSkillFetcher`] built by [`skill_fetcher`]: a `file:`
//! source (a local directory, docs/reference.md §5.1) is read only where `allow_local` is
//! true, the CLI (`check`, `validate`); the App (the webhook, sync and trigger functions
//! and `serve`, through [`crate::SyncRunner`]) passes false, so a registration naming a
//! `file:` source never makes it read the disk it runs on: each such reference is the
//! warning `skill/unresolved` ([`astrolift_sync::skills::LOCAL_ONLY`]).

use std::sync::Arc;

use astrolift_forge::github::{GitHubApp, Installation, RepoPath};
use astrolift_manifest::Limits;
use astrolift_package::TarballOptions;
use astrolift_sync::local_skills::is_local_source;
use astrolift_sync::skills::LOCAL_ONLY;
use astrolift_sync::{
    LocalSkillFetcher, RoutedSkillFetcher, SkillFetch, SkillFetchError, SkillFetchFuture,
    SkillFetcher,
};

use crate::config::{ConfigError, Environment};
use crate::job_error::{JobError, fetch_tree};

/// The fetcher of a local run (`astrolift check`, `astrolift validate`): `file:` sources
/// read when `allow_local`, the others through the App on `GITHUB_API_URL` when App
/// credentials are configured (`GITHUB_APP_ID` set, with its key as `serve` reads it), else
/// unresolved; credentials set but unusable are an error.
pub async fn fetcher_from_env(
    environment: &Environment,
    limits: Limits,
    allow_local: bool,
) -> Result<RoutedSkillFetcher, ConfigError> {
    let configured = std::env::var("GITHUB_APP_ID").is_ok_and(|id| !id.trim().is_empty());
    let github = if configured {
        Some(environment.github_app().await?)
    } else {
        None
    };
    Ok(skill_fetcher(github, limits, allow_local))
}

/// A sync's fetcher: GitHub sources through `github` (none without App credentials: each
/// unresolved), `file:` sources read from the disk only when `allow_local` (the CLI; false
/// for the App, which must never read its own disk for a registration: each unresolved).
pub fn skill_fetcher(
    github: Option<Arc<GitHubApp>>,
    limits: Limits,
    allow_local: bool,
) -> RoutedSkillFetcher {
    RoutedSkillFetcher {
        local: allow_local.then_some(LocalSkillFetcher { limits }),
        remote: github
            .map(|github| Arc::new(GitHubSkillFetcher { github, limits }) as Arc<dyn SkillFetcher>),
    }
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
        Box::pin(answer(repository, git_ref, async move {
            let repo = RepoPath::parse(repository)?;
            let Some(id) = self.github.repository_installation(&repo).await? else {
                return Ok(SkillFetch::NotInstalled);
            };
            let installation = self.github.installation(id);
            fetch_with(&installation, &repo, git_ref, &self.limits).await
        }))
    }
}

/// Fetches skill repositories with one token (`astrolift lock` with `GITHUB_TOKEN`, a
/// person's checkout): every repository is read as that token may read it.
#[derive(Debug, Clone)]
pub struct TokenSkillFetcher {
    pub installation: Installation,
    pub limits: Limits,
}

impl SkillFetcher for TokenSkillFetcher {
    fn fetch<'a>(&'a self, repository: &'a str, git_ref: &'a str) -> SkillFetchFuture<'a> {
        Box::pin(answer(repository, git_ref, async move {
            let repo = RepoPath::parse(repository)?;
            fetch_with(&self.installation, &repo, git_ref, &self.limits).await
        }))
    }
}

/// What a GitHub fetcher answers for `repository` at `git_ref`: a `file:` source is never
/// read, whoever registered it (the module docs); otherwise `fetch`'s answer, a failure
/// naming the repository and ref.
async fn answer(
    repository: &str,
    git_ref: &str,
    fetch: impl Future<Output = Result<SkillFetch, JobError>>,
) -> Result<SkillFetch, SkillFetchError> {
    if is_local_source(repository) {
        let reason = LOCAL_ONLY.to_owned();
        return Ok(SkillFetch::Unresolved { reason });
    }
    fetch.await.map_err(|error| SkillFetchError {
        repository: repository.to_owned(),
        git_ref: git_ref.to_owned(),
        retryable: error.is_retryable(),
        reason: error.to_string(),
    })
}

/// `repo` at `git_ref`, read as `installation`.
async fn fetch_with(
    installation: &Installation,
    repo: &RepoPath,
    git_ref: &str,
    limits: &Limits,
) -> Result<SkillFetch, JobError> {
    {
        let commit = match installation.commit_sha(repo, git_ref).await {
            Ok(Some(commit)) => commit,
            Ok(None) => return Ok(SkillFetch::UnknownRef),
            Err(error) if error.status().is_some_and(|s| s.as_u16() == 404) => {
                return Ok(SkillFetch::NotInstalled);
            }
            Err(error) => return Err(error.into()),
        };
        // Smaller bounds than an agent repository's: a sync holds every skill tree it
        // fetched at once.
        let options = TarballOptions::for_skill_repository(limits);
        let tree = fetch_tree(installation, repo, &commit, options).await?;
        Ok(SkillFetch::Tree {
            commit: Some(commit),
            tree: Arc::new(tree),
        })
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;

    use super::*;

    /// What `fetcher` answers for `repository` (every fetch here is ready at once).
    fn fetched(fetcher: &RoutedSkillFetcher, repository: &str) -> SkillFetch {
        let answer = fetcher.fetch(repository, "main").now_or_never();
        answer.expect("ready at once").expect("no fetch error")
    }

    #[test]
    fn the_app_never_reads_a_file_source_and_the_cli_does() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("SKILL.md"), "---\nname: x\n---\n").expect("write");
        let source = format!("file:{}", dir.path().display());
        let app = skill_fetcher(None, Limits::DEFAULT, false);
        match fetched(&app, &source) {
            SkillFetch::Unresolved { reason } => assert_eq!(reason, LOCAL_ONLY),
            other => panic!("the App read a local directory: {other:?}"),
        }
        let cli = skill_fetcher(None, Limits::DEFAULT, true);
        match fetched(&cli, &source) {
            SkillFetch::Tree { commit, tree } => {
                assert_eq!(commit, None, "a plain directory has no commit");
                assert!(tree.is_file("SKILL.md"));
            }
            other => panic!("the CLI did not read it: {other:?}"),
        }
    }

    #[test]
    fn without_app_credentials_a_github_source_is_unresolved_with_the_reason() {
        let cli = skill_fetcher(None, Limits::DEFAULT, true);
        match fetched(&cli, "steadymd/runbooks") {
            SkillFetch::Unresolved { reason } => {
                assert_eq!(reason, astrolift_sync::skills::NO_FETCHER);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            cli.offline_reason(),
            Some(astrolift_sync::skills::NO_FETCHER)
        );
    }
}
