//! Byte offsets to 1-based line/column positions.

use std::ops::Range;

use crate::diagnostic::{Code, Diagnostic, Edit, Span};

/// Maps byte offsets of one text to 1-based lines and columns.
///
/// Columns count Unicode scalar values (not bytes, not UTF-16 units), so a
/// diagnostic on a line with non-ASCII text points where an editor shows it.
///
/// The index keeps a checkpoint every [`CHECKPOINT_BYTES`] of text (its line, its
/// column and its line's start) rather than every line start: its size does not grow
/// with the number of lines (a 32 MiB JSON export of line breaks would otherwise cost
/// 256 MiB), and a position costs a binary search plus a scan of at most one stretch,
/// however long its line (a column counted from the line start made thousands of
/// diagnostics on one long line quadratic).
#[derive(Debug, Clone)]
pub struct LineIndex<'t> {
    text: &'t str,
    checkpoints: Vec<Checkpoint>,
}

/// Bytes of text between two checkpoints (a checkpoint sits on the next char boundary).
pub const CHECKPOINT_BYTES: usize = 1024;

/// Where a byte offset of the text is: 0-based line, 0-based column (characters),
/// and the byte offset its line starts at.
#[derive(Debug, Clone, Copy)]
struct Checkpoint {
    offset: usize,
    line: usize,
    column: usize,
    line_start: usize,
}

impl<'t> LineIndex<'t> {
    pub fn new(text: &'t str) -> Self {
        let mut here = Checkpoint {
            offset: 0,
            line: 0,
            column: 0,
            line_start: 0,
        };
        let mut checkpoints = vec![here];
        while here.offset < text.len() {
            let mut next = (here.offset + CHECKPOINT_BYTES).min(text.len());
            while !text.is_char_boundary(next) {
                next += 1;
            }
            here = advance(text, here, next);
            checkpoints.push(here);
        }
        Self { text, checkpoints }
    }

    /// 1-based (line, column) of a byte offset; offsets past the end clamp to it.
    pub fn position(&self, offset: usize) -> (u32, u32) {
        let at = self.locate(offset);
        (to_u32(at.line + 1), to_u32(at.column + 1))
    }

    /// The span covering a byte range; `end_column` is exclusive.
    pub fn span(&self, range: Range<usize>) -> Span {
        let (line, column) = self.position(range.start);
        let (end_line, end_column) = self.position(range.end.max(range.start));
        Span {
            line,
            column,
            end_line,
            end_column,
        }
    }

    pub fn text(&self) -> &'t str {
        self.text
    }

    /// The byte offset of a 1-based (line, column), where column counts
    /// characters; `None` past the end of the line or of the text. Column
    /// "one past the last character" is the end of the line (before its
    /// line break).
    pub fn offset(&self, line: u32, column: u32) -> Option<usize> {
        let line = usize::try_from(line).ok()?.checked_sub(1)?;
        let start = self.start_of_line(line)?;
        let end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        let steps = usize::try_from(column).ok()?.checked_sub(1)?;
        let body = &self.text[start..end];
        if steps == body.chars().count() {
            return Some(end);
        }
        body.char_indices().nth(steps).map(|(i, _)| start + i)
    }

    /// The byte offset 0-based `line` starts at; `None` past the last line.
    fn start_of_line(&self, line: usize) -> Option<usize> {
        if line == 0 {
            return Some(0);
        }
        // The last checkpoint on an earlier line: the line starts after it, within
        // one stretch (or it does not exist).
        let after = self.checkpoints.partition_point(|c| c.line < line);
        let from = self.checkpoints[after.checked_sub(1)?];
        let newline = self.text[from.offset..]
            .match_indices('\n')
            .nth(line - from.line - 1)?;
        Some(from.offset + newline.0 + 1)
    }

    /// An edit replacing the bytes `range` of this text in `path`.
    pub fn edit(&self, path: &str, range: Range<usize>, replacement: impl Into<String>) -> Edit {
        Edit::new(path, self.span(range), replacement)
    }

    /// The whole lines holding `range` (line breaks included), when nothing
    /// but blanks precedes it on its first line and nothing but blanks or a
    /// `#` comment follows it on its last: the range to delete to remove
    /// an entry that stands on lines of its own.
    pub fn own_lines(&self, range: Range<usize>) -> Option<Range<usize>> {
        let text = self.text;
        let end = range.end.min(text.len());
        let first = self.line_start(range.start);
        let last_end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
        let before = text.get(first..range.start)?;
        let after = text.get(end..last_end)?.trim();
        let blank_before = before.chars().all(|c| c == ' ' || c == '\t');
        (blank_before && (after.is_empty() || after.starts_with('#'))).then_some(first..last_end)
    }

    /// The start of the line holding byte `offset`.
    pub fn line_start(&self, offset: usize) -> usize {
        self.locate(offset).line_start
    }

    /// The line break this text uses: `\r\n` when its first line ends so.
    pub fn newline(&self) -> &'static str {
        match self.text.find('\n') {
            Some(i) if i > 0 && self.text.as_bytes()[i - 1] == b'\r' => "\r\n",
            _ => "\n",
        }
    }

    /// Where byte `offset` is (clamped to the text, floored to a char boundary): from
    /// the last checkpoint at or before it, one stretch scanned.
    fn locate(&self, offset: usize) -> Checkpoint {
        let offset = self.floor_char_boundary(offset.min(self.text.len()));
        let after = self.checkpoints.partition_point(|c| c.offset <= offset);
        advance(self.text, self.checkpoints[after.saturating_sub(1)], offset)
    }

    fn floor_char_boundary(&self, mut offset: usize) -> usize {
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }
}

