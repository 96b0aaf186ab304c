//! Update pull requests (docs/reference.md §5.7, "Update pull requests"): when a skill source's
//! registered ref moves, a dependent whose `astrolift.lock` pins references into it gets its
//! lock rewritten on one pull request instead of agents that change silently.
//!
//! The dependent's re-sync job computes the moved lock ([`astrolift_sync::locking`]); this
//! module commits it as the App through the Git Data API (a blob, a tree over the registered
//! commit's, a commit whose parent is the registered commit) on the branch [`LOCK_BRANCH`],
//! and opens the pull request to the registered ref, or edits the open one. Rules:
//! - the App writes to no other branch, and never to the registered ref;
//! - the branch is force-moved only while its head is a commit the App made (its message
//!   carries [`APP_TRAILER`]); a person's commit on it stops the updates there, and the
//!   check run says so;
//! - a lock already committed there over the same registered commit (the same text hash in
//!   the message) writes nothing: a redelivered job opens no second commit or pull request;
//! - an installation that has not granted `contents: write` and `pull_requests: write` gets
//!   no pull request, and the check run of the re-sync says so.

use std::fmt::Write as _;

use astrolift_forge::github::{
    FileMode, GitHubApp, GitHubError, Installation, RepoPath, TreeEntry,
};
use astrolift_manifest::lock::LOCK_FILE;
use astrolift_sync::locking::{MovedPin, Relocked};
use sha2::{Digest, Sha256};

use crate::check_run::message;
use crate::comment_commands::code_span;
use crate::commit_order::is_retryable;
use crate::job_error::JobError;

/// The one branch the App writes to.
pub const LOCK_BRANCH: &str = "astrolift/lock-update";
/// The pull request's title.
pub const LOCK_PR_TITLE: &str = "Update locked skills";
/// The trailer of every commit the App makes on [`LOCK_BRANCH`].
pub const APP_TRAILER: &str = "Astrolift-Lock-Update:";

/// What became of a moved lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proposal {
    /// A pull request was opened.
    Opened { number: u64, url: String },
    /// The open pull request's branch was moved and its body edited.
    Updated { number: u64, url: String },
    /// The branch already holds this lock over this commit.
    Unchanged,
    /// Nothing was written, for this reason (shown on the check run).
    NotProposed(String),
}

/// Where the moved lock goes.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub repo: &'a RepoPath,
    /// The registered ref: the pull request's base.
    pub base_ref: &'a str,
    /// The registered commit the lock was computed at: the new commit's parent.
    pub base_sha: &'a str,
}

/// Commits `relocked` and opens or updates its pull request (see the module docs). `Err`
/// only for a failure a retry of the job may not meet (GitHub down).
pub async fn propose(
    github: &GitHubApp,
    installation: &Installation,
    target: Target<'_>,
    relocked: &Relocked,
) -> Result<Proposal, JobError> {
    if relocked.moved.is_empty() {
        return Ok(Proposal::Unchanged);
    }
    if relocked.is_blocked() {
        let reason = "a moved reference does not resolve; the lock was left as it is".to_owned();
        return Ok(Proposal::NotProposed(reason));
    }
    let body = body(github, &relocked.moved).await;
    match commit_and_open(installation, target, relocked, &body).await {
        Err(error) if error.is_forbidden() => Ok(Proposal::NotProposed(format!(
            "the App may not write to {}: grant the installation `contents: write` and \
             `pull_requests: write` (docs/operations.md, \"Locked skills\")",
            target.repo
        ))),
        Err(error) if !is_retryable(&error) => {
            tracing::warn!(%error, "the lock-update pull request was not opened");
            Ok(Proposal::NotProposed(format!("GitHub refused it: {error}")))
        }
        other => other.map_err(JobError::from),
    }
}

async fn commit_and_open(
    installation: &Installation,
    target: Target<'_>,
    relocked: &Relocked,
    body: &str,
) -> Result<Proposal, GitHubError> {
    let text = relocked.text();
    let trailer = format!(
        "{APP_TRAILER} {} sha256:{}",
        target.base_sha,
        hex::encode(Sha256::digest(text.as_bytes()))
    );
    let repo = target.repo;
    let head = installation.branch_head(repo, LOCK_BRANCH).await?;
    if let Some(head) = &head {
        let info = installation.commit_info(repo, head).await?;
        if !info.message.contains(APP_TRAILER) {
            return Ok(Proposal::NotProposed(format!(
                "`{LOCK_BRANCH}` has a commit the App did not make ({}); the App stops \
                 updating it until the branch is deleted",
                &head[..12.min(head.len())]
            )));
        }
        if info.message.contains(&trailer) {
            return Ok(Proposal::Unchanged);
        }
    }
    let base = installation.commit_info(repo, target.base_sha).await?;
    let blob = installation.create_blob(repo, text.as_bytes()).await?;
    let entry = TreeEntry {
        path: LOCK_FILE.to_owned(),
        mode: FileMode::Regular,
        blob_sha: blob,
    };
    let tree = installation
        .create_tree(repo, Some(&base.tree), &[entry])
        .await?;
    let message = format!(
        "Update locked skills\n\n{}\n\n{trailer}",
        summary_lines(&relocked.moved)
    );
    let commit = installation
        .create_commit(repo, &message, &tree, &[target.base_sha])
        .await?;
    match head {
        None => {
            installation
                .create_branch(repo, LOCK_BRANCH, &commit)
                .await?
        }
        Some(_) => {
            installation
                .move_branch(repo, LOCK_BRANCH, &commit, true)
                .await?
        }
    }
    open_or_update(installation, target, body).await
}

