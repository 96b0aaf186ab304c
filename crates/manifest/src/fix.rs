//! Applying the fixes diagnostics carry, as pure text transformations.
//!
//! Callers (`astrolift validate --fix`, the pull-request suggestions) read
//! and write files; this module only decides which fixes fit together and
//! what a file's text becomes. Fixes are chosen like `rustfix` and `ruff`
//! do: in diagnostic order, a fix is taken whole when none of its edits
//! overlaps an edit already taken, and skipped otherwise (a later pass,
//! after re-validation, offers it again if it still applies).
//! [`fix_tree`] runs those passes over a [`SourceTree`] until nothing is
//! left to fix, so applying its result a second time changes nothing.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use crate::diagnostic::{Diagnostic, Edit, Fix};
use crate::position::LineIndex;
use crate::tree::{FileEntry, ReadError, SourceTree};

/// Validation passes [`fix_tree`] runs at most. Each pass applies every
/// fix that does not overlap another; fixes only ever remove a finding, so
/// two passes suffice for every rule today and the bound only stops a
/// future rule whose fix would oscillate.
pub const MAX_PASSES: usize = 8;

/// Why edits could not be applied to a text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FixError {
    #[error("edit at {line}:{column} is outside the file")]
    OutOfRange { line: u32, column: u32 },
    #[error("edits overlap at {line}:{column}")]
    Overlap { line: u32, column: u32 },
    #[error("{path}: cannot read the file to fix: {error}")]
    Unreadable { path: String, error: ReadError },
    #[error("{path}: {error}")]
    InFile { path: String, error: Box<FixError> },
}

/// One fix applied by [`fix_tree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub path: String,
    pub line: u32,
    pub code: String,
    pub description: String,
}

/// What [`fix_tree`] did: every changed file's text before and after,
/// the fixes applied in order, and the diagnostics of the fixed tree.
#[derive(Debug, Clone, Default)]
pub struct Fixed {
    pub files: BTreeMap<String, Changed>,
    pub applied: Vec<Applied>,
    pub diagnostics: Vec<Diagnostic>,
}

/// A file's text before and after fixing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub before: String,
    pub after: String,
}

/// Validates `tree` with `validate`, applies every fix that fits, and
/// validates again, until a pass applies nothing (at most [`MAX_PASSES`]).
/// Files are read under `file_limit` bytes; nothing is written: the caller
/// writes [`Fixed::files`].
pub fn fix_tree(
    tree: &dyn SourceTree,
    file_limit: u64,
    validate: impl Fn(&dyn SourceTree) -> Vec<Diagnostic>,
) -> Result<Fixed, FixError> {
    let mut overlay = Overlay::new(tree);
    let mut fixed = Fixed::default();
    for _ in 0..MAX_PASSES {
        fixed.diagnostics = validate(&overlay);
        let chosen = choose(&fixed.diagnostics);
        let mut changed_any = false;
        for (path, edits) in group_by_file(&chosen) {
            let before = overlay.text(&path, file_limit)?;
            let after = apply(&before, &edits).map_err(|error| FixError::InFile {
                path: path.clone(),
                error: Box::new(error),
            })?;
            if after != before {
                changed_any = true;
                overlay.set(&path, after);
            }
        }
        if !changed_any {
            break;
        }
        fixed.applied.extend(chosen.iter().map(|d| applied(d)));
    }
    fixed.files = overlay.into_changes();
    Ok(fixed)
}

fn applied(diagnostic: &Diagnostic) -> Applied {
    Applied {
        path: diagnostic.path.clone(),
        line: diagnostic.span.line,
        code: diagnostic.code.clone(),
        description: diagnostic
            .fix
            .as_ref()
            .map(|f| f.description.clone())
            .unwrap_or_default(),
    }
}

