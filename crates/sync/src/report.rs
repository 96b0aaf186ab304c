//! The sync report: the single input of every renderer (CLI text and JSON,
//! the check run).

use std::collections::BTreeMap;

use astrolift_manifest::drift::DriftSeverity::Critical;
use astrolift_manifest::drift::EnvironmentDrift;
use astrolift_manifest::{Counts, Diagnostic};
use serde::Serialize;

use crate::drift::DriftSeverity;
use crate::plan::{PlanEntry, PlanStatus};
use crate::workflows::WorkflowPlanEntry;

/// Check only, or register.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Mode {
    /// Discover, validate, package and plan; write nothing.
    Check,
    /// Also upload new blobs and write state, for the manifests `registrations` cover, each
    /// under its registration's project. A manifest none of them covers is only checked
    /// (plan status `unregistered`); a registered agent whose manifest is gone is orphaned
    /// only when one of them covers its manifest.
    Apply { registrations: Vec<Coverage> },
}

impl Mode {
    /// Apply every manifest of the repository under `project_id` (one registration of
    /// every manifest).
    pub fn apply_all(project_id: impl Into<String>) -> Mode {
        Mode::Apply {
            registrations: vec![Coverage {
                manifest_path: None,
                project_id: project_id.into(),
            }],
        }
    }

    /// Whether the sync writes state.
    pub fn applies(&self) -> bool {
        matches!(self, Mode::Apply { .. })
    }
}

/// What one registration applied by a sync covers, and under which project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// The one manifest it covers; `None`: every manifest.
    pub manifest_path: Option<String>,
    pub project_id: String,
}

impl Coverage {
    /// Whether it covers the manifest at `manifest_path`.
    pub fn covers(&self, manifest_path: &str) -> bool {
        self.manifest_path
            .as_deref()
            .is_none_or(|covered| covered == manifest_path)
    }
}

impl From<&astrolift_store::state::RepoRegistration> for Coverage {
    fn from(registration: &astrolift_store::state::RepoRegistration) -> Self {
        Coverage {
            manifest_path: registration.manifest_path.clone(),
            project_id: registration.project_id.clone(),
        }
    }
}

/// What one sync found and did.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub repository: String,
    pub commit: String,
    pub git_ref: Option<String>,
    #[serde(flatten)]
    pub mode: Mode,
    /// True when state was written (or was already exactly as planned).
    pub applied: bool,
    /// Why an apply was skipped (an older commit than the one registered).
    pub skipped: Option<String>,
    pub plan: Vec<PlanEntry>,
    /// Manifests that no registration of the repository covers, when the repository has
    /// registrations (per manifest): they are checked only, and the check run names the
    /// `register-repo` command that would cover each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub uncovered: Vec<Uncovered>,
    /// The workflows' plan (absent from JSON when the repository has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workflows: Vec<WorkflowPlanEntry>,
    /// The workspace manifests against the registered ones: each environment's status and
    /// drift, each drift with its severity (absent from JSON when the repository has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workspaces: Vec<EnvironmentDrift>,
    /// The config manifests that env specs name in this repository: each one's bundle and
    /// whether this sync registered it (absent from JSON when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<ConfigPlanEntry>,
    pub diagnostics: Vec<Diagnostic>,
    pub counts: ReportCounts,
    /// The skill repositories (at the refs named) each manifest's catalogue and organization
    /// references name through a registration, by manifest path; manifests naming none are
    /// absent. What the bot records on the registration so that a push to one of them
    /// re-syncs the manifest's repository (docs/reference.md §5.1, "Dependents follow").
    /// Not part of the JSON report.
    #[serde(skip)]
    pub skill_sources: BTreeMap<String, Vec<astrolift_store::state::SkillSource>>,
    /// The agents this apply registered whose packages need dependency layers, in manifest
    /// order: what the caller hands to the packager (docs/reference.md "Dependency
    /// layers"). Empty for a check. Not part of the JSON report.
    #[serde(skip)]
    pub layer_needs: Vec<LayerRequest>,
    /// The registered trigger bindings this check's head changes: what the check run
    /// replays (docs/reference.md §9, "Trigger replay"). Empty for an apply. Not part of
    /// the JSON report.
    #[serde(skip)]
    pub trigger_changes: Vec<crate::trigger_changes::BindingChange>,
    /// The repository's lock with the pins [`crate::SyncRequest::relock`] asked to move
    /// moved, when it pins any of them (docs/reference.md §5.7): what an update pull request
    /// commits. Not part of the JSON report.
    #[serde(skip)]
    pub relocked: Option<crate::locking::Relocked>,
    /// The previews this sync of a pull-request head recorded (docs/reference.md §17);
    /// absent from other syncs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previews: Option<PreviewsReport>,
}

