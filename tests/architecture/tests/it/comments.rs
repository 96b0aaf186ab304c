//! Comments state rules and point at the project's own docs (ARCHITECTURE.md, docs/):
//!
//! - never at documents outside the repository: a clone must be complete, and a reader of
//!   the code must be able to open what a comment cites;
//! - never at an issue by its number, nor at the benchmark figures' page: an issue's
//!   thread and a dated figure are history, which git keeps; a comment says the rule that
//!   holds now.
//!
//! Checked in Rust comments (`//`, `///`, `//!`) under crates/, functions/, tests/ and
//! fuzz/, and in the `#` comments of every Cargo.toml, scripts/*.sh, scripts/*.py,
//! bench/*.sh, bench/*.py and .ci/run.

use std::path::{Path, PathBuf};

use crate::workspace_root;

/// What a comment may not cite: the team's brief and reference documents
/// live outside the repository; their rules are restated in docs/.
const OUTSIDE: &[&str] = &[
    "seed 000",
    "seed 001",
    "seed 002",
    "design.md",
    "../shared",
    "agentskills.io",
];

/// How a file marks its comments.
#[derive(Clone, Copy)]
enum Syntax {
    /// `//` to the end of the line (Rust).
    Slashes,
    /// `#` to the end of the line (TOML, shell, Python).
    Hash,
}

/// The comment part of a line, if any: the line itself when it starts with the marker,
/// else what follows a marker after whitespace outside any string literal.
fn comment_of(line: &str, syntax: Syntax) -> Option<&str> {
    let (marker, quotes): (&str, &[char]) = match syntax {
        Syntax::Slashes => ("//", &['"']),
        Syntax::Hash => ("#", &['"', '\'']),
    };
    let trimmed = line.trim_start();
    if trimmed.starts_with(marker) {
        return Some(trimmed);
    }
    line.match_indices(marker)
        .map(|(at, _)| at)
        .find(|&at| {
            let before = &line[..at];
            before.ends_with([' ', '\t']) && quotes.iter().all(|q| outside_strings(before, *q))
        })
        .map(|at| &line[at..])
}

/// Whether `code` closes every string it opens with `quote` (escaped quotes left out).
fn outside_strings(code: &str, quote: char) -> bool {
    let mut open = false;
    let mut escaped = false;
    for c in code.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == quote {
            open = !open;
        }
    }
    !open
}

/// Whether `comment` names an issue by its number: "issue", or "issues", then spaces,
/// `#` or `-`, then a digit.
fn cites_an_issue(comment: &str) -> bool {
    let lower = comment.to_lowercase();
    lower.match_indices("issue").any(|(at, word)| {
        let starts_a_word = !lower[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let rest = &lower[at + word.len()..];
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        let rest = rest.trim_start_matches([' ', '\t', '#', '-']);
        starts_a_word && rest.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// What `comment` cites that it may not, if anything.
fn forbidden_citation(comment: &str) -> Option<String> {
    let lower = comment.to_lowercase();
    if let Some(outside) = OUTSIDE.iter().find(|o| lower.contains(*o)) {
        return Some(format!("cites {outside}, outside the repository"));
    }
    if cites_an_issue(comment) {
        return Some("cites an issue by its number".to_owned());
    }
    if comment.contains("BENCHMARKS") || lower.contains("benchmarks.md") {
        return Some("cites BENCHMARKS.md".to_owned());
    }
    None
}

/// Every file under `dir` that `wanted` accepts, build output and hidden folders left out.
fn files_under(dir: &Path, wanted: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name != "target" && !name.starts_with('.') {
                files_under(&path, wanted, out);
            }
        } else if wanted(&path) {
            out.push(path);
        }
    }
}

/// The files whose comments are checked, each with its comment syntax.
fn checked_files(root: &Path) -> Vec<(PathBuf, Syntax)> {
    let mut rust = Vec::new();
    let is_rust = |path: &Path| path.extension().is_some_and(|e| e == "rs");
    for dir in ["crates", "functions", "tests", "fuzz"] {
        files_under(&root.join(dir), &is_rust, &mut rust);
    }
    let mut hashed = vec![root.join("Cargo.toml"), root.join(".ci/run")];
    let is_manifest = |path: &Path| path.file_name().is_some_and(|n| n == "Cargo.toml");
    for dir in ["crates", "functions", "tests", "fuzz"] {
        files_under(&root.join(dir), &is_manifest, &mut hashed);
    }
    let is_script = |path: &Path| {
        path.extension().is_some_and(|e| e == "sh" || e == "py")
            && path
                .parent()
                .is_some_and(|p| p.ends_with("scripts") || p.ends_with("bench"))
    };
    for dir in ["scripts", "bench"] {
        files_under(&root.join(dir), &is_script, &mut hashed);
    }
    let rust = rust.into_iter().map(|path| (path, Syntax::Slashes));
    let hashed = hashed.into_iter().map(|path| (path, Syntax::Hash));
    rust.chain(hashed).collect()
}

#[test]
fn comments_cite_only_the_projects_own_docs() {
    let root = workspace_root();
    let files = checked_files(&root);
    assert!(files.len() > 100, "too few files found: {}", files.len());
    let mut found = Vec::new();
    for (file, syntax) in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            let Some(comment) = comment_of(line, *syntax) else {
                continue;
            };
            if let Some(why) = forbidden_citation(comment) {
                let relative = file.strip_prefix(&root).unwrap_or(file);
                found.push(format!("{}:{}: {why}", relative.display(), number + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "comments cite what a reader of the code cannot open or what is history; state the \
         rule and cite docs/ instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn comments_that_cite_issues_or_benchmarks_are_found() {
    for cited in [
        "// as issue 27 asks",
        "/// (issue #27)",
        "//! Issue 9 abuse cases",
        "// issues 26 and 27",
        "// the issue-6 benchmark",
        "// the figure in BENCHMARKS.md",
        "// see benchmarks.md",
    ] {
        assert!(forbidden_citation(cited).is_some(), "{cited}");
    }
    for fine in [
        "// trigger bindings on issues and issue comments",
        "// an `issue_comment` event",
        "// a comment on issue or pull request number 42",
        "// tests and benchmarks of ingress",
        "// tissue 5",
    ] {
        assert_eq!(forbidden_citation(fine), None, "{fine}");
    }
}

#[test]
fn comments_are_found_after_code_but_not_inside_strings() {
    let rust = Syntax::Slashes;
    assert_eq!(comment_of("    /// Docs.", rust), Some("/// Docs."));
    assert_eq!(comment_of("let a = 1; // why", rust), Some("// why"));
    assert_eq!(comment_of(r#"let url = "https://x // y";"#, rust), None);
    assert_eq!(comment_of("let url = \"a\\\" // b\";", rust), None);
    let hash = Syntax::Hash;
    assert_eq!(comment_of("# a comment", hash), Some("# a comment"));
    assert_eq!(comment_of("opt-level = 1 # why", hash), Some("# why"));
    assert_eq!(comment_of("if [ \"$#\" -gt 0 ]; then", hash), None);
    assert_eq!(comment_of("echo '# not one'", hash), None);
    assert_eq!(comment_of("n=${#list[@]}", hash), None);
}
