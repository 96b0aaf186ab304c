//! What every renderer takes: the validation's report, and how the human
//! renderer styles it.

use astrolift_manifest::{AgentSummary, Counts, Diagnostic};

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

/// The first 12 hex digits of a sha, a hash or a `sha256:` digest, as listings show them.
pub fn short_hash(hash: &str) -> &str {
    let hex = hash.strip_prefix("sha256:").unwrap_or(hash);
    hex.get(..12).unwrap_or(hex)
}

/// `1 error`, `2 errors`, `2 dispatches`: every count a summary prints (a noun ending in
/// `s`, `x`, `ch` or `sh` takes `es`).
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) {
        format!("{n} {noun}es")
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
