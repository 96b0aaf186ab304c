//! `astrolift validate [DIR] [--config PATH]... [--format human|json|sarif|github]
//! [--fix [--dry-run]] [--state URL] [--repo OWNER/REPO] [--project-id ID]`.
//!
//! Catalogue and organization skills resolve as `astrolift check` resolves them
//! (docs/reference.md §5.1, "Remote skills"): a `file:` source from its directory, the
//! others through the App on `GITHUB_API_URL` when `GITHUB_APP_ID` (and its key) are set,
//! against the aliases and catalogue of the state store `--state` names (no default:
//! `validate` opens a store only when one is named and a manifest has a remote reference,
//! and, without credentials, only when it exists, since then only its `file:` sources can
//! be read and a missing `sqlite:` file holds none); each manifest's project is that of the
//! registration of `--repo` covering it, else `--project-id`. Where something is missing
//! each reference is the warning `skill/unresolved`, with why.
//! Each trigger binding's `samples` are evaluated in the jq sandbox and compared with
//! their expected files, as `check` and the check run do (docs/reference.md §5.5).
//!
//! With `--fix`, every fix is applied first (see [`super::fix`]), one line per
//! fix goes to stderr (stdout stays the report, parseable in every format),
//! and the report is of the repository as fixed. With `--dry-run` nothing is
//! written: stdout is the unified diff, and the exit code is 1 when there is
//! something to fix (as `cargo fmt --check` and `ruff --diff` do).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use astrolift_bot::config::Environment;
use astrolift_bot::skills::fetcher_from_env;
use astrolift_cli::render::{self, Format, Report, Style};
use astrolift_manifest::lock::Lock;
use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::paths::{control_character_path_diagnostics, non_utf8_path_diagnostics};
use astrolift_manifest::{
    Diagnostic, DirTree, Limits, SourceTree, ValidateOptions, diagnostic, validate_repository,
};
use astrolift_store::StateLocation;
use astrolift_store::state::{RepoRegistration, covering_registration};
use astrolift_store::state_store_from_url;
use astrolift_sync::SkillFetcher;
use astrolift_sync::skills::check_remote_skills;
use astrolift_trigger::samples::check_samples;

use super::stores::runtime;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository to validate.
    #[arg(default_value = ".")]
    dir: PathBuf,

    /// A config manifest to validate as well, relative to DIR. Repeatable.
    #[arg(long = "config", value_name = "PATH")]
    configs: Vec<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,

    /// Apply every machine-applicable fix in place, then report what is left.
    #[arg(long)]
    fix: bool,

    /// With --fix: write nothing, print the changes as a unified diff.
    #[arg(long, requires = "fix")]
    dry_run: bool,

    /// The state store whose skill repositories and catalogue remote skills resolve
    /// through: `sqlite:PATH` or `dynamodb:TABLE`. Default: none.
    #[arg(long = "state", env = "ASTROLIFT_STATE", value_name = "URL")]
    state: Option<String>,

    /// The repository's name in state: a manifest's project is that of the registration
    /// of this repository that covers it.
    #[arg(long = "repo", value_name = "OWNER/REPO")]
    repository: Option<String>,

    /// The project of manifests that no registration of `--repo` covers.
    #[arg(long, value_name = "ID")]
    project_id: Option<String>,
}

/// Why an organization reference of a manifest without a project is unresolved here.
pub const NO_PROJECT: &str = "no project is known for this manifest (pass `--project-id`, \
     or `--repo` of a registered repository), so its skill repositories are not known";

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let limits = Limits::DEFAULT;
    let mut tree = super::open_dir(&args.dir, &limits)?;
    let options = super::validate_options(&args.dir, &args.configs, limits)?;
    if args.fix {
        let fixed = super::fix::plan(&tree, &options)?;
        if args.dry_run {
            let mut out = crate::output::stdout();
            super::fix::print_diff(&fixed, &mut out).context("cannot write the diff")?;
            out.flush().context("cannot write the diff")?;
            if fixed.files.is_empty() {
                eprintln!("{}", nothing_to_fix(&args.dir, &tree, &options));
                return Ok(ExitCode::SUCCESS);
            }
            return Ok(super::EXIT_FINDINGS.into());
        }
        super::fix::write(&args.dir, &fixed)?;
        super::fix::print_applied(&fixed, &mut std::io::stderr().lock())
            .context("cannot write the summary")?;
        // Re-read what is now on disk: the report's snippets show the fixed text.
        tree = super::open_dir(&args.dir, &limits)?;
    }
    let mut validation = validate_repository(&tree, &options);
    // A file name that is not UTF-8 is an error on that file, not the end of the listing;
    // one with a control character is a warning, escaped wherever it is shown.
    validation
        .diagnostics
        .extend(non_utf8_path_diagnostics(tree.non_utf8_paths()));
    validation
        .diagnostics
        .extend(control_character_path_diagnostics(
            tree.control_character_paths(),
        ));
    if validation.agents.iter().any(has_remote_skills) {
        let found = runtime()?.block_on(remote_skills(
            &args,
            &validation.agents,
            validation.lock.as_ref(),
            limits,
        ))?;
        validation.diagnostics.extend(found);
    }
    // Each binding's sample requests, evaluated in the jq sandbox as the check run does
    // (docs/reference.md §5.5): a mismatch is an error like any other.
    if validation.agents.iter().any(has_samples) {
        let found = runtime()?.block_on(check_samples(&tree, &validation.agents, &limits));
        validation.diagnostics.extend(found);
    }
    diagnostic::sort(&mut validation.diagnostics);
    let agents = validation.summaries();
    let report = Report {
        agents: &agents,
        diagnostics: &validation.diagnostics,
    };

    write_report(args.format, &report, &tree).context("cannot write the report")?;
    tracing::debug!(
        files = tree.entries().len(),
        agents = agents.len(),
        diagnostics = validation.diagnostics.len(),
        "validated"
    );
    Ok(if validation.has_errors() {
        super::EXIT_FINDINGS.into()
    } else {
        ExitCode::SUCCESS
    })
}

