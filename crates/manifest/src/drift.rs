//! Drift between two resolved environments (docs/reference.md §5.4, drift).
//!
//! Every difference is one [`Drift`] of a stable kind, classified as the seed
//! says: **critical** drift (`agent-changed`, the removal of a *required*
//! credential, `credential-kind-changed`) fails a resume; everything else is a
//! **warning** that is reported and lets it proceed.
//!
//! [`drift_between_trees`] compares the workspace manifests of two trees
//! (two directories, or two refs checked out), for `astrolift drift OLD NEW`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

use serde::Serialize;

use crate::diagnostic::{Diagnostic, Severity};
use crate::limits::Limits;
use crate::resolved::{AgentRuntime, ResolvedEnvironment};
use crate::tree::SourceTree;
use crate::validate::{ValidateOptions, validate_repository};
use crate::workspace::{WorkspaceManifest, validate_workspace};

/// How bad a drift is: the one severity of every drift, of workspace and
/// agent snapshots alike. Ordered from least to most severe, so the worst
/// of several is their `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DriftSeverity {
    /// Reported as an event; the resume proceeds.
    Warning,
    /// Fails a resume with a typed error.
    Critical,
}

/// The kinds of drift. The seed names some (`subagent-added`,
/// `skill-version-changed`, …); the rest follow the same pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriftKind {
    AgentChanged,
    AgentProfileChanged,
    SurfaceCompatChanged,
    SubagentAdded,
    SubagentRemoved,
    SubagentChanged,
    SkillAdded,
    SkillRemoved,
    SkillVersionChanged,
    ToolSelectionAdded,
    ToolSelectionRemoved,
    EnvVarAdded,
    EnvVarRemoved,
    EnvVarChanged,
    CredentialAdded,
    CredentialRemoved,
    CredentialKindChanged,
    CredentialChanged,
    PermissionChanged,
    PersistenceChanged,
    OutputSurfaceChanged,
    ImageChanged,
    PolicyChanged,
}

impl DriftKind {
    /// The stable kebab-case id, such as `skill-version-changed`.
    pub fn as_str(self) -> &'static str {
        use DriftKind as K;
        match self {
            K::AgentChanged => "agent-changed",
            K::AgentProfileChanged => "agent-profile-changed",
            K::SurfaceCompatChanged => "surface-compat-changed",
            K::SubagentAdded => "subagent-added",
            K::SubagentRemoved => "subagent-removed",
            K::SubagentChanged => "subagent-changed",
            K::SkillAdded => "skill-added",
            K::SkillRemoved => "skill-removed",
            K::SkillVersionChanged => "skill-version-changed",
            K::ToolSelectionAdded => "tool-selection-added",
            K::ToolSelectionRemoved => "tool-selection-removed",
            K::EnvVarAdded => "env-var-added",
            K::EnvVarRemoved => "env-var-removed",
            K::EnvVarChanged => "env-var-changed",
            K::CredentialAdded => "credential-added",
            K::CredentialRemoved => "credential-removed",
            K::CredentialKindChanged => "credential-kind-changed",
            K::CredentialChanged => "credential-changed",
            K::PermissionChanged => "permission-changed",
            K::PersistenceChanged => "persistence-changed",
            K::OutputSurfaceChanged => "output-surface-changed",
            K::ImageChanged => "image-changed",
            K::PolicyChanged => "policy-changed",
        }
    }
}

impl fmt::Display for DriftKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One difference between two resolved environments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Drift {
    pub kind: DriftKind,
    pub severity: DriftSeverity,
    /// What changed: a skill slug, a credential name, `image`…
    pub subject: String,
    /// The old and new values, rendered; `None` for an absent side.
    pub old: Option<String>,
    pub new: Option<String>,
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".to_owned());
        write!(
            f,
            "{:<8} {} {}: {} -> {}",
            match self.severity {
                DriftSeverity::Critical => "critical",
                DriftSeverity::Warning => "warning",
            },
            self.kind,
            self.subject,
            show(&self.old),
            show(&self.new)
        )
    }
}

/// Every difference from `old` to `new`, in a stable order.
pub fn drift(old: &ResolvedEnvironment, new: &ResolvedEnvironment) -> Vec<Drift> {
    let mut out = Drifts::default();
    agent(&mut out, old, new);
    out.value(
        DriftKind::SurfaceCompatChanged,
        "surfaceCompat",
        &old.surfaces,
        &new.surfaces,
    );
    out.keyed(
        &old.sub_agents,
        &new.sub_agents,
        [
            DriftKind::SubagentAdded,
            DriftKind::SubagentRemoved,
            DriftKind::SubagentChanged,
        ],
    );
    out.keyed(
        &old.skills,
        &new.skills,
        [
            DriftKind::SkillAdded,
            DriftKind::SkillRemoved,
            DriftKind::SkillVersionChanged,
        ],
    );
    tool_selection(&mut out, &old.tool_selection, &new.tool_selection);
    out.keyed(
        &old.environment,
        &new.environment,
        [
            DriftKind::EnvVarAdded,
            DriftKind::EnvVarRemoved,
            DriftKind::EnvVarChanged,
        ],
    );
    credentials(&mut out, old, new);
    out.value(
        DriftKind::PermissionChanged,
        "permissions",
        &old.permissions,
        &new.permissions,
    );
    out.value(
        DriftKind::PersistenceChanged,
        "persistence",
        &old.persistence,
        &new.persistence,
    );
    out.value(
        DriftKind::OutputSurfaceChanged,
        "outputSurface",
        &old.output_surface,
        &new.output_surface,
    );
    out.value(DriftKind::ImageChanged, "image", &old.image, &new.image);
    out.value(DriftKind::PolicyChanged, "policy", &old.policy, &new.policy);
    out.0
}

