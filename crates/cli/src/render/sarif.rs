//! `--format sarif`: one SARIF 2.1.0 log with one run, as GitHub code
//! scanning accepts it (`github/codeql-action/upload-sarif`).
//!
//! - `tool.driver.rules` lists the codes used. Each descriptor has the
//!   catalogue's one-line summary as `shortDescription`, and its section of
//!   `docs/diagnostics.md` (see [`super::rule_docs`]) as `fullDescription`,
//!   `help` (`text` and `markdown`) and `helpUri`: GitHub code scanning
//!   requires `fullDescription` and `help` on every rule. Results point at
//!   their rule by `ruleId` and `ruleIndex`.
//! - Regions use our spans unchanged: 1-based, `endColumn` exclusive, columns
//!   counted in Unicode scalar values (declared as `columnKind`).
//! - `partialFingerprints["astrolift/v2"]` identifies a finding across runs
//!   (see [`Fingerprints`]): a hash of the code, the path and the trimmed
//!   text of the lines the span covers, never of the line number, so an alert
//!   survives lines added or removed above it, and is a new alert when the
//!   offending line itself changes.
//! - A diagnostic's fix is the result's one `fixes` entry: its description,
//!   and per file an `artifactChange` whose `replacements` each delete a
//!   full region (an insertion is an empty one) and insert the new text.

use std::collections::{BTreeMap, HashMap};
use std::io;

use astrolift_manifest::{Diagnostic, Edit, Fix, Severity, SourceTree, Span, catalogue};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::human::SourceCache;
use super::report::Report;
use super::rule_docs;

pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
pub const INFORMATION_URI: &str = "https://github.com/astrolift/forge-bot";
/// The key of our own fingerprint in `partialFingerprints`. `v1` hashed the
/// message; `v2` hashes the offending lines (see [`Fingerprints`]).
pub const FINGERPRINT_KEY: &str = "astrolift/v2";

pub fn render(
    report: &Report<'_>,
    sources: &dyn SourceTree,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &log(report, sources))?;
    writeln!(out)
}

/// The whole SARIF log as a JSON value. `sources` is read only for the
/// fingerprints.
pub fn log(report: &Report<'_>, sources: &dyn SourceTree) -> Value {
    let rules = Rules::of(report.diagnostics);
    let mut fingerprints = Fingerprints::new(sources, report.diagnostics);
    let results: Vec<Value> = report
        .diagnostics
        .iter()
        .map(|d| result(d, rules.index(&d.code), &fingerprints.of(d)))
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
            .map(|(id, (summary, severity))| descriptor(id, summary, *severity))
            .collect()
    }
}

/// One rule: the summary as the short description, the code's section of
/// `docs/diagnostics.md` as the full description and help. A code without a
/// section (a bug the catalogue tests catch) repeats its summary, so the
/// descriptor still has every property GitHub requires.
fn descriptor(id: &str, summary: &str, severity: Severity) -> Value {
    let (full, help_text, help_markdown, help_uri) = match rule_docs::lookup(id) {
        Some(doc) => (
            doc.description.to_owned(),
            doc.text(),
            doc.markdown.to_owned(),
            rule_docs::help_uri(id),
        ),
        None => (
            summary.to_owned(),
            summary.to_owned(),
            summary.to_owned(),
            rule_docs::DIAGNOSTICS_URL.to_owned(),
        ),
    };
    json!({
        "id": id,
        "shortDescription": { "text": summary },
        "fullDescription": { "text": full },
        "help": { "text": help_text, "markdown": help_markdown },
        "helpUri": help_uri,
        "defaultConfiguration": { "level": level(severity) },
    })
}

fn result(diagnostic: &Diagnostic, rule_index: usize, fingerprint: &str) -> Value {
    let mut text = diagnostic.message.clone();
    if let Some(help) = &diagnostic.help {
        text.push_str("\nhelp: ");
        text.push_str(help);
    }
    let mut result = json!({
        "ruleId": diagnostic.code,
        "ruleIndex": rule_index,
        "level": level(diagnostic.severity),
        "message": { "text": text },
        "locations": [{ "physicalLocation": {
            "artifactLocation": { "uri": uri(&diagnostic.path) },
            "region": region(diagnostic.span),
        }}],
        "partialFingerprints": { FINGERPRINT_KEY: fingerprint },
    });
    if let (Some(fix), Some(object)) = (&diagnostic.fix, result.as_object_mut()) {
        object.insert("fixes".to_owned(), json!([sarif_fix(fix)]));
    }
    result
}

