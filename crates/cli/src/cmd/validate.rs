//! `astrolift validate [DIR] [--config PATH]... [--format human|json|sarif|github]
//! [--fix [--dry-run]]`.
//!
//! With `--fix`, every fix is applied first (see [`super::fix`]), one line per
//! fix goes to stderr (stdout stays the report, parseable in every format),
//! and the report is of the repository as fixed. With `--dry-run` nothing is
//! written: stdout is the unified diff, and the exit code is 1 when there is
//! something to fix (as `cargo fmt --check` and `ruff --diff` do).

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use astrolift_cli::render::{self, Format, Report, Style};
use astrolift_manifest::{DirTree, Limits, SourceTree, diagnostic, validate_repository};

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
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let limits = Limits::DEFAULT;
    let mut tree = super::open_dir(&args.dir, &limits)?;
    let options = super::validate_options(&args.dir, &args.configs, limits)?;
    if args.fix {
        let fixed = super::fix::plan(&tree, &options)?;
        if args.dry_run {
            let mut out = std::io::stdout().lock();
            super::fix::print_diff(&fixed, &mut out).context("cannot write the diff")?;
            out.flush().context("cannot write the diff")?;
            return Ok(if fixed.files.is_empty() {
                ExitCode::SUCCESS
            } else {
                super::EXIT_FINDINGS.into()
            });
        }
        super::fix::write(&args.dir, &fixed)?;
        super::fix::print_applied(&fixed, &mut std::io::stderr().lock())
            .context("cannot write the summary")?;
        // Re-read what is now on disk: the report's snippets show the fixed text.
        tree = super::open_dir(&args.dir, &limits)?;
    }
    let mut validation = validate_repository(&tree, &options);
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

/// Human output goes through `anstream`, which drops colours unless stdout
/// is a terminal (and honours `NO_COLOR` / `CLICOLOR_FORCE`); the machine
/// formats are written as they are, buffered.
fn write_report(format: Format, report: &Report<'_>, tree: &DirTree) -> std::io::Result<()> {
    let mut out: Box<dyn Write> = match format {
        Format::Human => Box::new(BufWriter::new(anstream::stdout().lock())),
        _ => Box::new(BufWriter::new(std::io::stdout().lock())),
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
