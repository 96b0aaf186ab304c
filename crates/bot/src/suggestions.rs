//! Pull-request suggestions: which fixes become GitHub ```suggestion
//! comments of one review, and which stay annotations.
//!
//! Pure: the caller hands the diagnostics of the pull request's head, the
//! lines each changed file adds (from the `patch` GitHub lists per file,
//! see [`added_lines`]) and the head's file texts; this module says what to
//! post. A suggestion replaces whole lines, so a fix becomes one only when
//! every line it touches is a line the pull request added (GitHub accepts
//! review comments on diff lines only, and a reviewer should only be asked
//! about lines the pull request wrote). Everything else stays an
//! annotation. Comments are cut into reviews of at most
//! [`COMMENTS_PER_REVIEW`], as check-run annotations are batched.

use std::collections::{BTreeMap, BTreeSet};

use astrolift_forge::github::trim_chars;
use astrolift_manifest::fix::apply;
use astrolift_manifest::{Diagnostic, Edit};

/// Review comments per request (the same batch as annotations; forge
/// refuses more).
pub use astrolift_forge::github::COMMENTS_PER_REVIEW;
/// GitHub refuses a comment body over 65,536 characters; a suggestion
/// that would not fit stays an annotation.
pub const MAX_COMMENT_CHARS: usize = 65_536;

/// One review comment on the new side of the diff: `line`, or the range
/// `start_line..=line` when `start_line` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuggestionComment {
    pub path: String,
    pub start_line: Option<u32>,
    pub line: u32,
    pub body: String,
}

/// What to post for one head: reviews of comments, the diagnostics
/// suggested (in comment order), and those whose fixes could not be
/// suggested (they stay annotations).
#[derive(Debug, Default)]
pub struct SuggestionPlan<'d> {
    pub reviews: Vec<Vec<SuggestionComment>>,
    pub suggested: Vec<&'d Diagnostic>,
    pub not_suggested: Vec<&'d Diagnostic>,
}

/// The new-file line numbers a unified-diff `patch` adds (`+` lines).
/// Malformed hunk headers end the reading: what was read stays.
pub fn added_lines(patch: &str) -> BTreeSet<u32> {
    let mut added = BTreeSet::new();
    let mut next: Option<u32> = None;
    for line in patch.lines() {
        if let Some(header) = line.strip_prefix("@@ ") {
            next = new_start(header);
            if next.is_none() {
                break;
            }
            continue;
        }
        let Some(current) = next else { continue };
        match line.as_bytes().first() {
            Some(b'+') => {
                added.insert(current);
                next = current.checked_add(1);
            }
            Some(b'-') | Some(b'\\') => {}
            _ => next = current.checked_add(1),
        }
    }
    added
}

/// `-a,b +c,d @@` → c.
fn new_start(header: &str) -> Option<u32> {
    let plus = header.split_whitespace().find(|w| w.starts_with('+'))?;
    let start = plus.trim_start_matches('+').split(',').next()?;
    start.parse().ok()
}

/// Plans the suggestions of `diagnostics` (those with a fix), given the
/// lines each file adds (`added`, by path) and the head's text of a file.
pub fn plan<'d>(
    diagnostics: &'d [Diagnostic],
    added: &BTreeMap<String, BTreeSet<u32>>,
    text_of: impl Fn(&str) -> Option<String>,
) -> SuggestionPlan<'d> {
    let mut plan = SuggestionPlan::default();
    let mut comments = Vec::new();
    for diagnostic in diagnostics.iter().filter(|d| d.fix.is_some()) {
        match suggestion(diagnostic, added, &text_of) {
            Some(comment) => {
                comments.push(comment);
                plan.suggested.push(diagnostic);
            }
            None => plan.not_suggested.push(diagnostic),
        }
    }
    plan.reviews = comments
        .chunks(COMMENTS_PER_REVIEW)
        .map(<[SuggestionComment]>::to_vec)
        .collect();
    plan
}

