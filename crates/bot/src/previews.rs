//! Pull-request previews on the App's side (docs/reference.md §17): which sync of a
//! pull-request head records previews ([`preview_request`]), the check run's **Previews**
//! section ([`section`]), and their teardown when the pull request closes
//! ([`close_pull_request`]) or goes quiet ([`crate::reconcile`]).
//!
//! A preview is recorded only for a head of the base repository (never a fork's, unless a
//! person with write permission approved that head with `/astrolift preview`) whose base
//! branch is the ref of a registration with previews on.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use astrolift_forge::github::{GitHubApp, RepoPath};

use astrolift_store::StateStore;
use astrolift_store::state::{PreviewStatus, RepoRegistration, UnixSeconds};
use astrolift_sync::commands::shell_command;
use astrolift_sync::{Coverage, PreviewRequest, PreviewsReport};

use crate::job::{JobTrigger, SyncJob};
use crate::job_error::JobError;

/// A preview whose pull request has had no push for this long is torn down by reconcile.
pub const QUIET_PREVIEW_SECONDS: UnixSeconds = 7 * 24 * 60 * 60;

/// What the sync of `job` previews, if anything: a pull-request head of the repository
/// itself (or a fork's head approved by `/astrolift preview`), for the registrations with
/// previews whose ref is the pull request's base branch, through the job's installation.
pub fn preview_request(
    job: &SyncJob,
    registrations: &[RepoRegistration],
) -> Option<PreviewRequest> {
    let pull_request = job.pull_request?;
    if job.trigger != JobTrigger::PullRequest || (job.fork && job.preview_approved_by.is_none()) {
        return None;
    }
    let base = job.base_ref.as_deref()?;
    let covering: Vec<Coverage> = registrations
        .iter()
        .filter(|r| r.previews && r.registered_ref == base)
        .filter(|r| r.installation_id.is_none_or(|id| id == job.installation_id))
        .map(Coverage::from)
        .collect();
    if covering.is_empty() {
        return None;
    }
    Some(PreviewRequest {
        pull_request,
        registrations: covering,
        approved_by: job.preview_approved_by.clone(),
    })
}

/// The check run's **Previews** section: each preview with its short snapshot and both ways
/// to dispatch it, or why the pull request has none.
pub fn section(previews: &PreviewsReport) -> String {
    let mut text = String::from("### Previews\n\n");
    if let Some(refused) = &previews.refused {
        let _ = writeln!(
            text,
            "No preview was recorded for this pull request: {refused}."
        );
        return text;
    }
    if previews.previews.is_empty() {
        text.push_str("No agent of this head is valid and enabled, so none is previewed.\n");
        return text;
    }
    text.push_str(
        "Each agent of this head runs as its preview, never as the registered agent, and only \
         with an env spec marked for previews.\n\n| Preview | Snapshot | Comment | Command |\n\
         | --- | --- | --- | --- |\n",
    );
    for preview in &previews.previews {
        let command = shell_command(&["astrolift", "dispatch", &preview.name, "--input", "{}"]);
        let layers = if preview.needs_layers {
            " (its dependency layers are being built)"
        } else {
            ""
        };
        let _ = writeln!(
            text,
            "| `{}`{layers} | `{}` | `/astrolift dispatch {}` | `{command}` |",
            preview.name,
            short(&preview.snapshot),
            preview.agent,
        );
    }
    text
}

/// Tears down every preview of pull request `number` of `repository` (its `closed`
/// delivery): each is `torn_down` with a `preview-closed` audit event. Returns how many.
pub async fn close_pull_request(
    state: &dyn StateStore,
    repository: &str,
    number: u64,
    merged: bool,
    now: UnixSeconds,
) -> Result<usize, astrolift_store::StoreError> {
    let detail = if merged {
        "the pull request was merged"
    } else {
        "the pull request was closed"
    };
    let torn_down = state
        .previews()
        .tear_down_previews(repository, number, detail, now)
        .await?;
    if !torn_down.is_empty() {
        tracing::info!(
            repository,
            pull_request = number,
            previews = torn_down.len(),
            "previews torn down"
        );
    }
    Ok(torn_down.len())
}

