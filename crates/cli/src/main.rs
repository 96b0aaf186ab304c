//! The `astrolift` binary. See README.md for every command.
//!
//! This file only parses the command line and dispatches: each subcommand is
//! one variant of [`Command`] and one module under `src/cmd/`, whose `run`
//! returns the process exit code (docs/reference.md §3: 0 ok, 1 findings with
//! errors, 2 usage or I/O failure).
#![forbid(unsafe_code)]
// Stdout is written through `output` only, so a closed pipe ends quietly (docs/reference.md §3).
#![deny(clippy::print_stdout)]

mod cmd;
mod error_summary;
mod output;
mod progress;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

/// Validate, package and serve Astrolift agent repositories.
#[derive(Debug, Parser)]
#[command(name = "astrolift", version, about, propagate_version = true)]
struct Cli {
    /// On failure, print the error's full chain; outside `serve`, also log at debug level.
    #[arg(long, global = true)]
    verbose: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Discover and validate every agent manifest of a repository.
    Validate(cmd::validate::Args),
    /// Post a pull request's fixes on lines it adds as review suggestions (GITHUB_TOKEN).
    Suggest(cmd::suggest::Args),
    /// Print a config manifest with its includes merged, as JSON.
    Assemble(cmd::assemble::Args),
    /// Print the environment drift between two checkouts.
    Drift(cmd::drift::Args),
    /// Build one agent's deterministic package archive (or every agent's, with --all).
    Package(cmd::package::Args),
    /// Discover, validate, package and plan on the configured stores; --apply registers.
    Check(cmd::check::Args),
    /// Pin the remote skills of DIR's manifests in astrolift.lock (resolved as validate does).
    Lock(cmd::lock::Args),
    /// Register a repository (every manifest, or one with --manifest-path): pushes to its ref register agents.
    RegisterRepo(cmd::registry::RegisterRepoArgs),
    /// Remove a registration; its agents stay as they are.
    UnregisterRepo(cmd::registry::UnregisterRepoArgs),
    /// Manage environment specs.
    #[command(subcommand)]
    EnvSpec(EnvSpecCommand),
    /// Manage a project's organization skill repositories (`"ALIAS/path/to/skill@ref"`).
    #[command(subcommand)]
    SkillRepo(SkillRepoCommand),
    /// Register or show the built-in skill catalogue (`"name@version"`).
    #[command(subcommand)]
    Catalogue(CatalogueCommand),
    /// Inspect registered agents.
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// The audit history of an agent.
    History(cmd::registry::AgentArgs),
    /// Retire an agent explicitly; its audit history is kept.
    Teardown(cmd::registry::AgentArgs),
    /// Inspect registered trigger bindings.
    #[command(subcommand)]
    Triggers(TriggersCommand),
    /// Try a trigger locally.
    #[command(subcommand)]
    Trigger(TriggerCommand),
    /// Record a manual dispatch of a registered agent, or start a workflow run (--workflow);
    /// `dispatch list` and `dispatch show ID` print what was dispatched.
    Dispatch(DispatchCli),
    /// Print a dispatch's container environment (a fresh cluster key each time).
    Render(cmd::render::Args),
    /// Inspect a workflow run, report a stage's terminal status, or cancel it.
    #[command(subcommand)]
    WorkflowRun(WorkflowRunCommand),
    /// Dependency layers built by the packager agent.
    #[command(subcommand)]
    Layers(LayersCommand),
    /// Import agents from AGENTS.md, an Agent Package, or a Langflow or Flowise export.
    Import(cmd::import::Args),
    /// Run the GitHub App locally: webhooks, triggers and the sync queue in one process.
    Serve(cmd::serve::Args),
    /// List serve's queued and failed sync jobs, or queue failed ones again (--queue-url:
    /// the sync queue's SQS dead-letter queue on AWS).
    #[command(subcommand)]
    Jobs(JobsCommand),
    /// Compare every registered ref with GitHub's head; queue a sync where they differ.
    Reconcile(cmd::reconcile::Args),
}

#[derive(Debug, Subcommand)]
enum JobsCommand {
    /// List the jobs of serve's queue (--state failed: the ones it gave up on), or the
    /// messages of an SQS dead-letter queue (--queue-url).
    List(cmd::jobs::ListArgs),
    /// Queue a failed job again (JOB_ID, or --all-failed), or redrive an SQS dead-letter
    /// queue's messages (--queue-url).
    Retry(cmd::jobs::RetryArgs),
}

