//! The four output formats of `astrolift validate`: `human`, `json`, `sarif`
//! and `github`. Every renderer takes the same [`Report`] and writes to any
//! `io::Write`; none of them decides the exit code.

pub mod github;
pub mod human;
pub mod json;
mod report;
pub mod rule_docs;
pub mod sarif;

pub use report::{Report, Style, plural, short_hash};

use std::io;

use astrolift_manifest::SourceTree;

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// rustc-style snippets, coloured on a terminal.
    #[default]
    Human,
    /// One JSON object: `{"agents": [...], "diagnostics": [...]}`.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning.
    Sarif,
    /// GitHub Actions workflow commands (`::error file=…::`).
    Github,
}

/// Writes `report` in `format`. `sources` is where the human renderer reads
/// the lines it quotes and the SARIF renderer the lines it fingerprints; the
/// other formats never read it.
pub fn render(
    format: Format,
    report: &Report<'_>,
    sources: &dyn SourceTree,
    style: Style,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    match format {
        Format::Human => human::render(report, sources, style, out),
        Format::Json => json::render(report, out),
        Format::Sarif => sarif::render(report, sources, out),
        Format::Github => github::render(report, out),
    }
}