pub use astrolift_store::state::LayerRequest;

/// A manifest that no registration of its repository covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Uncovered {
    /// Repository-relative path of the manifest.
    pub manifest: String,
    /// The `astrolift register-repo … --manifest-path …` command that would cover it,
    /// every argument shell-quoted, with a placeholder project id.
    pub how_to_register: String,
}

/// Counts for titles and summaries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReportCounts {
    pub diagnostics: Counts,
    /// Plan entries per status.
    pub plan: BTreeMap<&'static str, usize>,
    /// Blobs uploaded by this sync.
    pub blob_puts: u64,
    /// State items written by this sync.
    pub state_writes: u64,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.counts.diagnostics.errors > 0
    }

    /// The manifests whose drift from the registered state is critical (docs/reference.md §5.4: the
    /// agent changed, a required credential removed, a credential's kind changed): agents
    /// by their plan's drift, workspace manifests by theirs. In manifest order.
    pub fn critical_drift(&self) -> Vec<&str> {
        let agents = self
            .plan
            .iter()
            .filter(|e| {
                e.drift
                    .iter()
                    .any(|d| d.severity == DriftSeverity::Critical)
            })
            .map(|e| e.manifest.as_str());
        let workspaces = self
            .workspaces
            .iter()
            .filter(|w| w.drifts.iter().any(|d| d.severity == Critical))
            .filter_map(|w| w.new_path.as_deref().or(w.old_path.as_deref()));
        agents.chain(workspaces).collect()
    }

    /// The critical changes of the manifest at `manifest_path`, each as `kind subject`
    /// (`credential-removed GITHUB_TOKEN`): what an acceptance of its drift records.
    pub fn critical_changes(&self, manifest_path: &str) -> Vec<String> {
        let agents = self
            .plan
            .iter()
            .filter(|e| e.manifest == manifest_path)
            .flat_map(|e| &e.drift)
            .filter(|d| d.severity == DriftSeverity::Critical)
            .map(|d| format!("{} {}", d.kind, d.detail));
        let workspaces = self
            .workspaces
            .iter()
            .filter(|w| w.new_path.as_deref().or(w.old_path.as_deref()) == Some(manifest_path))
            .flat_map(|w| &w.drifts)
            .filter(|d| d.severity == Critical)
            .map(|d| format!("{} {}", d.kind, d.subject));
        agents.chain(workspaces).collect()
    }

    /// Entries with `status`.
    pub fn count(&self, status: PlanStatus) -> usize {
        self.counts.plan.get(status.as_str()).copied().unwrap_or(0)
    }

    /// Adds diagnostics found after the sync (the packager's outcomes,
    /// `astrolift_bot::layers`), keeping the counts true.
    pub fn add_diagnostics(&mut self, found: Vec<Diagnostic>) {
        if found.is_empty() {
            return;
        }
        self.diagnostics.extend(found);
        self.recount();
    }

    pub(crate) fn recount(&mut self) {
        self.counts.diagnostics = Counts::of(&self.diagnostics);
        self.counts.plan.clear();
        for entry in &self.plan {
            *self.counts.plan.entry(entry.status.as_str()).or_default() += 1;
        }
    }
}

/// What happened to one config manifest in this sync.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigPlanEntry {
    pub manifest_path: String,
    /// sha256 (hex) of the bundle; `None` when the config has errors.
    pub bundle: Option<String>,
    pub status: ConfigStatus,
    /// Files the bundle hands over.
    pub files: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigStatus {
    /// A new bundle is registered by this apply.
    Registered,
    /// The registered bundle is this one already.
    Unchanged,
    /// Checked only: a check, or no applied registration of an env spec's project covers it.
    Checked,
    /// It has errors (see the diagnostics): nothing is registered.
    Failed,
}

impl ConfigStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigStatus::Registered => "registered",
            ConfigStatus::Unchanged => "unchanged",
            ConfigStatus::Checked => "checked",
            ConfigStatus::Failed => "failed",
        }
    }
}

/// What the previews of one sync are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PreviewsReport {
    /// The previews of this head, in manifest order.
    pub previews: Vec<PreviewEntry>,
    /// Why this pull request has none, when the repository's limit stopped them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// One preview, as the check run shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreviewEntry {
    /// `<agent>-pr<N>`.
    pub name: String,
    /// The registered agent's name.
    pub agent: String,
    pub manifest: String,
    pub snapshot: String,
    pub head_sha: String,
    pub pull_request: u64,
    /// Whether its package needs dependency layers (they are requested with it).
    pub needs_layers: bool,
}
