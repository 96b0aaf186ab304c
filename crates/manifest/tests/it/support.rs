//! Shared helpers: validate a directory or an in-memory tree, render the result as JSON.

use std::path::{Path, PathBuf};

use astrolift_manifest::{
    DirTree, Limits, SourceTree, ValidateOptions, Validation, validate_repository,
};
use serde_json::{Value, json};

/// The crate's directory, for paths to fixtures and to the repository's examples.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Validates a local directory with the default options.
pub fn validate_dir(dir: &Path) -> Validation {
    let tree = match DirTree::open(dir, Limits::DEFAULT.tarball_files) {
        Ok(tree) => tree,
        Err(error) => panic!("cannot list {}: {error}", dir.display()),
    };
    validate(&tree)
}

pub fn validate(tree: &dyn SourceTree) -> Validation {
    validate_repository(tree, &ValidateOptions::default())
}

/// The agents (full models) and diagnostics, as the snapshots record them.
pub fn to_json(validation: &Validation) -> Value {
    let mut value = json!({
        "agents": validation.agents,
        "diagnostics": validation.diagnostics,
        "workspace_manifests": validation.workspace_manifests,
    });
    // Only repositories with workflow files show the key, so the snapshots
    // of every other fixture stay as they were.
    if !validation.workflow_files.is_empty() {
        value["workflow_files"] = json!(validation.workflow_files);
        value["workflows"] = json!(validation.workflows);
    }
    value
}