fn agent(out: &mut Drifts, old: &ResolvedEnvironment, new: &ResolvedEnvironment) {
    let slug = |env: &ResolvedEnvironment| env.agent.as_ref().map(|a| a.slug.clone());
    if slug(old) != slug(new) {
        out.push_critical(DriftKind::AgentChanged, "agent", slug(old), slug(new));
        return;
    }
    let profile = |env: &ResolvedEnvironment| {
        env.agent
            .as_ref()
            .map(|a| (a.stage.clone(), a.role.clone()))
    };
    if profile(old) != profile(new) {
        out.value(
            DriftKind::AgentProfileChanged,
            "agent",
            &old.agent,
            &new.agent,
        );
    }
}

fn tool_selection(out: &mut Drifts, old: &BTreeSet<String>, new: &BTreeSet<String>) {
    for added in new.difference(old) {
        out.push(
            DriftKind::ToolSelectionAdded,
            added,
            None,
            Some(added.clone()),
        );
    }
    for removed in old.difference(new) {
        out.push(
            DriftKind::ToolSelectionRemoved,
            removed,
            Some(removed.clone()),
            None,
        );
    }
}

/// Credentials: removing a *required* one and changing a kind are critical.
fn credentials(out: &mut Drifts, old: &ResolvedEnvironment, new: &ResolvedEnvironment) {
    for (name, before) in &old.credentials {
        match new.credentials.get(name) {
            None if before.required => {
                out.push_critical(
                    DriftKind::CredentialRemoved,
                    name,
                    Some(render(before)),
                    None,
                );
            }
            None => out.push(
                DriftKind::CredentialRemoved,
                name,
                Some(render(before)),
                None,
            ),
            Some(after) if after.kind != before.kind => out.push_critical(
                DriftKind::CredentialKindChanged,
                name,
                Some(before.kind.clone()),
                Some(after.kind.clone()),
            ),
            Some(after) if after != before => out.push(
                DriftKind::CredentialChanged,
                name,
                Some(render(before)),
                Some(render(after)),
            ),
            Some(_) => {}
        }
    }
    for (name, after) in &new.credentials {
        if !old.credentials.contains_key(name) {
            out.push(DriftKind::CredentialAdded, name, None, Some(render(after)));
        }
    }
}

/// A value rendered as compact JSON for the drift's old/new.
fn render<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

#[derive(Default)]
struct Drifts(Vec<Drift>);

impl Drifts {
    fn push(&mut self, kind: DriftKind, subject: &str, old: Option<String>, new: Option<String>) {
        self.0.push(Drift {
            kind,
            severity: DriftSeverity::Warning,
            subject: subject.to_owned(),
            old,
            new,
        });
    }

    fn push_critical(
        &mut self,
        kind: DriftKind,
        subject: &str,
        old: Option<String>,
        new: Option<String>,
    ) {
        self.push(kind, subject, old, new);
        if let Some(last) = self.0.last_mut() {
            last.severity = DriftSeverity::Critical;
        }
    }

    /// One whole-value comparison.
    fn value<T: Serialize + PartialEq>(
        &mut self,
        kind: DriftKind,
        subject: &str,
        old: &T,
        new: &T,
    ) {
        if old != new {
            self.push(kind, subject, Some(render(old)), Some(render(new)));
        }
    }

    /// Added, removed and changed entries of a keyed collection.
    fn keyed<V: Serialize + PartialEq>(
        &mut self,
        old: &BTreeMap<String, V>,
        new: &BTreeMap<String, V>,
        [added, removed, changed]: [DriftKind; 3],
    ) {
        for (key, after) in new {
            match old.get(key) {
                None => self.push(added, key, None, Some(render(after))),
                Some(before) if before != after => {
                    self.push(changed, key, Some(render(before)), Some(render(after)));
                }
                Some(_) => {}
            }
        }
        for (key, before) in old {
            if !new.contains_key(key) {
                self.push(removed, key, Some(render(before)), None);
            }
        }
    }
}

/// How one workspace manifest compares between two trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvironmentStatus {
    Added,
    Removed,
    Changed,
    Unchanged,
}

/// The drift of one environment: a workspace manifest (`workspace/<slug>`,
/// matched by `metadata.slug`) or a native agent (`agent/<name>`, its image,
/// policy, `[environment]` and `[secrets]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvironmentDrift {
    /// `workspace/<slug>` or `agent/<name>`.
    pub id: String,
    pub old_path: Option<String>,
    pub new_path: Option<String>,
    pub status: EnvironmentStatus,
    pub drifts: Vec<Drift>,
}

