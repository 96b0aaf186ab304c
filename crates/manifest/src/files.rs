//! Reading one text file of the tree under the size limit, with every way it
//! can fail turned into a diagnostic on that file.

use crate::diagnostic::{Code, Diagnostic, Severity, Span};
use crate::tree::{ReadError, SourceTree};

pub const TOO_LARGE: Code = Code::new(
    "file/too-large",
    Severity::Error,
    "A manifest, brief or SKILL.md is over the size limit; it is not read.",
);
pub const NOT_UTF8: Code = Code::new(
    "file/not-utf8",
    Severity::Error,
    "A manifest, brief or SKILL.md is not valid UTF-8.",
);
pub const UNREADABLE: Code = Code::new(
    "file/unreadable",
    Severity::Error,
    "A file could not be read: a symlink, a special file, or an I/O error.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[&TOO_LARGE, &NOT_UTF8, &UNREADABLE];

/// Reads `path` as UTF-8 text of at most `limit` bytes, or records why not.
pub fn read_text(
    tree: &dyn SourceTree,
    path: &str,
    limit: u64,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<String> {
    // The listing already knows the size: an oversized file is never opened.
    let listed_size = tree.entry(path).map_or(0, |e| e.size);
    let result = if listed_size > limit {
        Err(ReadError::TooLarge {
            size: listed_size,
            limit,
        })
    } else {
        tree.read_text(path, limit)
    };
    let error = match result {
        Ok(text) => return Some(text),
        Err(error) => error,
    };
    let diagnostic = match error {
        ReadError::TooLarge { size, limit } => Diagnostic::new(
            &TOO_LARGE,
            path,
            Span::FILE,
            format!("`{path}` is {size} bytes, over the {limit}-byte limit, so it was not read"),
        )
        .with_help(
            "split the file, or move what is not needed out of it: no option raises this limit",
        ),
        ReadError::NotUtf8 => Diagnostic::new(
            &NOT_UTF8,
            path,
            Span::FILE,
            format!("`{path}` is not valid UTF-8"),
        )
        .with_help("save the file as UTF-8"),
        ReadError::NotAFile => Diagnostic::new(
            &UNREADABLE,
            path,
            Span::FILE,
            format!("`{path}` is not a regular file"),
        )
        .with_help("symlinks are never followed; replace the link with the file itself"),
        ReadError::NotFound => Diagnostic::new(
            &UNREADABLE,
            path,
            Span::FILE,
            format!("`{path}` disappeared while it was being read"),
        ),
        ReadError::Io(message) => Diagnostic::new(
            &UNREADABLE,
            path,
            Span::FILE,
            format!("cannot read `{path}`: {message}"),
        ),
    };
    diagnostics.push(diagnostic);
    None
}
