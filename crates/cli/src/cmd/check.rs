//! `astrolift check [DIR] [--apply] [--format human|json]`: discover,
//! validate, package and plan on the configured stores; `--apply` registers.
//! Catalogue and organization skills registered as `file:PATH` are read from that
//! directory; the others are fetched through the App on `GITHUB_API_URL` when
//! `GITHUB_APP_ID` (and its key) are set (docs/reference.md §5.1, "Remote skills").

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::progress::Progress;
use anyhow::Context;
use astrolift_bot::config::Environment;
use astrolift_cli::render;
use astrolift_cli::render::{plural, short_hash};
use astrolift_manifest::{DirTree, Limits, SourceTree, ValidateOptions};
use astrolift_store::StateStore;
use astrolift_store::state::RepoRegistration;
use astrolift_sync::{Coverage, Mode, Report, SkillFetcher, SyncRequest, sync};

use super::stores::{StoreArgs, now, runtime};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository to check.
    #[arg(default_value = ".")]
    dir: PathBuf,

    /// Register: upload new packages and write state.
    #[arg(long)]
    apply: bool,

    /// The repository's name in state (`owner/name`). Default: `local/<DIR name>`.
    #[arg(long = "repo", value_name = "OWNER/REPO")]
    repository: Option<String>,

    /// The ref being synced.
    #[arg(long = "ref", default_value = super::DEFAULT_REF)]
    git_ref: String,

    /// The commit being synced; `worktree` is the directory as it is.
    #[arg(long, default_value = "worktree")]
    commit: String,

    /// The commit's time, in seconds since the epoch, recorded with the synced
    /// commit (it does not order commits: local runs have no ancestry oracle,
    /// so the commit given applies). Default: now.
    #[arg(long)]
    commit_time: Option<i64>,

    /// Project for new agents when the repository is not registered.
    #[arg(long, default_value = "local", value_parser = super::project_id)]
    project_id: String,

    /// Output format.
    #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
    format: CheckFormat,

    #[command(flatten)]
    stores: StoreArgs,
}

/// `--format` of `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    Human,
    Json,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let limits = Limits::DEFAULT;
    let tree = super::open_dir(&args.dir, &limits)?;
    let report = runtime()?.block_on(check(&args, &tree, limits))?;
    match args.format {
        CheckFormat::Json => {
            let mut out = crate::output::stdout();
            serde_json::to_writer(&mut out, &json_report(&report))?;
            writeln!(out)?;
            out.flush()?;
        }
        CheckFormat::Human => {
            // Coloured only where `astrolift_cli::colour` allows.
            let mut out = crate::output::styled();
            write_human(&report, &tree, &mut out)?;
            out.flush()?;
        }
    }
    Ok(if report.has_errors() {
        super::EXIT_FINDINGS.into()
    } else {
        ExitCode::SUCCESS
    })
}

async fn check(args: &Args, tree: &DirTree, limits: Limits) -> anyhow::Result<Report> {
    let stores = args.stores.stores().await?;
    let repository = repository_name(args)?;
    let config_paths = astrolift_sync::config_paths(stores.state.as_ref(), &repository).await?;
    let mode = if args.apply
        && !registers_something(tree, &limits, &config_paths)
        && !is_registered(stores.state.as_ref(), &repository).await?
    {
        // Registering a repository with nothing to register only makes a registration
        // that later pushes sync for nothing (docs/reference.md §3). A registered one
        // applies all the same: its synced commit is recorded, which reconcile compares.
        eprintln!(
            "nothing registered: no agent, workspace or config manifest is discovered in {} \
             (an astrolift.toml at its root or in agents/<slug>/, an astrolift.agents.toml, or \
             the config manifest of an env spec)",
            args.dir.display()
        );
        Mode::Check
    } else if args.apply {
        Mode::Apply {
            registrations: registrations_for_apply(stores.state.as_ref(), &repository, args)
                .await?,
        }
    } else {
        Mode::Check
    };
    let now = now();
    // A `file:` skill source is read from its directory; the others resolve through the App
    // when its credentials are configured, and without them each reference is a
    // `skill/unresolved` warning that says so.
    let fetcher = astrolift_bot::skills::fetcher_from_env(&Environment::new(), limits, true)
        .await
        .context("cannot use the GitHub App credentials to fetch skill repositories")?;
    let skills = Some(Arc::new(fetcher) as Arc<dyn SkillFetcher>);
    let request = SyncRequest {
        repository,
        commit: args.commit.clone(),
        commit_time: args.commit_time.unwrap_or(now),
        // Local runs sync the tree the operator chose: no ancestry oracle.
        before: None,
        order: None,
        git_ref: Some(args.git_ref.clone()),
        mode,
        now,
        validate: ValidateOptions {
            limits,
            config_paths,
        },
        skills,
        previews: None,
        samples: Some(Arc::new(astrolift_bot::samples::SandboxSamples { limits })),
        relock: None,
    };
    let progress = Progress::bar("packaging", "agents", args.format == CheckFormat::Human);
    let mut report = sync(tree, &request, &stores, &|done, total| {
        progress.set(done, total)
    })
    .await?;
    if !report.layer_needs.is_empty() {
        let packager = astrolift_bot::layers::LayerPackager::from_env(&stores, None).await?;
        packager.request(&stores, &mut report, now).await?;
    }
    Ok(report)
}

