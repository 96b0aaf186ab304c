//! Workflows at sync: each valid workflow of the commit is registered with
//! the hash of its canonical JSON; a registered workflow whose file is gone
//! is orphaned (kept, not startable), like an agent; one with errors is
//! `failed` and keeps its previous registration.
//!
//! Workflows are written after the agents of the same sync, each by its own
//! conditional put on the version read when planning: a workflow names
//! agents, so registering it last never lets a run start on a workflow whose
//! agents are older than it. A crash in between leaves the workflows of the
//! previous commit, and the next sync of any commit plans them again
//! (workflows are planned against what is stored, not against the synced
//! commit), so the state converges.

use std::collections::BTreeMap;

use astrolift_manifest::workflow::Workflow;
use astrolift_store::StoreError;
use astrolift_store::state::{StateStore, UnixSeconds, WorkflowRecord, WorkflowStatus};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::SyncError;

/// What the sync does (or would do) to one workflow: the `status` values of
/// `astrolift check --format json`'s `workflows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowPlanStatus {
    /// New, or an orphaned workflow coming back.
    Added,
    /// A new definition for a registered workflow.
    Changed,
    /// Same content hash as registered.
    Unchanged,
    /// Registered, but no file of this commit defines it.
    Orphaned,
    /// Errors: not registered; a previous registration is kept.
    Failed,
}

impl WorkflowPlanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkflowPlanStatus::Added => "added",
            WorkflowPlanStatus::Changed => "changed",
            WorkflowPlanStatus::Unchanged => "unchanged",
            WorkflowPlanStatus::Orphaned => "orphaned",
            WorkflowPlanStatus::Failed => "failed",
        }
    }
}

/// One workflow row of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkflowPlanEntry {
    /// The workflow's name (empty when its file has no valid one).
    pub name: String,
    /// Repo-relative path of its file.
    pub path: String,
    pub status: WorkflowPlanStatus,
    /// `sha256:<hex>` of the definition (for a failed workflow: none; for an
    /// orphaned one: the registered hash).
    pub content_hash: Option<String>,
    /// The registered hash it replaces.
    pub previous_hash: Option<String>,
    /// Stage count.
    pub stages: usize,
}

/// One validated workflow file and whether it has errors.
#[derive(Debug, Clone)]
pub struct FoundWorkflow {
    pub workflow: Workflow,
    pub failed: bool,
}

/// The plan's rows and the writes that make it so.
#[derive(Debug, Clone, Default)]
pub struct WorkflowPlan {
    pub entries: Vec<WorkflowPlanEntry>,
    /// Each record to write with the version it must replace.
    pub writes: Vec<(WorkflowRecord, Option<u64>)>,
}

/// A workflow's canonical JSON and its `sha256:<hex>`.
pub fn definition_and_hash(workflow: &Workflow) -> Result<(String, String), SyncError> {
    let definition = serde_json::to_string(workflow)
        .map_err(|e| StoreError::Invalid(format!("a workflow does not serialize: {e}")))?;
    let hash = format!(
        "sha256:{}",
        hex::encode(Sha256::digest(definition.as_bytes()))
    );
    Ok((definition, hash))
}

/// Where the plan's writes come from.
#[derive(Debug, Clone, Copy)]
pub struct WorkflowContext<'a> {
    pub repository: &'a str,
    pub commit: &'a str,
    pub now: UnixSeconds,
}

/// Plans `found` (in path order) against the `registered` workflows of the repository.
pub fn plan_workflows(
    found: &[FoundWorkflow],
    registered: &[WorkflowRecord],
    context: WorkflowContext<'_>,
) -> Result<WorkflowPlan, SyncError> {
    let stored: BTreeMap<&str, &WorkflowRecord> =
        registered.iter().map(|r| (r.name.as_str(), r)).collect();
    let mut plan = WorkflowPlan::default();
    let mut seen: Vec<&str> = Vec::new();
    for FoundWorkflow { workflow, failed } in found {
        let previous = stored.get(workflow.name.as_str()).copied();
        if !workflow.name.is_empty() {
            seen.push(&workflow.name);
        }
        if *failed || workflow.name.is_empty() {
            plan.entries
                .push(row(workflow, WorkflowPlanStatus::Failed, None, previous));
            continue;
        }
        let (definition, hash) = definition_and_hash(workflow)?;
        let status = match previous {
            None => WorkflowPlanStatus::Added,
            Some(p) if p.status == WorkflowStatus::Orphaned => WorkflowPlanStatus::Added,
            Some(p) if p.content_hash == hash => WorkflowPlanStatus::Unchanged,
            Some(_) => WorkflowPlanStatus::Changed,
        };
        plan.entries
            .push(row(workflow, status, Some(hash.clone()), previous));
        if status == WorkflowPlanStatus::Unchanged {
            continue;
        }
        let record = WorkflowRecord {
            repository: context.repository.to_owned(),
            name: workflow.name.clone(),
            path: workflow.path.clone(),
            status: WorkflowStatus::Active,
            content_hash: hash,
            definition,
            commit: context.commit.to_owned(),
            updated_at: context.now,
            version: previous.map_or(1, |p| p.version.saturating_add(1)),
            // A new content is a new state machine: the last one is retired, deleted once
            // idle (docs/reference.md §5.6).
            state_machine_arn: None,
            retired_state_machines: previous.map(retired_with_last).unwrap_or_default(),
        };
        plan.writes.push((record, previous.map(|p| p.version)));
    }
    for record in registered
        .iter()
        .filter(|r| !seen.contains(&r.name.as_str()))
    {
        plan.entries.push(WorkflowPlanEntry {
            name: record.name.clone(),
            path: record.path.clone(),
            status: WorkflowPlanStatus::Orphaned,
            content_hash: Some(record.content_hash.clone()),
            previous_hash: None,
            stages: 0,
        });
        if record.status == WorkflowStatus::Orphaned {
            continue;
        }
        let mut orphaned = record.clone();
        orphaned.status = WorkflowStatus::Orphaned;
        orphaned.commit = context.commit.to_owned();
        orphaned.updated_at = context.now;
        orphaned.version = record.version.saturating_add(1);
        plan.writes.push((orphaned, Some(record.version)));
    }
    Ok(plan)
}

fn row(
    workflow: &Workflow,
    status: WorkflowPlanStatus,
    content_hash: Option<String>,
    previous: Option<&WorkflowRecord>,
) -> WorkflowPlanEntry {
    WorkflowPlanEntry {
        name: workflow.name.clone(),
        path: workflow.path.clone(),
        status,
        content_hash,
        previous_hash: previous.map(|p| p.content_hash.clone()),
        stages: workflow.stages.len(),
    }
}

/// Writes the plan's records, each conditional on the version planned
/// against; returns the items written. A lost race is `Err` (the sync is
/// retried and plans again).
/// The state machines of `previous` to delete once idle: its retired ones and its last one.
fn retired_with_last(previous: &WorkflowRecord) -> Vec<String> {
    let mut retired = previous.retired_state_machines.clone();
    retired.extend(previous.state_machine_arn.clone());
    retired
}

pub async fn apply_workflows(
    state: &dyn StateStore,
    writes: &[(WorkflowRecord, Option<u64>)],
) -> Result<u64, SyncError> {
    for (record, expected) in writes {
        state.workflows().put_workflow(record, *expected).await?;
    }
    Ok(writes.len() as u64)
}
