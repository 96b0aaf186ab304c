//! The `astrolift` binary. See README.md for every command.
//!
//! This file only parses the command line and dispatches: each subcommand is
//! one variant of [`Command`] and one module under `src/cmd/`, whose `run`
//! returns the process exit code (DESIGN.md §10: 0 ok, 1 findings with
//! errors, 2 usage or I/O failure).
#![forbid(unsafe_code)]

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

/// Validate, package and serve Astrolift agent repositories.
#[derive(Debug, Parser)]
#[command(name = "astrolift", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Discover and validate every agent manifest of a repository.
    Validate(cmd::validate::Args),
}

fn main() -> ExitCode {
    init_tracing();
    // Usage errors exit 2 (clap's default); --help and --version exit 0.
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate(args) => cmd::validate::run(args),
    };
    result.unwrap_or_else(|error| {
        eprintln!("error: {error:#}");
        cmd::EXIT_FAILURE.into()
    })
}

/// Logs go to stderr, filtered by `RUST_LOG` (default `warn`).
fn init_tracing() {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::WARN.into())
        .from_env_lossy();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
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
