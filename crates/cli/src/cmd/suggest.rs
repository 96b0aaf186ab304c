//! `astrolift suggest [DIR] --repo OWNER/REPO --pr N --head SHA [--config PATH]...`:
//! validates DIR (a checkout of the pull request's head) and posts the
//! fixes on lines the pull request adds as review suggestions, through the
//! same code as the App ([`astrolift_bot::suggest`]). For GitHub Actions:
//! it acts with `GITHUB_TOKEN` on `GITHUB_API_URL` (`action.yml`).
//!
//! Stdout is one JSON line, `{"suggestions":N,"reviews_created":N,
//! "reviews_found":N}`; exit 0 once posted (or nothing to post), 2 when
//! GitHub refuses or cannot be reached, or the token is missing. Findings
//! do not change the exit code: `validate` is the step that fails a job.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use astrolift_bot::suggest::{PullRequest, post_suggestions};
use astrolift_forge::github::{GitHubConfig, Installation, RepoPath};
use astrolift_manifest::{Limits, SourceTree, validate_repository};
use secrecy::SecretString;

use super::stores::runtime;
use crate::output::outln;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkout of the pull request's head commit.
    #[arg(default_value = ".")]
    dir: PathBuf,

    /// The base repository of the pull request (where the review goes).
    #[arg(long, value_name = "OWNER/REPO")]
    repo: String,

    /// The pull request number.
    #[arg(long, value_name = "N")]
    pr: u64,

    /// The pull request's head commit, which DIR must be a checkout of.
    #[arg(long, value_name = "SHA")]
    head: String,

    /// A config manifest to validate as well, relative to DIR. Repeatable.
    #[arg(long = "config", value_name = "PATH")]
    configs: Vec<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let token = std::env::var("GITHUB_TOKEN")
        .ok()
        .filter(|token| !token.trim().is_empty())
        .context("GITHUB_TOKEN is not set (the token the review is posted with)")?;
    if !is_commit_sha(&args.head) {
        bail!("--head {}: expected a 40-hex-digit commit SHA", args.head);
    }
    let repo = RepoPath::parse(&args.repo)?;
    let github = Installation::with_token(GitHubConfig::from_env()?, SecretString::from(token))?;
    let limits = Limits::DEFAULT;
    let tree = super::open_dir(&args.dir, &limits)?;
    let options = super::validate_options(&args.dir, &args.configs, limits)?;
    let validation = validate_repository(&tree, &options);
    let pull = PullRequest {
        repo: &repo,
        number: args.pr,
        head_sha: &args.head,
    };
    let text_of = |path: &str| tree.read_text(path, limits.manifest_file).ok();
    let posted = runtime()?
        .block_on(post_suggestions(
            &github,
            pull,
            &validation.diagnostics,
            &text_of,
        ))
        .with_context(|| format!("cannot post suggestions on {repo}#{}", args.pr))?;
    let summary = serde_json::json!({
        "suggestions": posted.suggested.len(),
        "reviews_created": posted.created,
        "reviews_found": posted.found,
    });
    outln!("{summary}")?;
    Ok(ExitCode::SUCCESS)
}

fn is_commit_sha(sha: &str) -> bool {
    sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit())
}
