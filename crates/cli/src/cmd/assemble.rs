//! `astrolift assemble PATH [--root DIR] [--origins]`: the merged config manifest as JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use astrolift_manifest::Limits;
use astrolift_manifest::config::load_config;

use crate::output::outln;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The config manifest, relative to the repository root.
    path: PathBuf,
    /// The repository root: includes may not escape it.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Also print, for every value, the file it came from.
    #[arg(long)]
    origins: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let limits = Limits::DEFAULT;
    let tree = super::open_dir(&args.root, &limits)?;
    let path = super::repo_relative(&args.root, &args.path)?;
    let result = load_config(&tree, &path, &limits);
    super::print_diagnostics(&result.diagnostics);
    outln!(
        "{}",
        serde_json::to_string_pretty(&result.to_json(args.origins))?
    )?;
    Ok(if result.has_errors() {
        super::EXIT_FINDINGS.into()
    } else {
        ExitCode::SUCCESS
    })
}
