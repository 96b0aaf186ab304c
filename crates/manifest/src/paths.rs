//! Repo-relative POSIX path rules shared by every format: what a manifest may
//! write in a path field, and how such a path joins onto a directory.
//!
//! Written by hand rather than with `std::path`: these are archive paths,
//! always `/`-separated whatever the host, and a Windows host must reject a
//! backslash rather than treat it as a separator.

use std::fmt;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use std::ops::Range;

use crate::diagnostic::{Code, Severity, Span};
use crate::toml_walk::TomlFile;

pub const INVALID_PATH: Code = Code::new(
    "path/invalid",
    Severity::Error,
    "A path in a manifest is not relative POSIX: absolute, with `..`, with `\\`, or empty.",
);
pub const NOT_UTF8_PATH: Code = Code::new(
    "path/not-utf8",
    Severity::Error,
    "A file's path in the checkout is not valid UTF-8; the file is left out.",
);

/// One `path/not-utf8` error per file of `paths` ([`crate::DirTree::non_utf8_paths`]).
pub fn non_utf8_path_diagnostics(paths: &[String]) -> Vec<crate::Diagnostic> {
    paths
        .iter()
        .map(|path| {
            crate::Diagnostic::new(
                &NOT_UTF8_PATH,
                path.as_str(),
                Span::FILE,
                format!("the path `{path}` is not valid UTF-8, so the file was left out"),
            )
            .with_help(
                "rename it: the sync refuses GitHub's tarball of a commit with this path \
                 (`package/bad-tarball`)",
            )
        })
        .collect()
}

pub const CONTROL_CHARACTER_PATH: Code = Code::new(
    "path/control-character",
    Severity::Warning,
    "A file's path in the checkout holds a control character; it is shown escaped.",
);

/// One `path/control-character` warning per file of `paths`
/// ([`crate::DirTree::control_character_paths`]), the path escaped in its position and
/// message: a raw newline would split a line of the human and github formats, and an
/// escape sequence would drive the terminal.
pub fn control_character_path_diagnostics(paths: &[String]) -> Vec<crate::Diagnostic> {
    paths
        .iter()
        .map(|path| {
            let shown = escape_controls(path);
            crate::Diagnostic::new(
                &CONTROL_CHARACTER_PATH,
                shown.as_str(),
                Span::FILE,
                format!("the path `{shown}` holds a control character (shown escaped)"),
            )
            .with_help(
                "rename it: a control character in a file name breaks terminals, logs and \
                 tools that read one path a line",
            )
        })
        .collect()
}

/// `text` with every control character written as Rust writes it in a string
/// (`\n`, `\t`, `\u{1b}`): what a terminal or a one-line format can show safely.
pub fn escape_controls(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    escaped
}

pub const INVALID_GLOB: Code = Code::new(
    "path/invalid-glob",
    Severity::Error,
    "A glob pattern does not compile.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[
    &INVALID_PATH,
    &NOT_UTF8_PATH,
    &CONTROL_CHARACTER_PATH,
    &INVALID_GLOB,
];

/// Why a path written in a manifest is not a relative POSIX path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathProblem {
    Empty,
    Absolute,
    Backslash,
    ParentDir,
    Nul,
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathProblem::Empty => "is empty",
            PathProblem::Absolute => "is absolute",
            PathProblem::Backslash => "uses `\\`; paths are POSIX, separated by `/`",
            PathProblem::ParentDir => "contains `..`",
            PathProblem::Nul => "contains a NUL character",
        })
    }
}

/// Checks a relative POSIX path (or glob) and returns it normalized: no `./`
/// components, no empty components, no trailing `/`. `"."` normalizes to `""`.
pub fn normalize_relative(path: &str) -> Result<String, PathProblem> {
    if path.is_empty() {
        return Err(PathProblem::Empty);
    }
    if path.contains('\0') {
        return Err(PathProblem::Nul);
    }
    if path.contains('\\') {
        return Err(PathProblem::Backslash);
    }
    if path.starts_with('/') || has_drive_prefix(path) {
        return Err(PathProblem::Absolute);
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(PathProblem::ParentDir),
            other => parts.push(other),
        }
    }
    Ok(parts.join("/"))
}

fn has_drive_prefix(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// Joins a normalized relative path onto a repo-relative directory ("" is the root).
pub fn join(dir: &str, rel: &str) -> String {
    match (dir.is_empty(), rel.is_empty()) {
        (true, _) => rel.to_owned(),
        (false, true) => dir.to_owned(),
        (false, false) => format!("{dir}/{rel}"),
    }
}

/// The directory part of a repo-relative path ("" for a top-level file).
pub fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// The last component of a repo-relative path.
pub fn file_name(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

/// Resolves `rel` (which may contain `.` and `..`) against `dir`. `None` when
/// the result would climb above the repository root.
pub fn resolve_lexically(dir: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// True when `path` is `dir` itself or lies below it ("" contains everything).
pub fn is_within(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || (path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/')
}

/// Compiles one glob the way every manifest glob is read: `*` and `?` stop
/// at `/`, `**` crosses directories.
pub fn compile_glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern).literal_separator(true).build()
}

/// A set of already-compiled globs; an empty set matches nothing.
pub fn glob_set(globs: impl IntoIterator<Item = Glob>) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        builder.add(glob);
    }
    // Every glob compiled on its own; a set of compiled globs only fails on
    // regex size limits, and then matching nothing is the safe answer.
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

/// Checks a path field of a TOML file; reports `path/invalid` on the value.
/// `what` names the field in the message, such as "`brief`".
pub fn check_path_field(
    file: &mut TomlFile<'_>,
    value: &str,
    range: Range<usize>,
    what: &str,
) -> Option<String> {
    match normalize_relative(value) {
        Ok(path) => Some(path),
        Err(problem) => {
            file.report(&INVALID_PATH, range, format!("{what} `{value}` {problem}"))
                .help = Some(
                "write a path relative to the manifest's directory, with `/` separators and no `..`"
                    .to_owned(),
            );
            None
        }
    }
}

/// Checks a glob field: a relative POSIX pattern that compiles.
pub fn check_glob_field(
    file: &mut TomlFile<'_>,
    pattern: &str,
    range: Range<usize>,
    what: &str,
) -> Option<Glob> {
    check_path_field(file, pattern, range.clone(), what)?;
    match compile_glob(pattern) {
        Ok(glob) => Some(glob),
        Err(error) => {
            let reason = error.kind().to_string();
            file.report(
                &INVALID_GLOB,
                range,
                format!("{what} `{pattern}` is not a valid glob: {reason}"),
            );
            None
        }
    }
}

/// Every string of a glob-array field that checks out, with the set they make.
pub fn glob_list_field<'i>(
    file: &mut TomlFile<'i>,
    table: &toml::de::DeTable<'i>,
    key: &str,
    what: &str,
) -> Option<(Vec<String>, GlobSet)> {
    let (patterns, globs) = checked_globs(file, table, key, what)?;
    Some((patterns, glob_set(globs)))
}

