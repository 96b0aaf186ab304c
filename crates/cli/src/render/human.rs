//! `--format human`: rustc-style snippets drawn by `annotate-snippets`, one
//! per diagnostic, then a summary line.
//!
//! Colour is decided by the caller's stream (the binary strips ANSI codes where
//! [`crate::colour`] says no); this module only chooses styled or plain.
//!
//! `discovery/undiscovered-manifest` notices beyond the first
//! [`UNDISCOVERED_SHOWN`] are summarised in one line (a folder above several
//! repositories has one per manifest); the summary line still counts each, and
//! the machine formats list each.
//!
//! Quoting source could echo a plaintext secret, so every span of a
//! `*/plaintext-secret` diagnostic is masked with `*` in the quoted text of
//! its file, for every diagnostic of that file (see [`is_secret_value`]).

use std::collections::HashMap;
use std::io;
use std::ops::Range;

use annotate_snippets::{AnnotationKind, Group, Level, Origin, Renderer, Snippet};
use astrolift_manifest::paths::escape_controls;
use astrolift_manifest::{Diagnostic, Limits, Severity, SourceTree, Span};

use super::report::{Report, Style};

pub fn render(
    report: &Report<'_>,
    sources: &dyn SourceTree,
    style: Style,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    render_diagnostics(report.diagnostics, sources, style, out)?;
    writeln!(out, "{}", report.summary_line())
}

/// The snippets alone, without the summary line: for a command (`check`) whose own
/// summary counts what it did as well as what it found.
pub fn render_diagnostics(
    diagnostics: &[Diagnostic],
    sources: &dyn SourceTree,
    style: Style,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    let renderer = match style {
        Style::Styled => Renderer::styled(),
        Style::Plain => Renderer::plain(),
    };
    let mut texts = SourceCache::new(sources, diagnostics);
    let mut undiscovered = 0;
    for diagnostic in diagnostics {
        if diagnostic.code == UNDISCOVERED {
            undiscovered += 1;
            if undiscovered > UNDISCOVERED_SHOWN {
                continue;
            }
        }
        let text = texts.get(&diagnostic.path);
        let shown = terminal_safe(diagnostic);
        let group = group(&shown, text);
        writeln!(out, "{}\n", renderer.render(&[group]))?;
    }
    if let Some(more) = undiscovered
        .checked_sub(UNDISCOVERED_SHOWN)
        .filter(|n| *n > 0)
    {
        writeln!(
            out,
            "note: {more} more `{UNDISCOVERED}` {} not shown (`--format json` lists each). Is \
             this a repository's root? Only its own astrolift.toml and \
             agents/<slug>/astrolift.toml are discovered\n",
            if more == 1 { "notice" } else { "notices" },
        )?;
    }
    Ok(())
}

/// The code whose notices are summarised past the first few.
const UNDISCOVERED: &str = "discovery/undiscovered-manifest";
/// How many `discovery/undiscovered-manifest` notices are shown in full.
pub const UNDISCOVERED_SHOWN: usize = 3;

/// True for a diagnostic whose span covers a plaintext secret value: its
/// text must never be quoted. Every such code ends in `/plaintext-secret`
/// (`manifest/plaintext-secret`, `config/plaintext-secret`, …).
pub fn is_secret_value(code: &str) -> bool {
    code.ends_with("/plaintext-secret")
}

/// File texts, read once each and with secret values masked. A file that
/// cannot be read (missing, binary, over the manifest limit) is remembered as
/// `None` and shown without a snippet. The SARIF renderer fingerprints the
/// same masked text, so no fingerprint depends on a secret value.
pub(super) struct SourceCache<'t> {
    tree: &'t dyn SourceTree,
    /// Per path, the spans to mask.
    secrets: HashMap<&'t str, Vec<Span>>,
    texts: HashMap<String, Option<String>>,
}

impl<'t> SourceCache<'t> {
    pub(super) fn new(tree: &'t dyn SourceTree, diagnostics: &'t [Diagnostic]) -> Self {
        let mut secrets: HashMap<&str, Vec<Span>> = HashMap::new();
        for d in diagnostics.iter().filter(|d| is_secret_value(&d.code)) {
            secrets.entry(d.path.as_str()).or_default().push(d.span);
        }
        Self {
            tree,
            secrets,
            texts: HashMap::new(),
        }
    }

    pub(super) fn get(&mut self, path: &str) -> Option<&str> {
        let tree = self.tree;
        let secrets = self.secrets.get(path).map_or(&[][..], Vec::as_slice);
        self.texts
            .entry(path.to_owned())
            .or_insert_with(|| {
                let text = tree.read_text(path, Limits::DEFAULT.manifest_file).ok()?;
                Some(mask(&text, secrets))
            })
            .as_deref()
    }
}

/// `text` with every character inside `spans` replaced by `*`, except line
/// breaks and quotes, so lines and columns stay where they were.
fn mask(text: &str, spans: &[Span]) -> String {
    if spans.is_empty() {
        return text.to_owned();
    }
    let mut masked = String::with_capacity(text.len());
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        for (column, c) in (1u32..).zip(line.chars()) {
            let inside = spans.iter().any(|s| {
                (s.line, s.column) <= (number, column)
                    && (number, column) < (s.end_line, s.end_column)
            });
            let keep = !inside || matches!(c, '\n' | '\r' | '"' | '\'');
            masked.push(if keep { c } else { '*' });
        }
    }
    masked
}