/// A tree with some files' text replaced: what validation reads between passes.
struct Overlay<'b> {
    base: &'b dyn SourceTree,
    entries: Vec<FileEntry>,
    originals: BTreeMap<String, String>,
    texts: BTreeMap<String, String>,
}

impl<'b> Overlay<'b> {
    fn new(base: &'b dyn SourceTree) -> Self {
        Self {
            base,
            entries: base.entries().to_vec(),
            originals: BTreeMap::new(),
            texts: BTreeMap::new(),
        }
    }

    fn text(&self, path: &str, limit: u64) -> Result<String, FixError> {
        if let Some(text) = self.texts.get(path) {
            return Ok(text.clone());
        }
        let unreadable = |error| FixError::Unreadable {
            path: path.to_owned(),
            error,
        };
        let bytes = self.base.read(path, limit).map_err(unreadable)?;
        String::from_utf8(bytes.into_owned()).map_err(|_| unreadable(ReadError::NotUtf8))
    }

    fn set(&mut self, path: &str, text: String) {
        if !self.originals.contains_key(path)
            && let Ok(original) = self.text(path, u64::MAX)
        {
            self.originals.insert(path.to_owned(), original);
        }
        if let Some(entry) = self.entries.iter_mut().find(|e| e.path == path) {
            entry.size = text.len() as u64;
        }
        self.texts.insert(path.to_owned(), text);
    }

    fn into_changes(self) -> BTreeMap<String, Changed> {
        let mut originals = self.originals;
        self.texts
            .into_iter()
            .filter_map(|(path, after)| {
                let before = originals.remove(&path)?;
                (before != after).then_some((path, Changed { before, after }))
            })
            .collect()
    }
}

impl SourceTree for Overlay<'_> {
    fn entries(&self) -> &[FileEntry] {
        &self.entries
    }

    fn read(&self, path: &str, limit: u64) -> Result<Cow<'_, [u8]>, ReadError> {
        let Some(text) = self.texts.get(path) else {
            return self.base.read(path, limit);
        };
        if text.len() as u64 > limit {
            return Err(ReadError::TooLarge {
                size: text.len() as u64,
                limit,
            });
        }
        Ok(Cow::Borrowed(text.as_bytes()))
    }
}

/// The diagnostics whose fixes apply together: every fixed diagnostic in
/// order, less those whose fix overlaps one already chosen. Identical fixes
/// (two diagnostics proposing the same change) are taken once.
pub fn choose(diagnostics: &[Diagnostic]) -> Vec<&Diagnostic> {
    let mut chosen: Vec<&Diagnostic> = Vec::new();
    let mut taken: Vec<&Edit> = Vec::new();
    for diagnostic in diagnostics {
        let Some(fix) = diagnostic.fix.as_ref() else {
            continue;
        };
        let repeated = chosen.iter().any(|c| c.fix.as_ref() == Some(fix));
        let clashes = fix
            .edits
            .iter()
            .any(|edit| taken.iter().any(|t| overlaps(t, edit)));
        if fix.edits.is_empty() || repeated || clashes || edits_clash_among_themselves(fix) {
            continue;
        }
        taken.extend(fix.edits.iter());
        chosen.push(diagnostic);
    }
    chosen
}

/// The edits of the chosen diagnostics' fixes, by file.
pub fn group_by_file(chosen: &[&Diagnostic]) -> BTreeMap<String, Vec<Edit>> {
    let mut by_file: BTreeMap<String, Vec<Edit>> = BTreeMap::new();
    let edits = chosen
        .iter()
        .filter_map(|d| d.fix.as_ref())
        .flat_map(|f| f.edits.iter());
    for edit in edits {
        by_file
            .entry(edit.path.clone())
            .or_default()
            .push(edit.clone());
    }
    by_file
}

