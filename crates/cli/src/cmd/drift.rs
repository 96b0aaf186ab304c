//! `astrolift drift OLD NEW [--format human|json]`: drift between two checkouts
//! (`text` is accepted for `human`, its name before every command said `human`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use astrolift_manifest::drift::drift_between_trees;
use astrolift_manifest::{DirTree, Limits};

use crate::output::outln;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The old checkout (a directory).
    old: PathBuf,
    /// The new checkout (a directory).
    new: PathBuf,
    /// `human` (`text` is accepted too) or `json`.
    #[arg(long, value_enum, default_value_t = DriftFormat::Human)]
    format: DriftFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DriftFormat {
    #[value(alias = "text")]
    Human,
    Json,
}

/// Exit 1 when any drift is critical (it would fail a resume), else 0.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let limits = Limits::DEFAULT;
    let open = |dir: &PathBuf| {
        DirTree::open(dir, limits.tarball_files)
            .with_context(|| format!("cannot list {}", dir.display()))
    };
    let (old, new) = (open(&args.old)?, open(&args.new)?);
    let report = drift_between_trees(&old, &new, &limits);
    match args.format {
        DriftFormat::Human => crate::output::text(&report.to_text())?,
        DriftFormat::Json => outln!("{}", serde_json::to_string_pretty(&report)?)?,
    }
    Ok(if report.has_critical() {
        super::EXIT_FINDINGS.into()
    } else {
        ExitCode::SUCCESS
    })
}