/// Whether any registration names `repository`.
async fn is_registered(state: &dyn StateStore, repository: &str) -> anyhow::Result<bool> {
    Ok(!state
        .list_repository_registrations(repository)
        .await?
        .is_empty())
}

/// Whether the tree has anything a registration registers: an agent or a workspace
/// manifest, or a config manifest an env spec names (`config_paths`).
fn registers_something(tree: &DirTree, limits: &Limits, config_paths: &[String]) -> bool {
    if config_paths.iter().any(|path| tree.is_file(path)) {
        return true;
    }
    let options = ValidateOptions {
        limits: *limits,
        config_paths: Vec::new(),
    };
    let validation = astrolift_manifest::validate_repository(tree, &options);
    !(validation.agents.is_empty() && validation.workspace_manifests.is_empty())
}

fn repository_name(args: &Args) -> anyhow::Result<String> {
    if let Some(name) = &args.repository {
        return Ok(name.clone());
    }
    let dir = std::fs::canonicalize(&args.dir)
        .with_context(|| format!("cannot resolve {}", args.dir.display()))?;
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("repository");
    Ok(format!("local/{name}"))
}

/// The registrations a local `--apply` applies: the repository's registrations
/// that follow `--ref` (per manifest or of every manifest). A local `--apply` on
/// a repository that is not registered at all registers every manifest first
/// (project `--project-id`, ref `--ref`), so `agents list` and `history` find it.
async fn registrations_for_apply(
    state: &dyn StateStore,
    repository: &str,
    args: &Args,
) -> anyhow::Result<Vec<Coverage>> {
    let registrations = state.list_repository_registrations(repository).await?;
    if registrations.is_empty() {
        let registration = RepoRegistration {
            repository: repository.to_owned(),
            installation_id: None,
            project_id: args.project_id.clone(),
            registered_ref: args.git_ref.clone(),
            manifest_path: None,
            updated_at: now(),
            last_sync: None,
            previews: false,
        };
        state.put_registration(&registration).await?;
        eprintln!(
            "registered every manifest of {repository} (project {}, ref {})",
            args.project_id, args.git_ref
        );
        return Ok(vec![Coverage::from(&registration)]);
    }
    let applying: Vec<Coverage> = registrations
        .iter()
        .filter(|r| r.registered_ref == args.git_ref)
        .map(Coverage::from)
        .collect();
    if applying.is_empty() {
        let refs: Vec<&str> = registrations
            .iter()
            .map(|r| r.registered_ref.as_str())
            .collect();
        anyhow::bail!(
            "no registration of {repository} follows ref {}; its registrations follow {}: pass --ref",
            args.git_ref,
            refs.join(", ")
        );
    }
    Ok(applying)
}

