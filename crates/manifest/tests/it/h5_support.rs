//! Helpers shared by the `h5_*` tests (config, workspace, triggers, drift, schemas):
//! fixture trees and diagnostic snapshots.

use std::path::PathBuf;

use astrolift_manifest::{Diagnostic, DirTree, Limits};

/// The fixture repository `tests/fixtures5/<case>`.
pub fn fixture(case: &str) -> DirTree {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures5")
        .join(case);
    match DirTree::open(&root, Limits::DEFAULT.tarball_files) {
        Ok(tree) => tree,
        Err(error) => panic!("fixture {case}: {error}"),
    }
}

/// One line per diagnostic: `severity code path:line:col-end_line:end_col message [help]`.
pub fn render(diagnostics: &[Diagnostic]) -> Vec<String> {
    diagnostics
        .iter()
        .map(|d| {
            let help = d
                .help
                .as_deref()
                .map(|h| format!(" [help: {h}]"))
                .unwrap_or_default();
            format!(
                "{} {} {}:{}:{}-{}:{} {}{}",
                d.severity,
                d.code,
                d.path,
                d.span.line,
                d.span.column,
                d.span.end_line,
                d.span.end_column,
                d.message,
                help
            )
        })
        .collect()
}

/// Codes only, for quick assertions.
pub fn codes(diagnostics: &[Diagnostic]) -> Vec<&str> {
    diagnostics.iter().map(|d| d.code.as_str()).collect()
}