/// Reconcile's teardown (docs/reference.md §17, "Closing"): in each registered repository,
/// the previews of a pull request with no push for [`QUIET_PREVIEW_SECONDS`], and of one
/// GitHub says is closed or gone (one `GET` per pull request with previews). A repository or
/// pull request GitHub cannot be asked about now is logged and left for the next pass.
/// Returns how many previews were torn down.
pub async fn tear_down_stale(
    state: &dyn StateStore,
    github: &GitHubApp,
    registrations: &[RepoRegistration],
    now: UnixSeconds,
) -> Result<usize, JobError> {
    let mut repositories: Vec<(&str, Option<u64>)> = registrations
        .iter()
        .map(|r| (r.repository.as_str(), r.installation_id))
        .collect();
    repositories.sort_unstable();
    repositories.dedup_by(|a, b| a.0 == b.0);
    let mut torn_down = 0;
    for (repository, installation_id) in repositories {
        torn_down += tear_down_stale_of(state, github, repository, installation_id, now).await?;
    }
    Ok(torn_down)
}

async fn tear_down_stale_of(
    state: &dyn StateStore,
    github: &GitHubApp,
    repository: &str,
    installation_id: Option<u64>,
    now: UnixSeconds,
) -> Result<usize, JobError> {
    let previews = state.previews().list_previews(repository).await?;
    let mut last_push: BTreeMap<u64, UnixSeconds> = BTreeMap::new();
    for preview in previews
        .iter()
        .filter(|p| p.status == PreviewStatus::Active)
    {
        let pushed = last_push
            .entry(preview.pull_request)
            .or_insert(preview.pushed_at);
        *pushed = (*pushed).max(preview.pushed_at);
    }
    let mut torn_down = 0;
    for (number, pushed_at) in last_push {
        let detail = if now - pushed_at >= QUIET_PREVIEW_SECONDS {
            Some("no push for 7 days")
        } else {
            match is_closed(github, repository, installation_id, number).await {
                Ok(closed) => closed.then_some("the pull request is closed"),
                Err(error) => {
                    tracing::warn!(repository, pull_request = number, %error, "reconcile cannot read the pull request of previews");
                    None
                }
            }
        };
        if let Some(detail) = detail {
            let closed = state
                .previews()
                .tear_down_previews(repository, number, detail, now);
            let count = closed.await?.len();
            tracing::info!(
                repository,
                pull_request = number,
                previews = count,
                detail,
                "previews torn down"
            );
            torn_down += count;
        }
    }
    Ok(torn_down)
}

/// Whether GitHub says pull request `number` is closed, or is gone.
async fn is_closed(
    github: &GitHubApp,
    repository: &str,
    installation_id: Option<u64>,
    number: u64,
) -> Result<bool, JobError> {
    let repo = RepoPath::parse(repository)?;
    let installation_id = match installation_id {
        Some(id) => id,
        None => match github.repository_installation(&repo).await? {
            Some(id) => id,
            None => return Ok(false),
        },
    };
    let pull = github
        .installation(installation_id)
        .pull_request(&repo, number)
        .await?;
    Ok(pull.is_none_or(|pull| !pull.is_open()))
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use astrolift_sync::PreviewEntry;

    #[test]
    fn the_section_names_each_preview_and_both_ways_to_run_it() {
        let report = PreviewsReport {
            previews: vec![PreviewEntry {
                name: "triage-pr7".into(),
                agent: "triage".into(),
                manifest: "agents/triage/astrolift.toml".into(),
                snapshot: "0123456789abcdef".into(),
                head_sha: "f".repeat(40),
                pull_request: 7,
                needs_layers: false,
            }],
            refused: None,
        };
        let text = section(&report);
        assert!(text.contains("| `triage-pr7` | `0123456789ab` |"), "{text}");
        assert!(text.contains("`/astrolift dispatch triage`"), "{text}");
        assert!(
            text.contains("`astrolift dispatch triage-pr7 --input '{}'`"),
            "{text}"
        );
    }

    #[test]
    fn the_section_of_a_refused_pull_request_says_why() {
        let report = PreviewsReport {
            previews: Vec::new(),
            refused: Some("o/r already has previews for 20 pull requests".into()),
        };
        assert!(section(&report).contains("No preview was recorded for this pull request"));
    }
}
