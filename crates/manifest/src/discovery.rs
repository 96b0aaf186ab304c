//! Which files of a repository are agent manifests (docs/reference.md §2).
//!
//! Without a federation file: a root `astrolift.toml` and exact
//! `agents/<slug>/astrolift.toml`. With `astrolift.agents.toml`: its listed
//! agents, plus (with `auto_register_new`) unlisted manifests its `include`
//! globs match; exclusions always win. Every `astrolift.toml` that is not
//! selected gets a notice saying why, and how to include it.

use std::collections::HashSet;

use globset::GlobSet;

use crate::diagnostic::{Code, Diagnostic, Severity, Span};
use crate::federation::{self, FEDERATION_FILE, Federation};
use crate::files;
use crate::limits::Limits;
use crate::paths;
use crate::tree::SourceTree;

/// The native agent manifest's file name.
pub const MANIFEST_FILE: &str = "astrolift.toml";
/// The root workspace manifest (docs/reference.md §5.4).
pub const WORKSPACE_FILE: &str = "astrolift.workspace.yaml";
/// The directory of further workspace manifests (`workspaces/*.yaml`).
pub const WORKSPACES_DIR: &str = "workspaces";

pub const UNDISCOVERED_MANIFEST: Code = Code::new(
    "discovery/undiscovered-manifest",
    Severity::Notice,
    "An `astrolift.toml` that discovery does not pick up, with how to include it.",
);
pub const NO_AGENTS: Code = Code::new(
    "discovery/no-agents",
    Severity::Notice,
    "The repository has no selected agent manifest, so nothing is registered.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[&UNDISCOVERED_MANIFEST, &NO_AGENTS];

/// Directories whose manifests are vendored or working state, never reported.
const IGNORED_DIRS: &[&str] = &[".git", "node_modules"];

/// One selected agent manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveredAgent {
    /// Repo-relative path of the `astrolift.toml`.
    pub manifest: String,
    pub alias: Option<String>,
    /// False for `enabled = false` in the federation file: validated, not registered.
    pub enabled: bool,
}

/// What discovery found.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// In selection order: federation entries as listed, then auto-registered
    /// ones in path order; without federation, path order.
    pub agents: Vec<DiscoveredAgent>,
    /// True when `astrolift.agents.toml` drove the selection.
    pub federated: bool,
    /// Repo-relative paths of the workspace manifests (docs/reference.md §5.4), in path order.
    pub workspace_manifests: Vec<String>,
    /// Repo-relative paths of the workflow files, in path order.
    pub workflows: Vec<String>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Discovers the agent and workspace manifests of `tree`.
pub fn discover(tree: &dyn SourceTree, limits: &Limits) -> Discovery {
    let mut discovery = Discovery::default();
    let federation = tree.entry(FEDERATION_FILE).map(|_| {
        files::read_text(
            tree,
            FEDERATION_FILE,
            limits.manifest_file,
            &mut discovery.diagnostics,
        )
        .map(|text| federation::parse(&text, &mut discovery.diagnostics))
    });
    let candidates = manifest_candidates(tree);
    let workspace_globs = federation
        .as_ref()
        .and_then(|f| f.as_ref()?.workspaces.as_ref());
    discovery.workspace_manifests = workspace_manifests(tree, workspace_globs);
    let workflow_globs = federation
        .as_ref()
        .and_then(|f| f.as_ref()?.workflows.as_ref());
    discovery.workflows = crate::workflow::workflow_files(tree, workflow_globs);
    match &federation {
        Some(federation) => {
            discovery.federated = true;
            select_federated(tree, federation.as_ref(), &candidates, &mut discovery);
        }
        None => select_legacy(&candidates, &mut discovery),
    }
    if discovery.agents.is_empty() {
        discovery.diagnostics.push(no_agents(discovery.federated));
    }
    discovery
}

/// Every `astrolift.toml` of the tree outside vendored directories, in path order.
fn manifest_candidates(tree: &dyn SourceTree) -> Vec<String> {
    tree.entries()
        .iter()
        .filter(|e| paths::file_name(&e.path) == MANIFEST_FILE)
        .filter(|e| !e.path.split('/').any(|c| IGNORED_DIRS.contains(&c)))
        .map(|e| e.path.clone())
        .collect()
}

