//! Diagnostics: what every validator produces and every renderer consumes.
//!
//! A diagnostic always carries a stable kebab-case [`Code`], a severity, a
//! repo-relative POSIX path and a 1-based span. Codes are declared as
//! constants next to the rule that emits them and listed in [`crate::catalogue`],
//! which `docs/diagnostics.md` mirrors (a test keeps the two in step).
//!
//! A diagnostic may carry a [`Fix`]: edits that resolve it, offered only
//! where the right change is certain (one close key, one slug, one line to
//! remove or add), never for a plaintext secret and never where two changes
//! are plausible. [`crate::fix`] applies them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How bad a finding is. Ordered from most to least severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Notice,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Notice => "notice",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A 1-based region of a file. `end_column` is exclusive (SARIF's convention):
/// a one-character token at column 5 has `end_column` 6.
///
/// A diagnostic about a whole file uses [`Span::FILE`]: line 1, column 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Span {
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

impl Span {
    /// The span used for findings about a file as a whole.
    pub const FILE: Span = Span {
        line: 1,
        column: 1,
        end_line: 1,
        end_column: 1,
    };

    pub const fn new(line: u32, column: u32, end_line: u32, end_column: u32) -> Self {
        Self {
            line,
            column,
            end_line,
            end_column,
        }
    }

    /// (line, column) of the first character.
    pub fn start(&self) -> (u32, u32) {
        (self.line, self.column)
    }

    /// (line, column) one past the last character.
    pub fn end(&self) -> (u32, u32) {
        (self.end_line, self.end_column)
    }
}

/// A stable diagnostic identifier with its default severity and a one-line summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Code {
    /// Kebab-case, namespaced: `manifest/plaintext-secret`.
    pub id: &'static str,
    pub severity: Severity,
    pub summary: &'static str,
}

impl Code {
    pub const fn new(id: &'static str, severity: Severity, summary: &'static str) -> Self {
        Self {
            id,
            severity,
            summary,
        }
    }
}

/// One finding, positioned in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: String,
    pub message: String,
    pub path: String,
    #[serde(flatten)]
    pub span: Span,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// A machine-applicable change that resolves this finding, when it is certain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<Fix>,
}

/// A machine-applicable change: a one-line description and the edits that
/// make it. Applied whole or not at all.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fix {
    pub description: String,
    pub edits: Vec<Edit>,
}

/// Replace the text of `span` in `path` by `replacement`. The span follows
/// [`Span`]'s conventions (1-based, columns in characters, `end_column`
/// exclusive); an empty span inserts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Edit {
    pub path: String,
    #[serde(flatten)]
    pub span: Span,
    pub replacement: String,
}

impl Edit {
    pub fn new(path: impl Into<String>, span: Span, replacement: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            span,
            replacement: replacement.into(),
        }
    }
}

impl Fix {
    /// A fix made of one edit.
    pub fn one(description: impl Into<String>, edit: Edit) -> Self {
        Self {
            description: description.into(),
            edits: vec![edit],
        }
    }
}

impl Diagnostic {
    /// A diagnostic with the code's default severity.
    pub fn new(
        code: &Code,
        path: impl Into<String>,
        span: Span,
        message: impl Into<String>,
    ) -> Self {
        Self {
            severity: code.severity,
            code: code.id.to_owned(),
            message: message.into(),
            path: path.into(),
            span,
            help: None,
            fix: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn with_fix(mut self, fix: Fix) -> Self {
        self.fix = Some(fix);
        self
    }

    pub fn with_severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Where `docs/diagnostics.md` is published (the project's default branch):
/// every renderer links a code to its section there, unless the operator
/// configures another copy (`ASTROLIFT_DOCS_URL`).
pub const DIAGNOSTICS_URL: &str =
    "https://github.com/astrolift/forge-bot/blob/main/docs/diagnostics.md";

/// GitHub's anchor for a heading's text: lower-cased, every character that
/// is not a letter, digit, space, `-` or `_` dropped, spaces turned into
/// `-`. So the section of `toml/syntax` is `#tomlsyntax`. Hand-written
/// because it is one line of string filtering, not worth a Markdown
/// dependency.
pub fn heading_anchor(heading_text: &str) -> String {
    heading_text
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .flat_map(char::to_lowercase)
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The URL of `code`'s section in the diagnostics catalogue published at
/// `base` (a URL of `docs/diagnostics.md`, such as [`DIAGNOSTICS_URL`]).
pub fn doc_url(base: &str, code: &str) -> String {
    format!("{base}#{}", heading_anchor(code))
}

/// Sorts diagnostics the way every renderer shows them: by path, position, then code.
pub fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (&a.path, a.span, &a.code, &a.message).cmp(&(&b.path, b.span, &b.code, &b.message))
    });
}

/// Counts by severity, for titles and summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub errors: usize,
    pub warnings: usize,
    pub notices: usize,
}

impl Counts {
    pub fn of(diagnostics: &[Diagnostic]) -> Self {
        let mut counts = Counts::default();
        for d in diagnostics {
            match d.severity {
                Severity::Error => counts.errors += 1,
                Severity::Warning => counts.warnings += 1,
                Severity::Notice => counts.notices += 1,
            }
        }
        counts
    }
}
