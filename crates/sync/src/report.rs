//! The sync report: the single input of every renderer (CLI text and JSON,
//! the check run).

use std::collections::BTreeMap;

use astrolift_manifest::{Counts, Diagnostic};
use serde::Serialize;

use crate::plan::{PlanEntry, PlanStatus};
use crate::workflows::WorkflowPlanEntry;

/// Check only, or register.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Mode {
    /// Discover, validate, package and plan; write nothing.
    Check,
    /// Also upload new blobs and write state, for agents of `project_id`.
    Apply { project_id: String },
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
    /// The workflows' plan (absent from JSON when the repository has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workflows: Vec<WorkflowPlanEntry>,
    pub diagnostics: Vec<Diagnostic>,
    pub counts: ReportCounts,
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

    /// Entries with `status`.
    pub fn count(&self, status: PlanStatus) -> usize {
        self.counts.plan.get(status.as_str()).copied().unwrap_or(0)
    }

    pub(crate) fn recount(&mut self) {
        self.counts.diagnostics = Counts::of(&self.diagnostics);
        self.counts.plan.clear();
        for entry in &self.plan {
            *self.counts.plan.entry(entry.status.as_str()).or_default() += 1;
        }
    }
}
