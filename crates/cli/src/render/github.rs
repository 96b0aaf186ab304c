//! `--format github`: GitHub Actions workflow commands, one per diagnostic:
//! `::error file=…,line=…,col=…,endLine=…,endColumn=…,title=<code>::message`.
//!
//! Escaping follows GitHub's `@actions/core` toolkit (`escapeData`,
//! `escapeProperty`); it is written by hand because no maintained Rust crate
//! implements just these two rules.

use std::io;

use astrolift_manifest::{Diagnostic, Severity};

use super::report::Report;

pub fn render(report: &Report<'_>, out: &mut dyn io::Write) -> io::Result<()> {
    for diagnostic in report.diagnostics {
        writeln!(out, "{}", command(diagnostic))?;
    }
    Ok(())
}

/// The workflow command for one diagnostic.
pub fn command(diagnostic: &Diagnostic) -> String {
    let name = match diagnostic.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Notice => "notice",
    };
    let properties = properties(diagnostic)
        .iter()
        .map(|(key, value)| format!("{key}={}", escape_property(value)))
        .collect::<Vec<_>>()
        .join(",");
    let mut message = diagnostic.message.clone();
    if let Some(help) = &diagnostic.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    format!("::{name} {properties}::{}", escape_data(&message))
}

/// `file`, `line`, `col`, `endLine`, `endColumn`, `title`.
///
/// Columns are only given for a single-line span (GitHub ignores or rejects
/// them otherwise) and `endColumn` only for a non-empty one. GitHub's
/// `endColumn` is inclusive (it defaults to `col`, a one-character
/// annotation), so it is our exclusive `end_column` minus one.
fn properties(diagnostic: &Diagnostic) -> Vec<(&'static str, String)> {
    let span = diagnostic.span;
    let mut properties = vec![
        ("file", diagnostic.path.clone()),
        ("line", span.line.to_string()),
    ];
    if span.line == span.end_line {
        properties.push(("col", span.column.to_string()));
        if span.end_column > span.column {
            properties.push(("endLine", span.end_line.to_string()));
            properties.push(("endColumn", (span.end_column - 1).to_string()));
        }
    } else {
        properties.push(("endLine", span.end_line.to_string()));
    }
    properties.push(("title", diagnostic.code.clone()));
    properties
}

/// `escapeData`: `%`, `\r` and `\n` in a command's message. Other control
/// characters (an escape sequence in a hostile key name, say) become U+FFFD
/// so they cannot drive the log viewer.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
        .replace(|c: char| c.is_control() && c != '\t', "\u{fffd}")
}

/// `escapeProperty`: `escapeData` plus `:` and `,` in a property value.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_the_actions_toolkit() {
        assert_eq!(escape_data("100%\r\nnext"), "100%25%0D%0Anext");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
        assert_eq!(escape_data("a\u{1b}[31m\tb"), "a\u{fffd}[31m\tb");
    }
}