/// Where `to` is (a char boundary at or after `from.offset`), scanning from `from`.
fn advance(text: &str, from: Checkpoint, to: usize) -> Checkpoint {
    let stretch = &text[from.offset..to];
    match stretch.rfind('\n') {
        None => Checkpoint {
            offset: to,
            column: from.column + stretch.chars().count(),
            ..from
        },
        Some(last) => Checkpoint {
            offset: to,
            line: from.line + stretch.bytes().filter(|&b| b == b'\n').count(),
            column: stretch[last + 1..].chars().count(),
            line_start: from.offset + last + 1,
        },
    }
}

/// Records a diagnostic of `path` at the byte `range` of the indexed text and
/// returns it, for `help` or severity tweaks. Shared by the TOML and YAML
/// readers, which each keep their own list.
pub fn push_at<'d>(
    diagnostics: &'d mut Vec<Diagnostic>,
    index: &LineIndex<'_>,
    path: &str,
    code: &Code,
    range: Range<usize>,
    message: impl Into<String>,
) -> &'d mut Diagnostic {
    diagnostics.push(Diagnostic::new(code, path, index.span(range), message));
    let last = diagnostics.len() - 1;
    &mut diagnostics[last]
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_and_count_chars() {
        let index = LineIndex::new("a = 1\nnamé = \"x\"\n");
        assert_eq!(index.position(0), (1, 1));
        assert_eq!(index.position(6), (2, 1));
        // 'é' is two bytes but one column.
        assert_eq!(index.position(12), (2, 6));
        assert_eq!(index.position(10_000), (3, 1));
    }

    #[test]
    fn offsets_invert_positions() {
        let text = "a = 1\nnamé = \"x\"\n";
        let index = LineIndex::new(text);
        for offset in [0, 5, 6, 9, 11, 12, 17, 18] {
            let (line, column) = index.position(offset);
            assert_eq!(index.offset(line, column), Some(offset));
        }
        assert_eq!(index.offset(1, 7), None);
        assert_eq!(index.offset(4, 1), None);
        assert_eq!(index.offset(0, 1), None);
    }

    #[test]
    fn own_lines_only_for_entries_alone_on_their_lines() {
        let text = "[environment]\n  PATH = \"x\" # old\nA = { PATH = 1 }\n";
        let index = LineIndex::new(text);
        assert_eq!(index.own_lines(16..26), Some(14..33));
        assert_eq!(index.own_lines(39..43), None);
    }

    /// The index without checkpoints: every line start.
    fn naive_position(text: &str, offset: usize) -> (u32, u32) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count();
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        (
            to_u32(line + 1),
            to_u32(text[start..offset].chars().count() + 1),
        )
    }

    proptest::proptest! {
        #[test]
        fn checkpoints_agree_with_every_line_start(
            pieces in proptest::collection::vec(
                proptest::prop_oneof!["\n", "a", "é", "\r\n", "x{0,1500}", "€{0,700}"], 0..40),
            probes in proptest::collection::vec(0usize..60_000, 1..40),
        ) {
            let text: String = pieces.concat();
            let index = LineIndex::new(&text);
            for probe in probes {
                let offset = probe % (text.len() + 2);
                let (line, column) = index.position(offset);
                proptest::prop_assert_eq!((line, column), naive_position(&text, offset));
                if text.is_char_boundary(offset.min(text.len())) {
                    proptest::prop_assert_eq!(index.offset(line, column), Some(offset.min(text.len())));
                    let start = text[..offset.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
                    proptest::prop_assert_eq!(index.line_start(offset), start);
                }
            }
        }
    }

    #[test]
    fn span_end_is_exclusive() {
        let index = LineIndex::new("name = \"x\"\n");
        let span = index.span(0..4);
        assert_eq!(
            (span.line, span.column, span.end_line, span.end_column),
            (1, 1, 1, 5)
        );
    }
}