/// What `--fix --dry-run` says when it has no diff to print: nothing to fix, and, for a
/// folder where no agent is discovered, why (it is not a repository's root: the
/// manifests below it belong to repositories of their own).
fn nothing_to_fix(dir: &Path, tree: &DirTree, options: &ValidateOptions) -> String {
    let validation = validate_repository(tree, options);
    let shown = dir.display();
    if !validation.agents.is_empty() {
        return format!("nothing to fix in {shown}");
    }
    let below: Vec<&str> = validation
        .diagnostics
        .iter()
        .filter(|d| d.code == "discovery/undiscovered-manifest")
        .map(|d| d.path.as_str())
        .collect();
    match below.first() {
        None => format!("nothing to fix: no agent manifest is discovered in {shown}"),
        Some(first) => {
            // The repository a manifest belongs to: above its `agents/`, or its folder.
            let root = match first.split_once("/agents/") {
                Some((root, _)) => root,
                None => first.rsplit_once('/').map_or("", |(folder, _)| folder),
            };
            format!(
                "nothing to fix: {shown} is not a repository's root, so none of the {} \
                 below it is discovered; run it on each repository, for example \
                 `astrolift validate --fix --dry-run {}`",
                astrolift_cli::render::plural(below.len(), "manifest"),
                astrolift_sync::commands::shell_quote(&dir.join(root).display().to_string())
            )
        }
    }
}

fn has_samples(manifest: &AgentManifest) -> bool {
    manifest.triggers.iter().any(|t| t.samples.is_some())
}

fn has_remote_skills(manifest: &AgentManifest) -> bool {
    manifest
        .skills
        .iter()
        .any(|s| s.remote_reference().is_some())
}

/// The findings of resolving the agents' catalogue and organization skills, as `check`
/// resolves them, where App credentials and a state store allow.
async fn remote_skills(
    args: &Args,
    agents: &[AgentManifest],
    lock: Option<&Lock>,
    limits: Limits,
) -> anyhow::Result<Vec<Diagnostic>> {
    let fetcher = fetcher_from_env(&Environment::new(), limits, true)
        .await
        .context("cannot use the GitHub App credentials to fetch skill repositories")?;
    // Opened only when it may be read: `validate` never creates a store to find it empty.
    let offline = fetcher.offline_reason().is_some();
    let state = match &args.state {
        Some(url) if !(offline && is_missing_sqlite(url)) => Some(
            state_store_from_url(url)
                .await
                .with_context(|| format!("cannot open the state store {url}"))?,
        ),
        _ => None,
    };
    let registrations = match (&state, &args.repository) {
        (Some(state), Some(repository)) => state.list_repository_registrations(repository).await?,
        _ => Vec::new(),
    };
    let agents = with_projects(agents, &registrations, args.project_id.as_deref());
    let mut found = Vec::new();
    check_remote_skills(
        &agents,
        state.as_deref().map(|s| s.skills()),
        Some(&fetcher as &dyn SkillFetcher),
        lock,
        &limits,
        NO_PROJECT,
        &mut found,
    )
    .await?;
    Ok(found)
}

/// Each of `agents` with its project: that of the registration (of `registrations`, one
/// repository's) covering it, else `fallback` (`--project-id`).
pub(crate) fn with_projects<'a>(
    agents: &'a [AgentManifest],
    registrations: &[RepoRegistration],
    fallback: Option<&str>,
) -> Vec<(&'a AgentManifest, Option<String>)> {
    agents
        .iter()
        .map(|manifest| {
            let registered = covering_registration(registrations, &manifest.manifest);
            let project = registered.map(|r| r.project_id.clone());
            (manifest, project.or_else(|| fallback.map(str::to_owned)))
        })
        .collect()
}

/// True when `url` is `sqlite:PATH` and no file is at `PATH`: a store that holds nothing.
fn is_missing_sqlite(url: &str) -> bool {
    matches!(StateLocation::parse(url), Ok(StateLocation::Sqlite(path)) if !path.exists())
}

/// Human output keeps its colours only where `astrolift_cli::colour` allows them;
/// the machine formats are written as they are. Both are buffered.
fn write_report(format: Format, report: &Report<'_>, tree: &DirTree) -> std::io::Result<()> {
    let mut out: Box<dyn Write> = match format {
        Format::Human => Box::new(crate::output::styled()),
        _ => Box::new(crate::output::buffered()),
    };
    render::render(format, report, tree, Style::Styled, &mut out)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn config_paths_become_repo_relative() {
        let dir = Path::new("repo");
        let rel = |p: &str| super::super::repo_relative(dir, Path::new(p)).ok();
        assert_eq!(
            rel("configs/main.toml").as_deref(),
            Some("configs/main.toml")
        );
        assert_eq!(
            rel("./configs/main.toml").as_deref(),
            Some("configs/main.toml")
        );
        assert_eq!(
            rel("repo/configs/main.toml").as_deref(),
            Some("configs/main.toml")
        );
        assert_eq!(rel("../elsewhere.toml"), None);
        assert_eq!(rel("/etc/passwd"), None);
    }
}