/// docs/reference.md §4: `{"plan":[{"agent","manifest","status","digest"}...],"diagnostics":[...]}`,
/// plus the report's other fields for tools that want them.
fn json_report(report: &Report) -> serde_json::Value {
    let mut value = serde_json::to_value(report).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        let plan = object.remove("plan");
        let diagnostics = object.remove("diagnostics");
        let rest = std::mem::take(object);
        object.insert("plan".into(), plan.unwrap_or_default());
        object.insert("diagnostics".into(), diagnostics.unwrap_or_default());
        object.extend(rest);
    }
    value
}

fn write_human(report: &Report, tree: &DirTree, out: &mut dyn Write) -> anyhow::Result<()> {
    // The snippets without the validation's own summary line: this command's one
    // summary, below the plan, counts the diagnostics and the agents of the plan.
    if !report.diagnostics.is_empty() {
        render::human::render_diagnostics(&report.diagnostics, tree, render::Style::Styled, out)?;
    }
    for entry in &report.plan {
        let digest = entry.digest.as_deref().map_or("-", short_hash);
        let drift = if entry.drift.is_empty() {
            String::new()
        } else {
            let kinds: Vec<_> = entry.drift.iter().map(|d| d.kind.as_str()).collect();
            format!("  drift: {}", kinds.join(", "))
        };
        writeln!(
            out,
            "{:<10} {:<24} {:<14} {}{drift}",
            entry.status.as_str(),
            entry.agent,
            digest,
            entry.manifest
        )?;
    }
    write_workflows_and_configs(report, out)?;
    for uncovered in &report.uncovered {
        writeln!(
            out,
            "not covered by a registration (checked only): {}; to register it: {}",
            uncovered.manifest, uncovered.how_to_register
        )?;
    }
    writeln!(out, "{}", summary_line(report))?;
    Ok(())
}

/// The workflow and config manifest rows, in the agents' columns: the name column says
/// which kind of row it is.
fn write_workflows_and_configs(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    for workflow in &report.workflows {
        writeln!(
            out,
            "{:<10} {:<24} {:<14} {}  {}",
            workflow.status.as_str(),
            format!("workflow {}", workflow.name),
            workflow.content_hash.as_deref().map_or("-", short_hash),
            workflow.path,
            plural(workflow.stages, "stage")
        )?;
    }
    for config in &report.configs {
        writeln!(
            out,
            "{:<10} {:<24} {:<14} {}  {}",
            config.status.as_str(),
            "config",
            config.bundle.as_deref().map_or("-", short_hash),
            config.manifest_path,
            plural(config.files, "file")
        )?;
    }
    Ok(())
}

/// `N workflows (1 added, 1 unchanged)`: how many rows of a kind, by status.
fn kind_counts<'a>(noun: &str, statuses: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut by_status: std::collections::BTreeMap<&str, usize> = Default::default();
    for status in statuses {
        *by_status.entry(status).or_default() += 1;
    }
    let total: usize = by_status.values().sum();
    let counts: Vec<String> = by_status.iter().map(|(s, n)| format!("{n} {s}")).collect();
    (total > 0).then(|| format!("{} ({})", plural(total, noun), counts.join(", ")))
}

fn summary_line(report: &Report) -> String {
    let counts: Vec<_> = report
        .counts
        .plan
        .iter()
        .map(|(status, n)| format!("{n} {status}"))
        .collect();
    let action = match (&report.mode, report.applied, &report.skipped) {
        (_, _, Some(skipped)) => format!("skipped: {skipped}"),
        (Mode::Apply { .. }, true, None) => format!(
            "applied: {}, {}",
            plural(report.counts.blob_puts as usize, "blob upload"),
            plural(report.counts.state_writes as usize, "state write")
        ),
        _ => "checked only (use --apply to register)".to_owned(),
    };
    let d = &report.counts.diagnostics;
    let others: String = [
        kind_counts(
            "workflow",
            report.workflows.iter().map(|w| w.status.as_str()),
        ),
        kind_counts("config", report.configs.iter().map(|c| c.status.as_str())),
    ]
    .into_iter()
    .flatten()
    .map(|kind| format!("; {kind}"))
    .collect();
    format!(
        "{}{others}; {}, {}, {}; {action}",
        if counts.is_empty() {
            "no agents".to_owned()
        } else {
            counts.join(", ")
        },
        plural(d.errors, "error"),
        plural(d.warnings, "warning"),
        plural(d.notices, "notice")
    )
}