fn select_legacy(candidates: &[String], discovery: &mut Discovery) {
    for manifest in candidates {
        match legacy_rejection(manifest) {
            None => discovery.agents.push(DiscoveredAgent {
                manifest: manifest.clone(),
                alias: None,
                enabled: true,
            }),
            Some(reason) => discovery
                .diagnostics
                .push(undiscovered(manifest, &reason).with_help(format!(
                    "move it to agents/<slug>/{MANIFEST_FILE}, or add an {FEDERATION_FILE} \
                     that lists it under [[agents]]"
                ))),
        }
    }
}

/// Why legacy discovery skips `manifest`, or `None` when it takes it.
fn legacy_rejection(manifest: &str) -> Option<String> {
    if manifest == MANIFEST_FILE {
        return None;
    }
    let dir = paths::parent(manifest);
    match dir.split_once('/') {
        Some(("agents", slug)) if !slug.contains('/') => {
            if paths::is_slug(slug) {
                None
            } else {
                Some(format!(
                    "`agents/{slug}` is not a slug directory ({})",
                    paths::SLUG_RULE
                ))
            }
        }
        _ => Some(format!(
            "without {FEDERATION_FILE}, only the root {MANIFEST_FILE} and \
             agents/<slug>/{MANIFEST_FILE} are discovered"
        )),
    }
}

fn select_federated(
    tree: &dyn SourceTree,
    federation: Option<&Federation>,
    candidates: &[String],
    discovery: &mut Discovery,
) {
    let Some(federation) = federation else {
        return;
    };
    let mut listed = HashSet::new();
    for entry in &federation.agents {
        listed.insert(entry.manifest.as_str());
        if let Some(diagnostic) = listed_problem(tree, federation, entry) {
            discovery.diagnostics.push(diagnostic);
            continue;
        }
        discovery.agents.push(DiscoveredAgent {
            manifest: entry.manifest.clone(),
            alias: entry.alias.clone(),
            enabled: entry.enabled,
        });
    }
    for manifest in candidates {
        if listed.contains(manifest.as_str()) || federation.exclude.is_match(manifest) {
            continue;
        }
        if !federation.include.is_match(manifest) {
            discovery.diagnostics.push(
                undiscovered(manifest, &format!("{FEDERATION_FILE} does not select it")).with_help(
                    format!(
                        "list it under [[agents]] in {FEDERATION_FILE}, or match it with \
                         `include` and set `auto_register_new = true`"
                    ),
                ),
            );
        } else if federation.auto_register_new {
            discovery.agents.push(DiscoveredAgent {
                manifest: manifest.clone(),
                alias: None,
                enabled: true,
            });
        } else {
            discovery.diagnostics.push(unlisted(manifest));
        }
    }
}

/// Why a listed entry is not selected: excluded (a notice) or missing (an error).
fn listed_problem(
    tree: &dyn SourceTree,
    federation: &Federation,
    entry: &federation::FederatedAgent,
) -> Option<Diagnostic> {
    let manifest = &entry.manifest;
    if federation.exclude.is_match(manifest) {
        return Some(
            Diagnostic::new(
                &federation::EXCLUDED_MANIFEST,
                FEDERATION_FILE,
                entry.manifest_span,
                format!(
                    "`{manifest}` is listed but an `exclude` glob matches it, so it is not selected"
                ),
            )
            .with_help(
                "exclusions win over [[agents]] entries; remove the entry or narrow `exclude`",
            ),
        );
    }
    if tree.is_file(manifest) {
        return None;
    }
    Some(
        Diagnostic::new(
            &federation::MISSING_MANIFEST,
            FEDERATION_FILE,
            entry.manifest_span,
            format!("listed manifest `{manifest}` does not exist"),
        )
        .with_help("fix the path, or remove the [[agents]] entry"),
    )
}

fn undiscovered(manifest: &str, reason: &str) -> Diagnostic {
    Diagnostic::new(
        &UNDISCOVERED_MANIFEST,
        manifest,
        Span::FILE,
        format!("`{manifest}` is not discovered as an agent: {reason}"),
    )
}

fn unlisted(manifest: &str) -> Diagnostic {
    Diagnostic::new(
        &federation::UNLISTED_MANIFEST,
        manifest,
        Span::FILE,
        format!(
            "`{manifest}` matches `include` in {FEDERATION_FILE} but is not listed, \
             and `auto_register_new` is false"
        ),
    )
    .with_help("add an [[agents]] entry for it, or set `auto_register_new = true`")
}

