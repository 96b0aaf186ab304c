//! Diagnostics as GitHub sees them: an annotation per diagnostic on a file,
//! and the conclusion the diagnostics alone give (docs/reference.md §9).
//! `forge` knows GitHub's shapes and `manifest` knows diagnostics; this is
//! where the two meet, so neither depends on the other.

use astrolift_forge::github::{Annotation, AnnotationLevel, Conclusion};
use astrolift_manifest::{Counts, Diagnostic, Severity};

/// `failure` with any error, `neutral` with only warnings or notices,
/// `success` with none.
pub fn conclusion_of(diagnostics: &[Diagnostic]) -> Conclusion {
    let counts = Counts::of(diagnostics);
    if counts.errors > 0 {
        Conclusion::Failure
    } else if counts.warnings + counts.notices > 0 {
        Conclusion::Neutral
    } else {
        Conclusion::Success
    }
}

/// The annotation level of a severity: error → `failure`, warning →
/// `warning`, notice → `notice`.
pub fn level_of(severity: Severity) -> AnnotationLevel {
    match severity {
        Severity::Error => AnnotationLevel::Failure,
        Severity::Warning => AnnotationLevel::Warning,
        Severity::Notice => AnnotationLevel::Notice,
    }
}

/// The annotation for a diagnostic, or `None` for a diagnostic about the
/// repository as a whole (empty path): GitHub needs a file, so those
/// belong in the summary. Our `end_column` is exclusive, GitHub's
/// inclusive; columns are kept only on single-line spans.
pub fn annotation_of(diagnostic: &Diagnostic) -> Option<Annotation> {
    if diagnostic.path.is_empty() {
        return None;
    }
    let span = diagnostic.span;
    let start_line = span.line.max(1);
    let end_line = span.end_line.max(start_line);
    let (start_column, end_column) = if start_line == end_line && span.column > 0 {
        let end = span.end_column.saturating_sub(1).max(span.column);
        (Some(span.column), Some(end))
    } else {
        (None, None)
    };
    let message = match &diagnostic.help {
        Some(help) => format!("{}\n\nhelp: {help}", diagnostic.message),
        None => diagnostic.message.clone(),
    };
    Some(Annotation {
        path: diagnostic.path.clone(),
        start_line,
        end_line,
        start_column,
        end_column,
        annotation_level: level_of(diagnostic.severity),
        title: diagnostic.code.clone(),
        message,
        raw_details: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use astrolift_manifest::{Code, Span};

    const CODE: Code = Code::new("manifest/test", Severity::Error, "a test code");

    fn diagnostic(span: Span) -> Diagnostic {
        Diagnostic::new(&CODE, "agents/a/astrolift.toml", span, "bad value")
    }

    #[test]
    fn single_line_columns_become_inclusive() {
        let span = Span {
            line: 3,
            column: 5,
            end_line: 3,
            end_column: 9,
        };
        let annotation = annotation_of(&diagnostic(span));
        let annotation = annotation.unwrap_or_else(|| panic!("a file diagnostic annotates"));
        assert_eq!((annotation.start_line, annotation.end_line), (3, 3));
        assert_eq!(
            (annotation.start_column, annotation.end_column),
            (Some(5), Some(8))
        );
        assert_eq!(annotation.annotation_level, AnnotationLevel::Failure);
        assert_eq!(annotation.title, "manifest/test");
    }

    #[test]
    fn multi_line_spans_drop_columns_and_file_spans_stay_valid() {
        let span = Span {
            line: 2,
            column: 5,
            end_line: 4,
            end_column: 2,
        };
        let annotation = annotation_of(&diagnostic(span));
        let columns = annotation.map(|a| (a.start_column, a.end_column));
        assert_eq!(columns, Some((None, None)));
        let file = annotation_of(&diagnostic(Span::FILE));
        let columns = file.map(|a| (a.start_line, a.start_column, a.end_column));
        assert_eq!(columns, Some((1, Some(1), Some(1))));
    }

    #[test]
    fn repository_diagnostics_are_not_annotations() {
        let mut repo_level = diagnostic(Span::FILE);
        repo_level.path.clear();
        assert_eq!(annotation_of(&repo_level), None);
    }

    #[test]
    fn conclusion_follows_the_worst_severity() {
        let error = diagnostic(Span::FILE);
        let warning = diagnostic(Span::FILE).with_severity(Severity::Warning);
        assert_eq!(conclusion_of(&[]), Conclusion::Success);
        assert_eq!(
            conclusion_of(std::slice::from_ref(&warning)),
            Conclusion::Neutral
        );
        assert_eq!(conclusion_of(&[warning, error]), Conclusion::Failure);
    }

    #[test]
    fn levels_follow_severities() {
        assert_eq!(level_of(Severity::Error), AnnotationLevel::Failure);
        assert_eq!(level_of(Severity::Warning), AnnotationLevel::Warning);
        assert_eq!(level_of(Severity::Notice), AnnotationLevel::Notice);
    }
}
