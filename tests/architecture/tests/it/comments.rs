//! Comments point at the project's own docs (ARCHITECTURE.md, docs/), never
//! at documents outside the repository: a clone must be complete, and a
//! reader of the code must be able to open what a comment cites.

use std::path::Path;

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

/// The comment part of a line of Rust (`//`, `///`, `//!`), if any.
fn comment_of(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    trimmed.starts_with("//").then_some(trimmed)
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn comments_cite_only_the_projects_own_docs() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in ["crates", "functions", "tests/fake-github", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            let Some(comment) = comment_of(line) else {
                continue;
            };
            let lower = comment.to_lowercase();
            if let Some(cited) = OUTSIDE.iter().find(|o| lower.contains(*o)) {
                let relative = file.strip_prefix(&root).unwrap_or(file);
                found.push(format!(
                    "{}:{}: cites {cited}",
                    relative.display(),
                    number + 1
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "comments cite documents outside the repository; cite docs/ instead:\n{}",
        found.join("\n")
    );
}