fn suggestion(
    diagnostic: &Diagnostic,
    added: &BTreeMap<String, BTreeSet<u32>>,
    text_of: &impl Fn(&str) -> Option<String>,
) -> Option<SuggestionComment> {
    let fix = diagnostic.fix.as_ref()?;
    let path = &fix.edits.first()?.path;
    if fix.edits.iter().any(|e| &e.path != path) {
        return None;
    }
    let (first, last) = covered_lines(&fix.edits)?;
    let lines = added.get(path)?;
    if !(first..=last).all(|line| lines.contains(&line)) {
        return None;
    }
    let text = text_of(path)?;
    let replacement = replaced_lines(&text, &fix.edits, first, last)?;
    let body = body(diagnostic, &fix.description, &replacement)?;
    Some(SuggestionComment {
        path: path.clone(),
        start_line: (first != last).then_some(first),
        line: last,
        body,
    })
}

/// The whole lines the edits touch. An edit ending at column 1 of a line
/// (a removed line with its break) does not touch that line; an insertion
/// at column 1 is suggested on the line it precedes.
fn covered_lines(edits: &[Edit]) -> Option<(u32, u32)> {
    let first = edits.iter().map(|e| e.span.line).min()?;
    let last = edits
        .iter()
        .map(|e| {
            let span = e.span;
            if span.end_column == 1 && span.end_line > span.line {
                span.end_line - 1
            } else {
                span.end_line
            }
        })
        .max()?;
    Some((first, last.max(first)))
}

/// The text of lines `first..=last` once the edits are applied: the
/// suggestion's content (without the final line break).
fn replaced_lines(text: &str, edits: &[Edit], first: u32, last: u32) -> Option<String> {
    let fixed = apply(text, edits).ok()?;
    let before: Vec<&str> = text.split_inclusive('\n').collect();
    let after: Vec<&str> = fixed.split_inclusive('\n').collect();
    let first = usize::try_from(first).ok()?.checked_sub(1)?;
    let last = usize::try_from(last).ok()?;
    // Lines after the touched ones are the same in both texts.
    let tail = before.len().checked_sub(last)?;
    let end = after.len().checked_sub(tail)?;
    let replaced: String = after.get(first..end)?.concat();
    Some(replaced.strip_suffix('\n').unwrap_or(&replaced).to_owned())
}

