//! `--format sarif`: one SARIF 2.1.0 log with one run, as GitHub code
//! scanning accepts it (`github/codeql-action/upload-sarif`).
//!
//! - `tool.driver.rules` lists the codes used, each with the catalogue's
//!   one-line summary; results point at their rule by `ruleId` and `ruleIndex`.
//! - Regions use our spans unchanged: 1-based, `endColumn` exclusive, columns
//!   counted in Unicode scalar values (declared as `columnKind`).
//! - `partialFingerprints` holds a hash of code, path and message, so an
//!   alert survives lines moving above it.

use std::collections::BTreeMap;
use std::io;

use astrolift_manifest::{Diagnostic, Severity, Span, catalogue};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::Report;

pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
pub const INFORMATION_URI: &str = "https://github.com/astrolift/forge-bot";
/// The key of our own fingerprint in `partialFingerprints`.
pub const FINGERPRINT_KEY: &str = "astrolift/v1";

pub fn render(report: &Report<'_>, out: &mut dyn io::Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &log(report))?;
    writeln!(out)
}

/// The whole SARIF log as a JSON value.
pub fn log(report: &Report<'_>) -> Value {
    let rules = Rules::of(report.diagnostics);
    let results: Vec<Value> = report
        .diagnostics
        .iter()
        .map(|d| result(d, rules.index(&d.code)))
        .collect();
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "astrolift",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": INFORMATION_URI,
                "rules": rules.descriptors(),
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    })
}

/// The codes used, sorted, with their summary and default severity.
struct Rules {
    /// Code id to (summary, default severity).
    by_id: BTreeMap<String, (String, Severity)>,
}

impl Rules {
    fn of(diagnostics: &[Diagnostic]) -> Self {
        let known: BTreeMap<&str, _> = catalogue()
            .into_iter()
            .chain(astrolift_package::codes::CODES.iter().copied())
            .map(|c| (c.id, c))
            .collect();
        let by_id = diagnostics
            .iter()
            .map(|d| {
                let entry = match known.get(d.code.as_str()) {
                    Some(code) => (code.summary.to_owned(), code.severity),
                    // A code missing from the catalogue is a bug elsewhere; still
                    // describe it so the log stays valid.
                    None => (d.code.clone(), d.severity),
                };
                (d.code.clone(), entry)
            })
            .collect();
        Self { by_id }
    }

    fn index(&self, id: &str) -> usize {
        self.by_id.keys().position(|k| k == id).unwrap_or(0)
    }

    fn descriptors(&self) -> Vec<Value> {
        self.by_id
            .iter()
            .map(|(id, (summary, severity))| {
                json!({
                    "id": id,
                    "shortDescription": { "text": summary },
                    "defaultConfiguration": { "level": level(*severity) },
                })
            })
            .collect()
    }
}

fn result(diagnostic: &Diagnostic, rule_index: usize) -> Value {
    let mut text = diagnostic.message.clone();
    if let Some(help) = &diagnostic.help {
        text.push_str("\nhelp: ");
        text.push_str(help);
    }
    json!({
        "ruleId": diagnostic.code,
        "ruleIndex": rule_index,
        "level": level(diagnostic.severity),
        "message": { "text": text },
        "locations": [{ "physicalLocation": {
            "artifactLocation": { "uri": uri(&diagnostic.path) },
            "region": region(diagnostic.span),
        }}],
        "partialFingerprints": { FINGERPRINT_KEY: fingerprint(diagnostic) },
    })
}

pub fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Notice => "note",
    }
}

/// An empty span (a whole-file finding, or an insertion point) gives only
/// its start: GitHub shows an empty region badly.
fn region(span: Span) -> Value {
    if (span.line, span.column) >= (span.end_line, span.end_column) {
        return json!({ "startLine": span.line, "startColumn": span.column });
    }
    json!({
        "startLine": span.line,
        "startColumn": span.column,
        "endLine": span.end_line,
        "endColumn": span.end_column,
    })
}

/// A repo-relative POSIX path as a relative URI reference: percent-encode
/// what RFC 3986 does not allow in a path. Hand-written because it is the
/// only URI work this crate does.
fn uri(path: &str) -> String {
    let mut encoded = String::with_capacity(path.len());
    for byte in path.bytes() {
        let allowed = byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=@".contains(&byte);
        if allowed {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

fn fingerprint(diagnostic: &Diagnostic) -> String {
    let mut hasher = Sha256::new();
    for part in [&diagnostic.code, &diagnostic.path, &diagnostic.message] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hex::encode(&hasher.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_escapes_spaces_and_percent() {
        assert_eq!(uri("agents/a b/100%.md"), "agents/a%20b/100%25.md");
        assert_eq!(
            uri("agents/triage/astrolift.toml"),
            "agents/triage/astrolift.toml"
        );
    }
}
