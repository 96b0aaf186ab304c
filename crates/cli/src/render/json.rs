//! `--format json`: the object of docs/reference.md §4.
//!
//! `{"agents":[{"name","manifest","alias","enabled"}...],
//!   "diagnostics":[{"severity","code","message","path","line","column","end_line","end_column"[,"help"][,"fix"]}...]}`
//!
//! `fix` is `{"description","edits":[{"path","line","column","end_line","end_column","replacement"}...]}`.

use std::io;

use serde::Serialize;

use super::report::Report;
use astrolift_manifest::{AgentSummary, Diagnostic};

#[derive(Serialize)]
struct JsonReport<'a> {
    agents: &'a [AgentSummary],
    diagnostics: &'a [Diagnostic],
}

pub fn render(report: &Report<'_>, out: &mut dyn io::Write) -> io::Result<()> {
    let document = JsonReport {
        agents: report.agents,
        diagnostics: report.diagnostics,
    };
    serde_json::to_writer(&mut *out, &document)?;
    writeln!(out)
}
