//! Byte offsets to 1-based line/column positions.

use std::ops::Range;

use crate::diagnostic::{Code, Diagnostic, Span};

/// Maps byte offsets of one text to 1-based lines and columns.
///
/// Columns count Unicode scalar values (not bytes, not UTF-16 units), so a
/// diagnostic on a line with non-ASCII text points where an editor shows it.
#[derive(Debug, Clone)]
pub struct LineIndex<'t> {
    text: &'t str,
    line_starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    pub fn new(text: &'t str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self { text, line_starts }
    }

    /// 1-based (line, column) of a byte offset; offsets past the end clamp to it.
    pub fn position(&self, offset: usize) -> (u32, u32) {
        let offset = self.floor_char_boundary(offset.min(self.text.len()));
        let line = self.line_starts.partition_point(|&start| start <= offset) - 1;
        let start = self.line_starts[line];
        let column = self.text[start..offset].chars().count() + 1;
        (to_u32(line + 1), to_u32(column))
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

    fn floor_char_boundary(&self, mut offset: usize) -> usize {
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
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
    fn span_end_is_exclusive() {
        let index = LineIndex::new("name = \"x\"\n");
        let span = index.span(0..4);
        assert_eq!(
            (span.line, span.column, span.end_line, span.end_column),
            (1, 1, 1, 5)
        );
    }
}
