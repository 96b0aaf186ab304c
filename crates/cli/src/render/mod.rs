//! The four output formats of `astrolift validate`: `human`, `json`, `sarif`
//! and `github`. Every renderer takes the same [`Report`] and writes to any
//! `io::Write`; none of them decides the exit code.

pub mod github;
pub mod human;
pub mod json;
pub mod rule_docs;
pub mod sarif;

use std::io;

use astrolift_manifest::{AgentSummary, Counts, Diagnostic, SourceTree};

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

/// What a validation found, as every renderer sees it.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    pub agents: &'a [AgentSummary],
    /// Sorted the way they are shown (see `astrolift_manifest::diagnostic::sort`).
    pub diagnostics: &'a [Diagnostic],
}

impl Report<'_> {
    /// `2 errors, 1 warning, 0 notices; 3 agents`.
    pub fn summary_line(&self) -> String {
        let counts = Counts::of(self.diagnostics);
        format!(
            "{}, {}, {}; {}",
            plural(counts.errors, "error"),
            plural(counts.warnings, "warning"),
            plural(counts.notices, "notice"),
            plural(self.agents.len(), "agent"),
        )
    }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// How the human renderer styles its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// ANSI colours; the caller's stream strips them where they don't belong.
    Styled,
    Plain,
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
