//! The entry point: validate every agent of a repository.

use crate::lock::{Lock, read_lock, unused_entries};
use std::collections::HashMap;

use serde::Serialize;

use crate::diagnostic::{self, Diagnostic};
use crate::discovery::{DiscoveredAgent, discover};
use crate::limits::Limits;
use crate::model::AgentManifest;
use crate::tree::SourceTree;
use crate::workflow::{self, Workflow};
use crate::{config, workspace};
use crate::{native, parallel};

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
    /// Repo-relative paths of the discovered workspace manifests (docs/reference.md §5.4).
    pub workspace_manifests: Vec<String>,
    /// The workflows that could be read, in path order (with or without errors:
    /// see [`Self::workflow_has_errors`]).
    pub workflows: Vec<Workflow>,
    /// Repo-relative paths of every discovered workflow file. Their
    /// diagnostics belong to no agent.
    pub workflow_files: Vec<String>,
    /// `astrolift.lock`, when the repository has one ([`crate::lock`]); its problems are in
    /// `diagnostics`.
    pub lock: Option<Lock>,
}

impl Validation {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// For each agent (same order as `agents`), whether an error belongs to it.
    ///
    /// A diagnostic belongs to the agent whose manifest it is on, else to the
    /// agent whose directory is the longest prefix of its path (the root
    /// agent's directory, "", is a prefix of everything). Findings on the
    /// federation file belong to no agent: they fail none.
    pub fn agents_with_errors(&self) -> Vec<bool> {
        let mut failing = vec![false; self.agents.len()];
        for diagnostic in self.diagnostics.iter().filter(|d| d.is_error()) {
            if self.workflow_files.contains(&diagnostic.path) {
                continue;
            }
            if let Some(owner) = owner_of(&self.agents, &diagnostic.path) {
                failing[owner] = true;
            }
        }
        failing
    }

    /// The error diagnostics that belong to `agents[index]` (see [`Self::agents_with_errors`]).
    pub fn errors_of(&self, index: usize) -> Vec<Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.is_error() && !self.workflow_files.contains(&d.path))
            .filter(|d| owner_of(&self.agents, &d.path) == Some(index))
            .cloned()
            .collect()
    }

    /// Whether an error diagnostic is on the workflow file at `path`; such a
    /// workflow is not registered.
    pub fn workflow_has_errors(&self, path: &str) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.is_error() && d.path == path)
    }

    /// The `agents` entries of the JSON output, in discovery order.
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

/// Discovers and validates every agent manifest of `tree`, then the
/// discovered workspace manifests and `options.config_paths`.
///
/// Agents come in discovery order (federation entries as listed, then
/// auto-registered ones; without federation, path order); a manifest that
/// cannot be read has no model, only its diagnostic. Diagnostics are sorted.
/// Never fails: every problem is a diagnostic. Never panics on any input.
pub fn validate_repository(tree: &dyn SourceTree, options: &ValidateOptions) -> Validation {
    let discovery = discover(tree, &options.limits);
    let mut diagnostics = discovery.diagnostics;
    let mut agents = Vec::with_capacity(discovery.agents.len());
    let mut names: HashMap<String, String> = HashMap::new();
    for (manifest, found) in read_manifests(tree, &options.limits, &discovery.agents) {
        diagnostics.extend(found);
        let Some(manifest) = manifest else {
            continue;
        };
        if let Some(diagnostic) = duplicate_name(&mut names, &manifest) {
            diagnostics.push(diagnostic);
        }
        agents.push(manifest.agent);
    }
    for path in &discovery.workspace_manifests {
        let (_, found) = workspace::validate_workspace(tree, path, &options.limits);
        diagnostics.extend(found);
    }
    for path in &options.config_paths {
        diagnostics.extend(config::load_config(tree, path, &options.limits).diagnostics);
    }
    let (workflows, found) =
        workflow::validate_workflows(tree, &options.limits, &discovery.workflows, &agents);
    diagnostics.extend(found);
    let (lock, found) = read_lock(tree);
    diagnostics.extend(found);
    if let Some(lock) = &lock {
        diagnostics.extend(unused_entries(lock, &agents));
    }
    diagnostic::sort(&mut diagnostics);
    Validation {
        agents,
        diagnostics,
        workspace_manifests: discovery.workspace_manifests,
        workflows,
        workflow_files: discovery.workflows,
        lock,
    }
}

/// Manifests one thread reads before a second thread is worth starting.
const MANIFESTS_PER_THREAD: usize = 64;

/// One discovered agent's manifest (if it could be read) and its diagnostics.
type ReadManifest = (Option<native::NativeManifest>, Vec<Diagnostic>);

/// Reads every discovered manifest, in discovery order. Parsing and checking
/// are CPU-bound and independent per agent, so a large repository is split
/// across the cores; a small one stays on this thread.
fn read_manifests(
    tree: &dyn SourceTree,
    limits: &Limits,
    discovered: &[DiscoveredAgent],
) -> Vec<ReadManifest> {
    parallel::map_in_order(discovered, MANIFESTS_PER_THREAD, |agent| {
        let mut found = Vec::new();
        let manifest = native::read_manifest(tree, limits, agent, &mut found);
        (manifest, found)
    })
}

fn owner_of(agents: &[AgentManifest], path: &str) -> Option<usize> {
    if path == crate::federation::FEDERATION_FILE {
        return None;
    }
    agents
        .iter()
        .enumerate()
        .filter(|(_, agent)| agent.manifest == path || is_under(path, &agent.dir))
        .max_by_key(|(_, agent)| (agent.manifest == path, agent.dir.len()))
        .map(|(index, _)| index)
}

fn is_under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Agent names are unique in a repository: the second manifest with a name
/// gets the error, on its `name` value.
fn duplicate_name(
    names: &mut HashMap<String, String>,
    manifest: &native::NativeManifest,
) -> Option<Diagnostic> {
    let agent = &manifest.agent;
    let span = manifest.name_span?;
    if agent.name.is_empty() {
        return None;
    }
    match names.get(&agent.name) {
        None => {
            names.insert(agent.name.clone(), agent.manifest.clone());
            None
        }
        Some(first) => Some(
            Diagnostic::new(
                &native::DUPLICATE_NAME,
                agent.manifest.clone(),
                span,
                format!("agent name `{}` is already used by `{first}`", agent.name),
            )
            .with_help("agent names are unique within a repository; rename one of them"),
        ),
    }
}