/// What `astrolift drift OLD NEW` prints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DriftReport {
    pub environments: Vec<EnvironmentDrift>,
    /// Problems reading either tree's manifests (paths are relative to their tree).
    pub diagnostics: Vec<Diagnostic>,
}

impl DriftReport {
    /// True when any drift would fail a resume.
    pub fn has_critical(&self) -> bool {
        self.environments
            .iter()
            .flat_map(|w| &w.drifts)
            .any(|d| d.severity == DriftSeverity::Critical)
    }

    /// The human form: one block per environment, one line per drift.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for workspace in &self.environments {
            let status = render(&workspace.status);
            let _ = writeln!(text, "{} ({status})", workspace.id);
            for drift in &workspace.drifts {
                let _ = writeln!(text, "  {drift}");
            }
        }
        if self.environments.is_empty() {
            text.push_str("no agent or workspace manifests in either tree\n");
        }
        text
    }
}

/// Resolved environments by id (`workspace/<slug>`, `agent/<name>`): each one's manifest
/// path and its resolved environment.
pub type Environments = BTreeMap<String, (String, ResolvedEnvironment)>;

/// Compares two trees: the workspace manifests (as [`crate::discovery`]
/// finds them, federation globs included), matched by `metadata.slug`, and
/// the native agents, matched by name. A manifest with errors still resolves
/// best-effort; its diagnostics are in the report.
pub fn drift_between_trees(
    old: &dyn SourceTree,
    new: &dyn SourceTree,
    limits: &Limits,
) -> DriftReport {
    let mut diagnostics = Vec::new();
    let old_envs = resolve_tree(old, limits, &mut diagnostics);
    let new_envs = resolve_tree(new, limits, &mut diagnostics);
    DriftReport {
        environments: compare_environments(&old_envs, &new_envs),
        diagnostics,
    }
}

/// The drift of every environment from `old` to `new`, by id: added, removed, changed
/// (with its drifts) or unchanged. What `astrolift drift` prints and what the sync
/// reports of a pull request's workspace manifests against the registered ones.
pub fn compare_environments(old: &Environments, new: &Environments) -> Vec<EnvironmentDrift> {
    let ids: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    ids.into_iter()
        .map(|id| {
            let before = old.get(id);
            let after = new.get(id);
            let (status, drifts) = match (before, after) {
                (Some((_, b)), Some((_, a))) => {
                    let drifts = drift(b, a);
                    let status = if drifts.is_empty() {
                        EnvironmentStatus::Unchanged
                    } else {
                        EnvironmentStatus::Changed
                    };
                    (status, drifts)
                }
                (None, _) => (EnvironmentStatus::Added, Vec::new()),
                (_, None) => (EnvironmentStatus::Removed, Vec::new()),
            };
            EnvironmentDrift {
                id: id.clone(),
                old_path: before.map(|(p, _)| p.clone()),
                new_path: after.map(|(p, _)| p.clone()),
                status,
                drifts,
            }
        })
        .collect()
}

/// `workspace/<slug>` (or the path, when the slug is missing) and
/// `agent/<name>` → (manifest path, resolved environment).
fn resolve_tree(
    tree: &dyn SourceTree,
    limits: &Limits,
    diagnostics: &mut Vec<Diagnostic>,
) -> Environments {
    let options = ValidateOptions {
        limits: *limits,
        ..ValidateOptions::default()
    };
    let validation = validate_repository(tree, &options);
    // Notices (such as "no agent manifest") are validation's to report, not drift's.
    diagnostics.extend(
        validation
            .diagnostics
            .into_iter()
            .filter(|d| d.severity != Severity::Notice),
    );
    let mut out = resolve_workspaces(tree, &validation.workspace_manifests, limits);
    for agent in &validation.agents {
        let runtime = AgentRuntime::from_agent(agent);
        let mut resolved =
            ResolvedEnvironment::resolve(&WorkspaceManifest::default(), Some(&runtime));
        resolved.manifest = agent.name.clone();
        resolved.surfaces.clear();
        out.insert(
            format!("agent/{}", agent.name),
            (agent.manifest.clone(), resolved),
        );
    }
    out
}

/// The workspace manifests at `paths` (as validation discovered them), resolved, by
/// `workspace/<slug>` (or `workspace/<path>` when the slug is missing). A manifest that
/// cannot be read at all is left out; its diagnostics are validation's to report.
pub fn resolve_workspaces(
    tree: &dyn SourceTree,
    paths: &[String],
    limits: &Limits,
) -> Environments {
    let mut out = BTreeMap::new();
    for path in paths {
        let (manifest, _) = validate_workspace(tree, path, limits);
        if let Some(manifest) = manifest {
            let key = if manifest.metadata.slug.is_empty() {
                format!("workspace/{path}")
            } else {
                format!("workspace/{}", manifest.metadata.slug)
            };
            out.insert(
                key,
                (path.clone(), ResolvedEnvironment::resolve(&manifest, None)),
            );
        }
    }
    out
}
