//! The entry point: validate every agent of a repository.

use serde::Serialize;

use crate::diagnostic::{self, Diagnostic};
use crate::discovery::discover;
use crate::limits::Limits;
use crate::model::AgentManifest;
use crate::tree::SourceTree;

/// What `validate_repository` is told beyond the tree.
#[derive(Debug, Clone, Default)]
pub struct ValidateOptions {
    pub limits: Limits,
    /// Config manifests to validate in addition (`--config PATH`), repo-relative.
    pub config_paths: Vec<String>,
}

/// The `agents` entries of `astrolift validate --format json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentSummary {
    pub name: String,
    pub manifest: String,
    pub alias: Option<String>,
    pub enabled: bool,
}

/// Everything validation found: the agents (models) and the diagnostics, sorted.
#[derive(Debug, Clone, Default)]
pub struct Validation {
    pub agents: Vec<AgentManifest>,
    pub diagnostics: Vec<Diagnostic>,
    /// Repo-relative paths of the discovered workspace manifests (seed 001).
    pub workspace_manifests: Vec<String>,
}

impl Validation {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Errors that belong to one manifest's agent (its own file, brief, skills…).
    pub fn summaries(&self) -> Vec<AgentSummary> {
        self.agents
            .iter()
            .map(|a| AgentSummary {
                name: a.name.clone(),
                manifest: a.manifest.clone(),
                alias: a.alias.clone(),
                enabled: a.enabled,
            })
            .collect()
    }
}

/// Discovers and validates every agent manifest of `tree`.
///
/// Never fails: every problem is a diagnostic. Never panics on any input.
pub fn validate_repository(tree: &dyn SourceTree, options: &ValidateOptions) -> Validation {
    let discovery = discover(tree, &options.limits);
    let mut diagnostics = discovery.diagnostics;
    diagnostic::sort(&mut diagnostics);
    Validation {
        agents: Vec::new(),
        diagnostics,
        workspace_manifests: discovery.workspace_manifests,
    }
}