async fn open_or_update(
    installation: &Installation,
    target: Target<'_>,
    body: &str,
) -> Result<Proposal, GitHubError> {
    let repo = target.repo;
    let open = installation
        .find_open_pull_request(repo, &repo.owner, LOCK_BRANCH)
        .await?;
    if let Some(open) = open {
        let updated = installation
            .update_pull_request(repo, open.number, Some(LOCK_PR_TITLE), Some(body))
            .await?;
        return Ok(Proposal::Updated {
            number: updated.number,
            url: updated.html_url,
        });
    }
    let created = installation
        .create_pull_request(repo, LOCK_PR_TITLE, LOCK_BRANCH, target.base_ref, body)
        .await;
    match created {
        Ok(created) => Ok(Proposal::Opened {
            number: created.number,
            url: created.html_url,
        }),
        // A retried create that GitHub had already answered: the pull request exists.
        Err(error) if error.status().is_some_and(|s| s.as_u16() == 422) => {
            let found = installation
                .find_open_pull_request(repo, &repo.owner, LOCK_BRANCH)
                .await?;
            match found {
                Some(found) => Ok(Proposal::Updated {
                    number: found.number,
                    url: found.html_url,
                }),
                None => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}

/// One line per moved pin, for the commit message.
fn summary_lines(moved: &[MovedPin]) -> String {
    moved
        .iter()
        .map(|pin| {
            format!(
                "- {}: {} -> {}",
                pin.reference,
                short(pin.old_commit.as_deref()),
                short(pin.new_commit.as_deref())
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The pull request's body: one row per moved reference (reference, old and new commit with
/// their dates, files changed), the dates asked of GitHub where the App can read the source.
pub async fn body(github: &GitHubApp, moved: &[MovedPin]) -> String {
    let mut out = String::from(
        "Astrolift moved the pins of `astrolift.lock` whose skill sources moved. Review what \
         changed in each skill, then merge: the agents change only then.\n\n\
         | Reference | Old commit | New commit | Files changed |\n|---|---|---|---|\n",
    );
    // Each commit's date is asked once, however many moved pins share it.
    let mut dates_known = std::collections::BTreeMap::new();
    for pin in moved {
        let dates = (
            date_of(
                github,
                &pin.repository,
                pin.old_commit.as_deref(),
                &mut dates_known,
            )
            .await,
            date_of(
                github,
                &pin.repository,
                pin.new_commit.as_deref(),
                &mut dates_known,
            )
            .await,
        );
        let files = pin
            .files_changed
            .map_or_else(|| "?".to_owned(), |n| n.to_string());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {files} |",
            code_span(&pin.reference),
            commit_cell(pin.old_commit.as_deref(), dates.0.as_deref()),
            commit_cell(pin.new_commit.as_deref(), dates.1.as_deref()),
        );
    }
    out.push_str("\nThis pull request is updated in place while it is open.\n");
    out
}

/// The date of `commit` of `repository`, when the App can read it; `known` holds the
/// answers already asked (by repository and commit).
async fn date_of(
    github: &GitHubApp,
    repository: &str,
    commit: Option<&str>,
    known: &mut std::collections::BTreeMap<(String, String), Option<String>>,
) -> Option<String> {
    let key = (repository.to_owned(), commit?.to_owned());
    if let Some(date) = known.get(&key) {
        return date.clone();
    }
    let date = async {
        let repo = RepoPath::parse(repository).ok()?;
        let id = github.repository_installation(&repo).await.ok()??;
        let info = github
            .installation(id)
            .commit_info(&repo, &key.1)
            .await
            .ok()?;
        Some(info.date.to_string().chars().take(10).collect::<String>())
    }
    .await;
    known.insert(key, date.clone());
    date
}

fn commit_cell(commit: Option<&str>, date: Option<&str>) -> String {
    let commit = code_span(short(commit));
    match date {
        Some(date) => format!("{commit} ({date})"),
        None => commit,
    }
}

fn short(commit: Option<&str>) -> &str {
    commit.map_or("none", |c| c.get(..12).unwrap_or(c))
}

/// The check run's section for `proposal`, if any.
pub fn section(proposal: &Proposal) -> Option<String> {
    match proposal {
        Proposal::Opened { number, url } => Some(format!(
            "**Locked skills:** opened [#{number}]({url}) to move the pins of `astrolift.lock`."
        )),
        Proposal::Updated { number, url } => Some(format!(
            "**Locked skills:** updated [#{number}]({url}) with the moved pins of `astrolift.lock`."
        )),
        Proposal::Unchanged => None,
        Proposal::NotProposed(reason) => Some(format!(
            "**Locked skills:** no update pull request: {}.",
            message(reason)
        )),
    }
}