/// A SARIF `fix`: one `artifactChange` per file, its edits as
/// `replacements` in file order.
fn sarif_fix(fix: &Fix) -> Value {
    let mut by_file: BTreeMap<&str, Vec<&Edit>> = BTreeMap::new();
    for edit in &fix.edits {
        by_file.entry(edit.path.as_str()).or_default().push(edit);
    }
    let changes: Vec<Value> = by_file
        .into_iter()
        .map(|(path, mut edits)| {
            edits.sort();
            let replacements: Vec<Value> = edits
                .iter()
                .map(|edit| {
                    json!({
                        "deletedRegion": deleted_region(edit.span),
                        "insertedContent": { "text": edit.replacement },
                    })
                })
                .collect();
            json!({
                "artifactLocation": { "uri": uri(path) },
                "replacements": replacements,
            })
        })
        .collect();
    json!({ "description": { "text": fix.description }, "artifactChanges": changes })
}

/// The region a replacement deletes, always with its end: SARIF reads a
/// region without `endColumn` as "to the end of the line", so an insertion
/// point must say `endColumn` = `startColumn`.
fn deleted_region(span: Span) -> Value {
    json!({
        "startLine": span.line,
        "startColumn": span.column,
        "endLine": span.end_line,
        "endColumn": span.end_column,
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

/// Stable identities of findings across runs.
///
/// A finding's fingerprint is SHA-256 (first 16 bytes, hex) of its code, its
/// path, the text of the lines its span covers (each trimmed, secret values
/// masked as the human renderer masks them) and an occurrence number that
/// tells apart findings equal in all of these (counted in the report's
/// order). The line number is deliberately left out: lines added or removed
/// above a finding do not change it, while editing the offending line does.
/// A finding on a whole file (an empty span) or in a file that cannot be read
/// hashes no line text, so it is one per code and file.
struct Fingerprints<'t> {
    sources: SourceCache<'t>,
    /// Per path, the byte offset of each line's start.
    line_starts: HashMap<String, Vec<usize>>,
    /// How many findings each (code, path, lines) hash has had so far.
    occurrences: HashMap<[u8; 32], u32>,
}

impl<'t> Fingerprints<'t> {
    fn new(tree: &'t dyn SourceTree, diagnostics: &'t [Diagnostic]) -> Self {
        Self {
            sources: SourceCache::new(tree, diagnostics),
            line_starts: HashMap::new(),
            occurrences: HashMap::new(),
        }
    }

    fn of(&mut self, diagnostic: &Diagnostic) -> String {
        let lines = self.offending_lines(diagnostic);
        let mut hasher = Sha256::new();
        for part in [&diagnostic.code, &diagnostic.path, &lines] {
            hasher.update(part.as_bytes());
            hasher.update([0]);
        }
        let key: [u8; 32] = hasher.clone().finalize().into();
        let seen = self.occurrences.entry(key).or_insert(0);
        hasher.update(seen.to_be_bytes());
        *seen += 1;
        hex::encode(&hasher.finalize()[..16])
    }

    /// The trimmed lines the span covers, joined by `\n`; empty for an empty
    /// span or an unreadable file. A span ending at column 1 does not cover
    /// its last line.
    fn offending_lines(&mut self, diagnostic: &Diagnostic) -> String {
        let span = diagnostic.span;
        if (span.line, span.column) >= (span.end_line, span.end_column) {
            return String::new();
        }
        let Some(text) = self.sources.get(&diagnostic.path) else {
            return String::new();
        };
        let starts = self
            .line_starts
            .entry(diagnostic.path.clone())
            .or_insert_with(|| line_starts(text));
        let last = if span.end_column <= 1 && span.end_line > span.line {
            span.end_line - 1
        } else {
            span.end_line
        };
        let line_text = |number: u32| -> Option<&str> {
            let index = usize::try_from(number).ok()?.checked_sub(1)?;
            let start = *starts.get(index)?;
            let end = starts.get(index + 1).copied().unwrap_or(text.len());
            text.get(start..end).map(str::trim)
        };
        (span.line..=last)
            .map_while(line_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
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
