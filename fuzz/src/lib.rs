//! Helpers shared by the fuzz targets: small fixed repositories that the
//! fuzzed file is dropped into, so validation reaches past discovery.
#![forbid(unsafe_code)]

use astrolift_manifest::{
    Diagnostic, Limits, MemTree, ValidateOptions, Validation, validate_repository,
};

/// A minimal agent manifest, valid on its own (an agent the federation file
/// and the workspace manifest can point at).
pub const AGENT_MANIFEST: &str = r#"astrolift_version = 1
name = "triage"

[[workloads]]
name = "triage"
kind = "agent"
run_family = "task"

  [[workloads.containers]]
  name = "agent"
  is_primary = true
  image_ref = "ghcr.io/example/agent:1.0"
"#;

/// A small valid skill, so manifests that name `skills/triage` find it.
pub const SKILL: &str = "---\nname: triage\ndescription: Sorts new issues.\n---\n# Triage\n";

/// A repository around the fuzzed file: `path` holds `bytes`, and the other
/// files a manifest commonly references exist (an agent, a skill, a brief,
/// config files for includes).
pub fn repository_with(path: &str, bytes: &[u8]) -> MemTree {
    let mut tree = MemTree::from_files([
        ("agents/triage/astrolift.toml", AGENT_MANIFEST.as_bytes()),
        (
            "agents/other/astrolift.toml",
            b"astrolift_version = 1\nname = \"other\"\n".as_slice(),
        ),
        ("skills/triage/SKILL.md", SKILL.as_bytes()),
        (
            "brief.md",
            b"# Brief\n\nSee [the guide](docs/guide.md).\n".as_slice(),
        ),
        ("docs/guide.md", b"# Guide\n".as_slice()),
        (
            "shared/base.toml",
            b"[environment]\nBASE = \"1\"\n".as_slice(),
        ),
        ("envs/dev.yaml", b"apiVersion: v1\n".as_slice()),
    ]);
    tree.insert(path, bytes.to_vec(), false);
    tree
}

/// Validates `tree` with the default limits.
pub fn validate(tree: &MemTree) -> Validation {
    let options = ValidateOptions {
        limits: Limits::DEFAULT,
        config_paths: Vec::new(),
    };
    validate_repository(tree, &options)
}

/// Every diagnostic on the fuzzed file must have a 1-based span that starts
/// inside the file and does not end before it starts: a cheap oracle beyond
/// "does not panic" (the crate promises positioned diagnostics).
pub fn check_spans(diagnostics: &[Diagnostic], path: &str, text: &[u8]) {
    let lines = text.iter().filter(|&&b| b == b'\n').count() + 1;
    for diagnostic in diagnostics.iter().filter(|d| d.path == path) {
        let span = &diagnostic.span;
        assert!(
            span.line >= 1 && span.column >= 1,
            "0-based span: {diagnostic:?}"
        );
        assert!(
            span.line as usize <= lines,
            "span past the end: {diagnostic:?}"
        );
        assert!(
            (span.end_line, span.end_column) >= (span.line, span.column),
            "span ends before it starts: {diagnostic:?}"
        );
    }
}
