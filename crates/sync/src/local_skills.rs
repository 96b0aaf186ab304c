//! Local skill sources (docs/reference.md §5.1, "Remote skills"): a catalogue or an
//! organization skill repository registered as `file:PATH` (`astrolift catalogue register
//! file:PATH`, `astrolift skill-repo register ALIAS file:PATH`) is the directory `PATH`,
//! absolute since registration, read as it is on disk, so the CLI resolves every skill
//! without GitHub.
//!
//! Rules:
//! - the tree is `PATH`'s [`DirTree`], listed under a skill repository's bound of entries
//!   ([`Limits::tarball_files`]): symlinks are listed and never followed, so nothing outside
//!   `PATH` is read (a skill holding one is `skill/invalid-remote`, as from GitHub), and the
//!   top-level `.git` and `.astrolift` are left out, as GitHub's tarball has neither;
//! - the ref a reference names is neither checked out nor compared: every ref reads the same
//!   directory, as it is;
//! - the commit is `HEAD` when `PATH` is the root of a Git checkout (`PATH/.git` exists: a
//!   directory, or a worktree's file) and `git -C PATH rev-parse --verify HEAD^{commit}`
//!   prints 40 hex digits; otherwise there is none (a plain directory, a folder inside a
//!   checkout, `git` missing, a checkout without a commit). Uncommitted changes are read
//!   all the same: the snapshot's `sha256` covers what was read, the commit says which
//!   commit the checkout was at;
//! - the App never reads one: a tenant must not make it read the disk it runs on. Its
//!   fetcher is a [`RoutedSkillFetcher`] without `local`, which reports every `file:`
//!   source unresolved ([`LOCAL_ONLY`]).
//!
//! The listing and `git` run on the calling thread: a local run's, as the agent
//! repository's own listing does.

use std::fmt::Debug;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use astrolift_manifest::tree::OpenError;
use astrolift_manifest::{DirTree, Limits};

use crate::skills::{
    LOCAL_ONLY, NO_FETCHER, SkillFetch, SkillFetchError, SkillFetchFuture, SkillFetcher,
};

pub use crate::skills::{LOCAL_SCHEME, is_local_source};

/// Why a `file:` source could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LocalSourceError {
    #[error("{repository} is not a `file:` skill source")]
    NotLocal { repository: String },
    #[error("{path}: a `file:` skill source names an absolute path")]
    NotAbsolute { path: String },
    #[error("{path}: not a directory")]
    NotADirectory { path: String },
    #[error(transparent)]
    Open(#[from] OpenError),
}

/// Reads `file:PATH` skill sources: the directory as it is on disk (the module docs).
#[derive(Debug, Clone, Copy)]
pub struct LocalSkillFetcher {
    /// The bounds of the listing (a skill repository's).
    pub limits: Limits,
}

impl LocalSkillFetcher {
    /// The tree and commit of the `file:` source `repository`.
    pub fn read(&self, repository: &str) -> Result<SkillFetch, LocalSourceError> {
        let path =
            repository
                .strip_prefix(LOCAL_SCHEME)
                .ok_or_else(|| LocalSourceError::NotLocal {
                    repository: repository.to_owned(),
                })?;
        let dir = Path::new(path);
        if !dir.is_absolute() {
            return Err(LocalSourceError::NotAbsolute {
                path: path.to_owned(),
            });
        }
        if !dir.is_dir() {
            return Err(LocalSourceError::NotADirectory {
                path: path.to_owned(),
            });
        }
        let tree = DirTree::open(dir, self.limits.tarball_files)?;
        Ok(SkillFetch::Tree {
            commit: checkout_head(dir),
            tree: Arc::new(tree),
        })
    }
}

impl SkillFetcher for LocalSkillFetcher {
    fn fetch<'a>(&'a self, repository: &'a str, git_ref: &'a str) -> SkillFetchFuture<'a> {
        // The ref is not read: a local source is the directory as it is.
        let found = self.read(repository).map_err(|error| SkillFetchError {
            repository: repository.to_owned(),
            git_ref: git_ref.to_owned(),
            reason: error.to_string(),
            retryable: false,
        });
        Box::pin(std::future::ready(found))
    }
}

/// The commit `HEAD` names when `dir` is the root of a Git checkout, else `None` (the
/// module docs).
pub fn checkout_head(dir: &Path) -> Option<String> {
    if !dir.join(".git").exists() {
        return None;
    }
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        // The checkout at `dir`, whatever the caller's environment points Git at.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_COMMON_DIR")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let head = std::str::from_utf8(&output.stdout).ok()?.trim();
    is_commit_sha(head).then(|| head.to_ascii_lowercase())
}

/// 40 hex digits.
fn is_commit_sha(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The fetcher of a sync: `file:` sources to `local`, every other to `remote`.
#[derive(Debug, Clone)]
pub struct RoutedSkillFetcher {
    /// Reads `file:` sources. `None` where they must never be read (the App: the functions
    /// and `serve`): each is then unresolved, with [`LOCAL_ONLY`].
    pub local: Option<LocalSkillFetcher>,
    /// Fetches the GitHub sources. `None` without App credentials: each is then unresolved,
    /// with [`NO_FETCHER`], and so is a reference whose source is not registered
    /// ([`SkillFetcher::offline_reason`]).
    pub remote: Option<Arc<dyn SkillFetcher>>,
}

impl SkillFetcher for RoutedSkillFetcher {
    fn fetch<'a>(&'a self, repository: &'a str, git_ref: &'a str) -> SkillFetchFuture<'a> {
        let (fetcher, reason) = if is_local_source(repository) {
            (
                self.local.as_ref().map(|l| l as &dyn SkillFetcher),
                LOCAL_ONLY,
            )
        } else {
            (self.remote.as_deref(), NO_FETCHER)
        };
        match fetcher {
            Some(fetcher) => fetcher.fetch(repository, git_ref),
            None => Box::pin(std::future::ready(Ok(SkillFetch::Unresolved {
                reason: reason.to_owned(),
            }))),
        }
    }

    fn offline_reason(&self) -> Option<&str> {
        match &self.remote {
            None => Some(NO_FETCHER),
            Some(remote) => remote.offline_reason(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_forty_hex_digits_are_a_commit() {
        assert!(is_commit_sha(&"a1".repeat(20)));
        assert!(!is_commit_sha(&"a1".repeat(32)), "a sha256 repository's");
        assert!(!is_commit_sha("HEAD"));
        assert!(!is_commit_sha(&"g".repeat(40)));
    }

    #[test]
    fn a_source_is_local_by_its_scheme_only() {
        assert!(is_local_source("file:/srv/skills"));
        assert!(!is_local_source("steadymd/runbooks"));
        assert!(!is_local_source("FILE:/srv/skills"));
    }

    #[test]
    fn a_relative_or_missing_path_is_refused() {
        let fetcher = LocalSkillFetcher {
            limits: Limits::DEFAULT,
        };
        let relative = fetcher.read("file:skills");
        assert!(matches!(
            relative,
            Err(LocalSourceError::NotAbsolute { .. })
        ));
        let missing = fetcher.read("file:/nonexistent/astrolift/skills");
        assert!(matches!(
            missing,
            Err(LocalSourceError::NotADirectory { .. })
        ));
        let github = fetcher.read("steadymd/runbooks");
        assert!(matches!(github, Err(LocalSourceError::NotLocal { .. })));
    }
}