/// The comment: code, message and fix, then the suggestion block, fenced
/// with more backticks than the content holds in a row. At most
/// [`MAX_COMMENT_CHARS`]: the explanation is cut (with a note) to make
/// room, the suggestion never is; `None` when the block alone is too long.
fn body(diagnostic: &Diagnostic, description: &str, replacement: &str) -> Option<String> {
    let longest = replacement
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let replacement = if replacement.is_empty() {
        String::new()
    } else {
        format!("{replacement}\n")
    };
    let block = format!("{fence}suggestion\n{replacement}{fence}\n");
    let explanation = format!(
        "**{}** ({}): {}\n\nFix: {}\n\n",
        diagnostic.code,
        diagnostic.severity,
        diagnostic.message.replace('\n', " "),
        description,
    );
    let room = MAX_COMMENT_CHARS.checked_sub(block.chars().count())?;
    if explanation.chars().count() <= room {
        return Some(format!("{explanation}{block}"));
    }
    let note = " … (cut)\n\n";
    let kept = trim_chars(&explanation, room.checked_sub(note.chars().count())?);
    Some(format!("{kept}{note}{block}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use astrolift_manifest::{Code, Fix, Severity, Span};

    const CODE: Code = Code::new("toml/unknown-key", Severity::Error, "unknown");
    const TEXT: &str = "a = 1\nnmae = \"x\"\nPATH = \"y\"\nz = 2\n";

    fn edit(line: u32, column: u32, end_line: u32, end_column: u32, text: &str) -> Edit {
        Edit::new(
            "astrolift.toml",
            Span::new(line, column, end_line, end_column),
            text,
        )
    }

    fn fixed(line: u32, edit: Edit) -> Diagnostic {
        let span = Span {
            line,
            column: 1,
            end_line: line,
            end_column: 2,
        };
        Diagnostic::new(&CODE, "astrolift.toml", span, "bad").with_fix(Fix::one("do it", edit))
    }

    fn added(lines: &[u32]) -> BTreeMap<String, BTreeSet<u32>> {
        BTreeMap::from([("astrolift.toml".to_owned(), lines.iter().copied().collect())])
    }

    #[test]
    fn added_lines_follow_hunk_headers() {
        let patch = "@@ -1,3 +1,4 @@\n a = 1\n-old\n+nmae = \"x\"\n+PATH = \"y\"\n z = 2\n@@ -10 +11,2 @@\n+tail\n ctx\n\\ No newline at end of file";
        assert_eq!(added_lines(patch), BTreeSet::from([2, 3, 11]));
        assert!(added_lines("@@ nonsense\n+x").is_empty());
    }

    #[test]
    fn fixes_on_added_lines_become_suggestions_and_others_stay() {
        let diagnostics = [
            fixed(2, edit(2, 1, 2, 5, "name")),
            fixed(3, edit(3, 1, 4, 1, "")),
            fixed(4, edit(4, 1, 4, 2, "y")),
        ];
        let plan = plan(&diagnostics, &added(&[2, 3]), |_| Some(TEXT.to_owned()));
        assert_eq!(plan.reviews.len(), 1);
        let review = &plan.reviews[0];
        assert_eq!(review.len(), 2);
        assert_eq!((review[0].start_line, review[0].line), (None, 2));
        assert!(
            review[0]
                .body
                .ends_with("```suggestion\nname = \"x\"\n```\n")
        );
        // A removed line: an empty suggestion on it.
        assert!(review[1].body.ends_with("```suggestion\n```\n"));
        assert_eq!(plan.not_suggested.len(), 1);
        assert_eq!(plan.not_suggested[0].span.line, 4);
    }

    #[test]
    fn an_insertion_is_suggested_with_the_line_it_precedes() {
        let diagnostics = [fixed(1, edit(1, 1, 1, 1, "schema = \"v1\"\n"))];
        let plan = plan(&diagnostics, &added(&[1]), |_| Some(TEXT.to_owned()));
        let body = &plan.reviews[0][0].body;
        assert!(
            body.ends_with("```suggestion\nschema = \"v1\"\na = 1\n```\n"),
            "{body}"
        );
    }

    #[test]
    fn batches_of_fifty() {
        let text: String = (1..=120).map(|n| format!("k{n} = 1\n")).collect();
        let diagnostics: Vec<Diagnostic> =
            (1..=120).map(|n| fixed(n, edit(n, 1, n, 2, "K"))).collect();
        let lines: Vec<u32> = (1..=120).collect();
        let plan = plan(&diagnostics, &added(&lines), |_| Some(text.clone()));
        let sizes: Vec<usize> = plan.reviews.iter().map(Vec::len).collect();
        assert_eq!(sizes, [50, 50, 20]);
        assert!(plan.not_suggested.is_empty());
    }

    #[test]
    fn a_long_explanation_is_cut_and_the_suggestion_kept_whole() {
        let mut long = fixed(2, edit(2, 1, 2, 5, "name"));
        long.message = "m".repeat(MAX_COMMENT_CHARS);
        let cut = plan(std::slice::from_ref(&long), &added(&[2]), |_| {
            Some(TEXT.to_owned())
        });
        let body = &cut.reviews[0][0].body;
        assert_eq!(body.chars().count(), MAX_COMMENT_CHARS);
        assert!(body.ends_with(" … (cut)\n\n```suggestion\nname = \"x\"\n```\n"));
        // A suggestion that alone passes the limit stays an annotation.
        let line = "v".repeat(MAX_COMMENT_CHARS);
        let huge = fixed(2, edit(2, 1, 2, 5, &line));
        let refused = plan(std::slice::from_ref(&huge), &added(&[2]), |_| {
            Some(TEXT.to_owned())
        });
        assert!(refused.reviews.is_empty());
        assert_eq!(refused.not_suggested.len(), 1);
    }

    #[test]
    fn content_with_backticks_gets_a_longer_fence() {
        let diagnostics = [fixed(2, edit(2, 1, 2, 5, "```"))];
        let plan = plan(&diagnostics, &added(&[2]), |_| Some(TEXT.to_owned()));
        assert!(plan.reviews[0][0].body.contains("````suggestion\n```"));
    }
}