/// `dispatch AGENT …`, or one of its subcommands (a subcommand's name wins over an
/// agent of that name: `OWNER/REPO:path/to/astrolift.toml` names such an agent).
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct DispatchCli {
    #[command(subcommand)]
    command: Option<DispatchCommand>,
    #[command(flatten)]
    args: cmd::triggers::DispatchArgs,
}

#[derive(Debug, Subcommand)]
enum DispatchCommand {
    /// List recorded dispatches, newest first, with their task's status.
    List(cmd::dispatches::ListArgs),
    /// Print one dispatch, its task and the message it was sent with.
    Show(cmd::dispatches::ShowArgs),
}

#[derive(Debug, Subcommand)]
enum EnvSpecCommand {
    /// Create or replace an env spec.
    Upsert(cmd::registry::EnvSpecUpsertArgs),
    /// List the env specs.
    List(cmd::registry::EnvSpecListArgs),
    /// Print one env spec.
    Show(cmd::registry::EnvSpecShowArgs),
}

#[derive(Debug, Subcommand)]
enum SkillRepoCommand {
    /// Register (or re-point) ALIAS for a project's agents.
    Register(cmd::skill_sources::SkillRepoRegisterArgs),
    /// List skill repositories.
    List(cmd::skill_sources::SkillRepoListArgs),
    /// Remove a project's alias.
    Remove(cmd::skill_sources::SkillRepoRemoveArgs),
}

#[derive(Debug, Subcommand)]
enum CatalogueCommand {
    /// Register (or replace) the deployment's catalogue repository and ref.
    Register(cmd::skill_sources::CatalogueRegisterArgs),
    /// Print the registered catalogue.
    Show(cmd::skill_sources::CatalogueShowArgs),
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// List registered agents.
    List(cmd::registry::AgentsListArgs),
}

#[derive(Debug, Subcommand)]
enum TriggersCommand {
    /// List registered trigger bindings with their URL paths.
    List(cmd::triggers::ListArgs),
    /// Replay a binding's kept requests through the registered binding and the one in DIR.
    Replay(cmd::replay::ReplayArgs),
    /// Delete a binding's kept requests.
    Purge(cmd::triggers::PurgeArgs),
}

#[derive(Debug, Subcommand)]
enum LayersCommand {
    /// Record a packager dispatch's terminal result (what the callback route does).
    Report(cmd::layers::ReportArgs),
}

#[derive(Debug, Subcommand)]
enum WorkflowRunCommand {
    /// Print a run and its stages as JSON.
    Show(cmd::workflows::ShowArgs),
    /// Report a stage's terminal status (what the callback route does); dispatches what is ready.
    Report(cmd::workflows::ReportArgs),
    /// Cancel a running run: its waiting stages are skipped, nothing more is dispatched.
    Cancel(cmd::workflows::CancelArgs),
}

#[derive(Debug, Subcommand)]
enum TriggerCommand {
    /// Evaluate one request against a trigger of the manifest in DIR; print the payload and environment.
    Test(cmd::triggers::TestArgs),
}