/// `text` with `edits` applied (all of one file). Edits may come in any
/// order; overlapping edits or positions outside the text are refused, and
/// then nothing is applied.
pub fn apply(text: &str, edits: &[Edit]) -> Result<String, FixError> {
    let index = LineIndex::new(text);
    let mut ranges: Vec<(Range<usize>, &str)> = Vec::with_capacity(edits.len());
    for edit in edits {
        let span = edit.span;
        let start = index.offset(span.line, span.column);
        let end = index.offset(span.end_line, span.end_column);
        let (Some(start), Some(end)) = (start, end) else {
            return Err(FixError::OutOfRange {
                line: span.line,
                column: span.column,
            });
        };
        if end < start {
            return Err(FixError::OutOfRange {
                line: span.line,
                column: span.column,
            });
        }
        ranges.push((start..end, edit.replacement.as_str()));
    }
    ranges.sort_by_key(|(range, _)| (range.start, range.end));
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for (range, replacement) in ranges {
        if range.start < cursor {
            let (line, column) = index.position(range.start);
            return Err(FixError::Overlap { line, column });
        }
        out.push_str(&text[cursor..range.start]);
        out.push_str(replacement);
        cursor = range.end;
    }
    out.push_str(&text[cursor..]);
    Ok(out)
}

/// Two edits of one file touch the same text. Two insertions at one point
/// clash too: their order would be a guess.
fn overlaps(a: &Edit, b: &Edit) -> bool {
    if a.path != b.path {
        return false;
    }
    let (a_start, a_end) = (a.span.start(), a.span.end());
    let (b_start, b_end) = (b.span.start(), b.span.end());
    if a_start == b_start {
        return true;
    }
    a_start < b_end && b_start < a_end
}

fn edits_clash_among_themselves(fix: &Fix) -> bool {
    fix.edits.iter().enumerate().any(|(i, a)| {
        fix.edits[i + 1..]
            .iter()
            .any(|b| a.path == b.path && overlaps(a, b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::{Code, Severity, Span};

    const CODE: Code = Code::new("test/code", Severity::Error, "test");

    fn edit(line: u32, column: u32, end_line: u32, end_column: u32, text: &str) -> Edit {
        Edit::new(
            "a.toml",
            Span::new(line, column, end_line, end_column),
            text,
        )
    }

    fn fixed(edit: Edit) -> Diagnostic {
        Diagnostic::new(&CODE, "a.toml", Span::FILE, "m").with_fix(Fix::one("d", edit))
    }

    #[test]
    fn applies_replacements_insertions_and_deletions() {
        let text = "nmae = \"x\"\nPATH = \"y\"\n";
        let edits = [
            edit(1, 1, 1, 5, "name"),
            edit(2, 1, 3, 1, ""),
            edit(1, 1, 1, 1, "schema = 1\n"),
        ];
        let out = apply(text, &edits).map_err(|e| e.to_string());
        assert_eq!(out.as_deref(), Ok("schema = 1\nname = \"x\"\n"));
        let overlapping = [edit(1, 1, 1, 5, "name"), edit(1, 4, 1, 6, "")];
        assert_eq!(
            apply(text, &overlapping),
            Err(FixError::Overlap { line: 1, column: 4 })
        );
    }

    #[test]
    fn positions_outside_the_text_are_refused() {
        assert_eq!(
            apply("a\n", &[edit(1, 5, 1, 6, "")]),
            Err(FixError::OutOfRange { line: 1, column: 5 })
        );
    }

    #[test]
    fn choose_skips_overlapping_and_repeated_fixes() {
        let diagnostics = [
            fixed(edit(1, 1, 1, 5, "name")),
            // An insertion where a chosen edit starts: which goes first is a guess.
            fixed(edit(1, 1, 1, 1, "schema = 1\n")),
            fixed(edit(1, 3, 1, 8, "other")),
            fixed(edit(1, 1, 1, 5, "name")),
            fixed(edit(2, 1, 2, 3, "")),
        ];
        let chosen = choose(&diagnostics);
        assert_eq!(group_by_file(&chosen)["a.toml"].len(), 2);
    }
}