fn no_agents(federated: bool) -> Diagnostic {
    let (path, help) = if federated {
        (
            FEDERATION_FILE,
            "list an agent under [[agents]], or set `auto_register_new = true` with an `include` that matches one",
        )
    } else {
        (
            MANIFEST_FILE,
            "add an astrolift.toml at the repository root or at agents/<slug>/astrolift.toml",
        )
    };
    Diagnostic::new(
        &NO_AGENTS,
        path,
        Span::FILE,
        "no agent manifest found, so no agent is registered from this repository",
    )
    .with_help(help)
}

/// The workspace manifests: the federation file's `workspaces` globs when it
/// has them, else the root `astrolift.workspace.yaml` and `workspaces/*.yaml`.
fn workspace_manifests(tree: &dyn SourceTree, globs: Option<&GlobSet>) -> Vec<String> {
    tree.entries()
        .iter()
        .map(|e| e.path.as_str())
        .filter(|path| match globs {
            Some(globs) => globs.is_match(path),
            None => {
                *path == WORKSPACE_FILE
                    || (paths::parent(path) == WORKSPACES_DIR && path.ends_with(".yaml"))
            }
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::MemTree;

    fn codes(discovery: &Discovery) -> Vec<(&str, &str)> {
        discovery
            .diagnostics
            .iter()
            .map(|d| (d.code.as_str(), d.path.as_str()))
            .collect()
    }

    #[test]
    fn legacy_selection_and_notices() {
        let tree = MemTree::from_files([
            ("astrolift.toml", ""),
            ("agents/triage/astrolift.toml", ""),
            ("agents/Bad_Name/astrolift.toml", ""),
            ("deep/x/astrolift.toml", ""),
            ("node_modules/p/astrolift.toml", ""),
            ("workspaces/dev.yaml", ""),
            ("astrolift.workspace.yaml", ""),
        ]);
        let discovery = discover(&tree, &Limits::DEFAULT);
        let selected: Vec<_> = discovery
            .agents
            .iter()
            .map(|a| a.manifest.as_str())
            .collect();
        assert_eq!(selected, ["agents/triage/astrolift.toml", "astrolift.toml"]);
        assert_eq!(
            codes(&discovery),
            [
                (
                    "discovery/undiscovered-manifest",
                    "agents/Bad_Name/astrolift.toml"
                ),
                ("discovery/undiscovered-manifest", "deep/x/astrolift.toml"),
            ]
        );
        assert_eq!(
            discovery.workspace_manifests,
            ["astrolift.workspace.yaml", "workspaces/dev.yaml"]
        );
    }

    #[test]
    fn federation_selects_excludes_and_auto_registers() {
        let federation = r#"schema = "astrolift.agent.federation/v1"
name = "support"
include = ["agents/*/astrolift.toml"]
exclude = ["agents/old-*/astrolift.toml"]
auto_register_new = true
workspaces = ["envs/*.yaml"]

[[agents]]
manifest = "agents/triage/astrolift.toml"
alias = "triage"

[[agents]]
manifest = "agents/old-one/astrolift.toml"

[[agents]]
manifest = "agents/gone/astrolift.toml"
enabled = false
"#;
        let tree = MemTree::from_files([
            ("astrolift.agents.toml", federation),
            ("agents/triage/astrolift.toml", ""),
            ("agents/old-one/astrolift.toml", ""),
            ("agents/new/astrolift.toml", ""),
            ("envs/a.yaml", ""),
            ("workspaces/ignored.yaml", ""),
        ]);
        let discovery = discover(&tree, &Limits::DEFAULT);
        let selected: Vec<_> = discovery
            .agents
            .iter()
            .map(|a| (a.manifest.as_str(), a.alias.as_deref()))
            .collect();
        assert_eq!(
            selected,
            [
                ("agents/triage/astrolift.toml", Some("triage")),
                ("agents/new/astrolift.toml", None)
            ]
        );
        assert_eq!(
            codes(&discovery),
            [
                ("federation/excluded-manifest", "astrolift.agents.toml"),
                ("federation/missing-manifest", "astrolift.agents.toml"),
            ]
        );
        assert_eq!(discovery.workspace_manifests, ["envs/a.yaml"]);
    }

    #[test]
    fn empty_repository_gets_one_notice() {
        let tree = MemTree::from_files([("README.md", "hi")]);
        let discovery = discover(&tree, &Limits::DEFAULT);
        assert_eq!(
            codes(&discovery),
            [("discovery/no-agents", "astrolift.toml")]
        );
    }
}