/// Every string of a glob-array field that checks out, without building the
/// set: building a `GlobSet` compiles a matcher (the costly part), which a
/// caller that only keeps the patterns does not need.
pub fn glob_list_patterns<'i>(
    file: &mut TomlFile<'i>,
    table: &toml::de::DeTable<'i>,
    key: &str,
    what: &str,
) -> Option<Vec<String>> {
    checked_globs(file, table, key, what).map(|(patterns, _)| patterns)
}

fn checked_globs<'i>(
    file: &mut TomlFile<'i>,
    table: &toml::de::DeTable<'i>,
    key: &str,
    what: &str,
) -> Option<(Vec<String>, Vec<Glob>)> {
    let items = file.str_array(table, key)?;
    let mut patterns = Vec::with_capacity(items.len());
    let mut globs = Vec::with_capacity(items.len());
    for (pattern, range) in items {
        if let Some(glob) = check_glob_field(file, &pattern, range, what) {
            globs.push(glob);
            patterns.push(pattern);
        }
    }
    Some((patterns, globs))
}

/// A slug: 1–64 of `a-z 0-9 -`, no leading, trailing or double hyphen.
/// The Agent Skills `name` rule, used for agent names and aliases too.
pub fn is_slug(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The slug a name plainly means: ASCII letters lower-cased, each run of
/// ASCII spaces and punctuation one `-`, the ends trimmed. `None` when that
/// is a guess: the name holds a non-ASCII character (dropped or
/// transliterated?) or the slug would be empty or longer than 64.
pub fn plain_slug(name: &str) -> Option<String> {
    if !name.is_ascii() {
        return None;
    }
    let mut slug = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    is_slug(slug).then(|| slug.to_owned())
}

/// What a slug must look like, for `help` texts.
pub const SLUG_RULE: &str =
    "use 1–64 characters of a–z, 0–9 and `-`, without a leading, trailing or double hyphen";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_and_rejects() {
        assert_eq!(normalize_relative("./a//b/./c/").as_deref(), Ok("a/b/c"));
        assert_eq!(normalize_relative(".").as_deref(), Ok(""));
        assert_eq!(normalize_relative("/etc"), Err(PathProblem::Absolute));
        assert_eq!(normalize_relative("C:/x"), Err(PathProblem::Absolute));
        assert_eq!(normalize_relative("a/../b"), Err(PathProblem::ParentDir));
        assert_eq!(normalize_relative("a\\b"), Err(PathProblem::Backslash));
        assert_eq!(normalize_relative(""), Err(PathProblem::Empty));
    }

    #[test]
    fn resolves_and_contains() {
        assert_eq!(resolve_lexically("a/b", "../c").as_deref(), Some("a/c"));
        assert_eq!(resolve_lexically("a", "../../c"), None);
        assert!(is_within("a/b", "a"));
        assert!(!is_within("ab", "a"));
        assert!(is_within("x", ""));
        assert_eq!(join("", "x"), "x");
        assert_eq!(parent("a/b/c"), "a/b");
        assert_eq!(file_name("a/b/c"), "c");
    }

    #[test]
    fn escapes_control_characters_only() {
        assert_eq!(escape_controls("a\nb\u{1b}[31m\tc"), "a\\nb\\u{1b}[31m\\tc");
        assert_eq!(escape_controls("émr/notes.md"), "émr/notes.md");
        assert_eq!(escape_controls("a\u{7f}"), "a\\u{7f}");
    }

    #[test]
    fn plain_slugs() {
        assert_eq!(
            plain_slug("Research Agent (v2)").as_deref(),
            Some("research-agent-v2")
        );
        assert_eq!(plain_slug("EMR_Triage").as_deref(), Some("emr-triage"));
        assert_eq!(plain_slug("émr-triage"), None);
        assert_eq!(plain_slug("!!!"), None);
        assert_eq!(plain_slug(&"a".repeat(65)), None);
        assert_eq!(plain_slug(&"a".repeat(64)).map(|s| s.len()), Some(64));
    }

    #[test]
    fn slugs() {
        assert!(is_slug("emr-triage"));
        assert!(!is_slug("-a"));
        assert!(!is_slug("a--b"));
        assert!(!is_slug("A"));
        assert!(!is_slug(&"a".repeat(65)));
    }
}