fn main() -> ExitCode {
    // First of all: as a jq worker process this serves and exits; otherwise
    // trigger programs (serve, `trigger test`) evaluate in worker processes.
    astrolift_jq::sandbox::init();
    // Progress is timed from here (docs/reference.md §3, "Progress").
    progress::command_started();
    // Usage errors exit 2 (clap's default); --help and --version exit 0.
    let cli = Cli::parse();
    let verbose = cli.verbose || std::env::var_os("RUST_LOG").is_some_and(|v| !v.is_empty());
    match cli.command {
        // A server logs its requests: info by default, JSON on request.
        Command::Serve(_) => astrolift_bot::telemetry::init_logging(),
        _ => init_tracing(cli.verbose),
    }
    let result = match cli.command {
        Command::Validate(args) => cmd::validate::run(args),
        Command::Suggest(args) => cmd::suggest::run(args),
        Command::Assemble(args) => cmd::assemble::run(args),
        Command::Drift(args) => cmd::drift::run(args),
        Command::Package(args) => cmd::package::run(args),
        Command::Check(args) => cmd::check::run(args),
        Command::Lock(args) => cmd::lock::run(args),
        Command::RegisterRepo(args) => cmd::registry::register_repo(args),
        Command::UnregisterRepo(args) => cmd::registry::unregister_repo(args),
        Command::EnvSpec(EnvSpecCommand::Upsert(args)) => cmd::registry::env_spec_upsert(args),
        Command::EnvSpec(EnvSpecCommand::List(args)) => cmd::registry::env_spec_list(args),
        Command::EnvSpec(EnvSpecCommand::Show(args)) => cmd::registry::env_spec_show(args),
        Command::SkillRepo(SkillRepoCommand::Register(args)) => {
            cmd::skill_sources::skill_repo_register(args)
        }
        Command::SkillRepo(SkillRepoCommand::List(args)) => {
            cmd::skill_sources::skill_repo_list(args)
        }
        Command::SkillRepo(SkillRepoCommand::Remove(args)) => {
            cmd::skill_sources::skill_repo_remove(args)
        }
        Command::Catalogue(CatalogueCommand::Register(args)) => {
            cmd::skill_sources::catalogue_register(args)
        }
        Command::Catalogue(CatalogueCommand::Show(args)) => {
            cmd::skill_sources::catalogue_show(args)
        }
        Command::Agents(AgentsCommand::List(args)) => cmd::registry::agents_list(args),
        Command::History(args) => cmd::registry::history(args),
        Command::Teardown(args) => cmd::registry::teardown(args),
        Command::Triggers(TriggersCommand::List(args)) => cmd::triggers::list(args),
        Command::Triggers(TriggersCommand::Replay(args)) => cmd::replay::run(args),
        Command::Triggers(TriggersCommand::Purge(args)) => cmd::triggers::purge(args),
        Command::Trigger(TriggerCommand::Test(args)) => cmd::triggers::test(args),
        Command::Dispatch(DispatchCli {
            command: Some(DispatchCommand::List(args)),
            ..
        }) => cmd::dispatches::list(args),
        Command::Dispatch(DispatchCli {
            command: Some(DispatchCommand::Show(args)),
            ..
        }) => cmd::dispatches::show(args),
        Command::Dispatch(DispatchCli {
            command: None,
            args,
        }) => cmd::triggers::dispatch(args),
        Command::Render(args) => cmd::render::run(args),
        Command::WorkflowRun(WorkflowRunCommand::Show(args)) => cmd::workflows::show(args),
        Command::WorkflowRun(WorkflowRunCommand::Report(args)) => cmd::workflows::report(args),
        Command::WorkflowRun(WorkflowRunCommand::Cancel(args)) => cmd::workflows::cancel(args),
        Command::Layers(LayersCommand::Report(args)) => cmd::layers::report(args),
        Command::Import(args) => cmd::import::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Jobs(JobsCommand::List(args)) => cmd::jobs::list(args),
        Command::Jobs(JobsCommand::Retry(args)) => cmd::jobs::retry(args),
        Command::Reconcile(args) => cmd::reconcile::run(args),
    };
    let code = result.unwrap_or_else(|error| {
        if output::stdout_closed() {
            // The reader has all it wanted (`astrolift … | head`): not a failure.
            return ExitCode::SUCCESS;
        }
        for line in error_summary::lines(&error, verbose) {
            eprintln!("{line}");
        }
        cmd::EXIT_FAILURE.into()
    });
    report_peak_memory();
    code
}

/// With `ASTROLIFT_PEAK_MEMORY_FILE` set (docs/reference.md §13), writes this process's
/// peak resident memory (`VmHWM`, in bytes) to that file as it exits: how the memory
/// bounds of docs/reference.md §14 are measured, from the process's own peak. Silent
/// where `/proc` is not (the variable is a diagnostic, never needed to run).
fn report_peak_memory() {
    let Some(path) = std::env::var_os("ASTROLIFT_PEAK_MEMORY_FILE") else {
        return;
    };
    let peak_kib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|value| value.split_whitespace().next())
                .and_then(|kib| kib.parse::<u64>().ok())
        });
    if let Some(kib) = peak_kib
        && let Err(error) = std::fs::write(&path, format!("{}\n", kib * 1024))
    {
        eprintln!("warning: cannot write the peak memory: {error}");
    }
}

/// Logs go to stderr, filtered by `RUST_LOG` (default `warn`, and `error` for the AWS SDK's
/// region and credentials lookups, whose failure the store's error names; with `--verbose`,
/// `debug` for our own crates), coloured by the rule of the diagnostics
/// (`astrolift_cli::colour`).
fn init_tracing(verbose: bool) {
    let builder = EnvFilter::builder().with_default_directive(LevelFilter::WARN.into());
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.is_empty() => builder.parse_lossy(directives),
        // Every crate of ours is `astrolift` or `astrolift_*`: a prefix of their targets.
        _ if verbose => builder.parse_lossy("warn,astrolift=debug"),
        _ => builder.parse_lossy(astrolift_bot::telemetry::QUIET_AWS_CONFIG),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(astrolift_cli::colour::stderr())
        .init();
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