fn level(severity: Severity) -> Level<'static> {
    match severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Notice => Level::NOTE.with_name("notice"),
    }
}

/// `diagnostic` with no control character that could drive the terminal: its path
/// escaped whole (a file name may hold a newline or an escape, `path/control-character`),
/// its message and help escaped but for line breaks and tabs.
fn terminal_safe(diagnostic: &Diagnostic) -> Diagnostic {
    let text = |t: &str| {
        t.split_inclusive(['\n', '\t'])
            .map(|part| {
                let end = part.strip_suffix(['\n', '\t']).map_or(part.len(), str::len);
                format!("{}{}", escape_controls(&part[..end]), &part[end..])
            })
            .collect::<String>()
    };
    let mut shown = diagnostic.clone();
    shown.path = escape_controls(&diagnostic.path);
    shown.message = text(&diagnostic.message);
    shown.help = diagnostic.help.as_deref().map(text);
    shown
}

/// One diagnostic: title with code, then the quoted lines (or just the
/// location when there is nothing to quote), then `help`.
fn group<'a>(diagnostic: &'a Diagnostic, text: Option<&'a str>) -> Group<'a> {
    let level = level(diagnostic.severity);
    let title = level
        .clone()
        .primary_title(diagnostic.message.as_str())
        .id(diagnostic.code.as_str());
    let excerpt = text.and_then(|t| Excerpt::of(t, diagnostic.span));
    let mut group = match excerpt {
        Some(excerpt) => title.element(
            Snippet::source(excerpt.source)
                .line_start(diagnostic.span.line as usize)
                .path(diagnostic.path.as_str())
                .annotation(AnnotationKind::Primary.span(excerpt.highlight)),
        ),
        None => title.element(
            Origin::path(diagnostic.path.as_str())
                .line(diagnostic.span.line as usize)
                .char_column(diagnostic.span.column as usize),
        ),
    };
    if let Some(help) = &diagnostic.help {
        group = group.element(Level::HELP.message(help.as_str()));
    }
    group
}

/// The lines a span covers, and the span's byte range inside them.
#[derive(Debug, PartialEq, Eq)]
struct Excerpt<'a> {
    source: &'a str,
    highlight: Range<usize>,
}

impl<'a> Excerpt<'a> {
    /// `None` for a whole-file span or a span outside the text.
    fn of(text: &'a str, span: Span) -> Option<Self> {
        if span == Span::FILE {
            return None;
        }
        let first = line_range(text, span.line)?;
        let last = line_range(text, span.end_line.max(span.line))?;
        let start = first.start + byte_of_column(&text[first.clone()], span.column);
        let end = if span.end_line < span.line {
            start
        } else {
            last.start + byte_of_column(&text[last.clone()], span.end_column)
        };
        let source = &text[first.start..last.end];
        Some(Self {
            source,
            highlight: start - first.start..end.max(start) - first.start,
        })
    }
}

/// Byte range of 1-based line `line`, without its line terminator.
fn line_range(text: &str, line: u32) -> Option<Range<usize>> {
    let index = usize::try_from(line).ok()?.checked_sub(1)?;
    let mut start = 0;
    for (number, piece) in text.split_inclusive('\n').enumerate() {
        if number == index {
            let content = piece.trim_end_matches('\n').trim_end_matches('\r');
            return Some(start..start + content.len());
        }
        start += piece.len();
    }
    None
}

/// Byte offset of 1-based character column `column` in `line`, clamped to
/// its end.
fn byte_of_column(line: &str, column: u32) -> usize {
    let skip = usize::try_from(column.saturating_sub(1)).unwrap_or(usize::MAX);
    line.char_indices()
        .nth(skip)
        .map_or(line.len(), |(offset, _)| offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(line: u32, column: u32, end_line: u32, end_column: u32) -> Span {
        Span {
            line,
            column,
            end_line,
            end_column,
        }
    }

    #[test]
    fn excerpt_counts_characters_not_bytes() {
        let text = "a = 1\nnamé = \"x\"\n";
        let excerpt = Excerpt::of(text, span(2, 8, 2, 11)).expect("in range");
        assert_eq!(excerpt.source, "namé = \"x\"");
        assert_eq!(&excerpt.source[excerpt.highlight], "\"x\"");
    }

    #[test]
    fn excerpt_spans_several_lines_and_clamps() {
        let text = "[a]\nb = [\n  1,\n]\r\n";
        let excerpt = Excerpt::of(text, span(2, 5, 4, 99)).expect("in range");
        assert_eq!(excerpt.source, "b = [\n  1,\n]");
        assert_eq!(&excerpt.source[excerpt.highlight], "[\n  1,\n]");
    }

    #[test]
    fn mask_hides_secret_values_and_keeps_columns() {
        let text = "[secrets]\nKEY = \"sk-é1\"\nOTHER = 1\n";
        let masked = mask(text, &[span(2, 7, 2, 14)]);
        assert_eq!(masked, "[secrets]\nKEY = \"*****\"\nOTHER = 1\n");
        assert_eq!(mask(text, &[]), text);
    }

    #[test]
    fn no_excerpt_outside_the_text_or_for_whole_files() {
        assert_eq!(Excerpt::of("x\n", span(3, 1, 3, 2)), None);
        assert_eq!(Excerpt::of("x\n", Span::FILE), None);
    }
}
