//! `astrolift lock [DIR] [--update [REFERENCE...]] [--repo OWNER/REPO] [--project-id ID]` (docs/reference.md §3 and §5.7): writes `DIR/astrolift.lock`, pinning
//! every catalogue and organization skill reference of `DIR`'s manifests
//! ([`astrolift_sync::locking`]).
//!
//! References resolve as `validate` resolves them: through the aliases and catalogue of the
//! state store, each manifest under the project of `--repo`'s registration covering it (else
//! `--project-id`); a `file:` source from its directory; a GitHub one through the App when
//! `GITHUB_APP_ID` is set, else with `GITHUB_TOKEN` (a person's checkout). Without
//! `--update` existing pins stay and only missing ones are added; `--update` moves every pin,
//! `--update REFERENCE...` those. The file is written only when its bytes change, to a
//! temporary file renamed over it; any error (a reference that does not resolve) writes
//! nothing and exits 1.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use astrolift_bot::config::Environment;
use astrolift_bot::skills::{TokenSkillFetcher, fetcher_from_env};
use astrolift_forge::github::{GitHubConfig, Installation};
use astrolift_manifest::lock::LOCK_FILE;
use astrolift_manifest::{Limits, validate_repository};
use astrolift_sync::locking::{RelockSources, Update, relock};
use astrolift_sync::skills::SkillFetcher;
use secrecy::SecretString;

use super::stores::{StoreArgs, runtime};
use super::validate::{NO_PROJECT, with_projects};
use super::{EXIT_FINDINGS, print_diagnostics};
use crate::output::outln;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository whose manifests' skill references are pinned.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Move pins: every one, or only the references named.
    #[arg(long, num_args = 0.., value_name = "REFERENCE")]
    update: Option<Vec<String>>,
    /// The repository's name in state: a manifest's project is that of the registration
    /// of this repository that covers it.
    #[arg(long = "repo", value_name = "OWNER/REPO")]
    repository: Option<String>,
    /// The project of manifests that no registration of `--repo` covers.
    #[arg(long, value_name = "ID")]
    project_id: Option<String>,
    /// The stores whose skill repositories and catalogue the references resolve through.
    #[command(flatten)]
    stores: StoreArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let limits = Limits::DEFAULT;
    let tree = super::open_dir(&args.dir, &limits)?;
    let validation = validate_repository(&tree, &super::validate_options(&args.dir, &[], limits)?);
    let update = match &args.update {
        None => Update::Missing,
        Some(references) if references.is_empty() => Update::All,
        Some(references) => Update::References(references.iter().cloned().collect::<BTreeSet<_>>()),
    };
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        let registrations = match &args.repository {
            Some(repository) => state.list_repository_registrations(repository).await?,
            None => Vec::new(),
        };
        let agents = with_projects(
            &validation.agents,
            &registrations,
            args.project_id.as_deref(),
        );
        let fetcher = fetcher(limits).await?;
        let sources = RelockSources {
            state: state.skills(),
            fetcher: fetcher.as_ref(),
            limits: &limits,
            no_project: NO_PROJECT,
        };
        let relocked = relock(&agents, validation.lock.as_ref(), &update, &sources).await?;
        print_diagnostics(&relocked.diagnostics);
        if relocked.is_blocked() {
            eprintln!("{LOCK_FILE} not written: a reference did not resolve (see above)");
            return Ok(ExitCode::from(EXIT_FINDINGS));
        }
        let path = args.dir.join(LOCK_FILE);
        let text = relocked.text();
        let unchanged = std::fs::read(&path).is_ok_and(|old| old == text.as_bytes());
        if unchanged {
            outln!(
                "{LOCK_FILE} is up to date ({} pinned)",
                relocked.entries.len()
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        super::fix::write_atomically(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        outln!(
            "wrote {LOCK_FILE}: {} pinned ({} added, {} moved, {} dropped)",
            relocked.entries.len(),
            relocked.added,
            relocked.moved.len(),
            relocked.dropped
        )?;
        for moved in &relocked.moved {
            outln!(
                "moved {}: {} -> {}",
                moved.reference,
                short(moved.old_commit.as_deref()),
                short(moved.new_commit.as_deref())
            )?;
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The App's fetcher when `GITHUB_APP_ID` is set; else, with `GITHUB_TOKEN`, one that reads
/// every GitHub source with that token (`file:` sources read from disk either way).
async fn fetcher(limits: Limits) -> anyhow::Result<Arc<dyn SkillFetcher>> {
    let routed = fetcher_from_env(&Environment::new(), limits, true)
        .await
        .context("cannot use the GitHub App credentials to fetch skill repositories")?;
    if routed.remote.is_some() {
        return Ok(Arc::new(routed));
    }
    let Some(token) = std::env::var("GITHUB_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
    else {
        return Ok(Arc::new(routed));
    };
    let installation =
        Installation::with_token(GitHubConfig::from_env()?, SecretString::from(token))?;
    let mut routed = routed;
    routed.remote = Some(Arc::new(TokenSkillFetcher {
        installation,
        limits,
    }));
    Ok(Arc::new(routed))
}

/// A commit's first 12 characters, or `none`.
fn short(commit: Option<&str>) -> &str {
    commit.map_or("none", |c| c.get(..12).unwrap_or(c))
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_commit_is_shown_as_none() {
        assert_eq!(super::short(None), "none");
        assert_eq!(super::short(Some("0123456789abcdef")), "0123456789ab");
    }
}
