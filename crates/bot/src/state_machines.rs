//! The Step Functions engine at sync (docs/reference.md §5.6): after a sync that applied,
//! each active workflow of the repository has the state machine of its content, and those
//! of earlier contents and of orphaned workflows are deleted once no execution runs.
//!
//! - **No call for an unchanged workflow:** a record whose `state_machine_arn` is the
//!   machine of its content hash is left alone; only a new content (the sync cleared the ARN
//!   and retired the old one) or a machine not made yet is compiled and put.
//! - **The record says what exists:** the ARN is written on the workflow record, conditional
//!   on the version read, after the machine exists; a lost race is left to the next sync.
//! - **Failures are retried, never fatal to the sync:** the agents are registered already;
//!   the check run's **Workflows on Step Functions** section names what failed, and the next
//!   applying sync of the repository tries again.

use std::fmt::Write as _;

use astrolift_dispatch::engine::StepFunctionsSettings;
use astrolift_dispatch::state_machine::{Shape, compile, state_machine_name};
use astrolift_dispatch::step_functions::StepFunctions;
use astrolift_manifest::workflow::Workflow;
use astrolift_store::state::{StateStore, WorkflowRecord, WorkflowStatus};

/// The Step Functions engine of a process: its client and settings.
#[derive(Debug, Clone)]
pub struct StepFunctionsEngine {
    pub client: StepFunctions,
    pub settings: StepFunctionsSettings,
}

/// What became of one workflow's state machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineLine {
    pub workflow: String,
    pub outcome: MachineOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MachineOutcome {
    /// Made (or found) for this content: its name and graph shape.
    Put { name: String, shape: Shape },
    /// Already the machine of this content: nothing was asked.
    Unchanged,
    /// Could not be made or recorded now: why (the next sync tries again).
    Failed(String),
}

/// Brings `repository`'s workflows' state machines in line with their records; one line per
/// active workflow that was put or failed, and per retired machine still waiting.
pub async fn sync_state_machines(
    state: &dyn StateStore,
    engine: &StepFunctionsEngine,
    repository: &str,
) -> Vec<MachineLine> {
    let records = match state.workflows().list_workflows(repository).await {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(repository, %error, "cannot list the workflows for their state machines");
            return Vec::new();
        }
    };
    let mut lines = Vec::new();
    for record in records {
        let workflow = record.name.clone();
        let outcome = match sync_one(state, engine, record).await {
            Ok(outcome) => outcome,
            Err(why) => MachineOutcome::Failed(why),
        };
        if outcome != MachineOutcome::Unchanged {
            tracing::info!(repository, workflow, ?outcome, "state machine");
        }
        lines.push(MachineLine { workflow, outcome });
    }
    lines
}

async fn sync_one(
    state: &dyn StateStore,
    engine: &StepFunctionsEngine,
    record: WorkflowRecord,
) -> Result<MachineOutcome, String> {
    let mut next = record.clone();
    let mut outcome = MachineOutcome::Unchanged;
    if record.status == WorkflowStatus::Orphaned {
        next.retired_state_machines
            .extend(next.state_machine_arn.take());
    } else {
        let name = machine_name(&engine.settings, &record)?;
        let current = record
            .state_machine_arn
            .as_deref()
            .is_some_and(|arn| arn.ends_with(&format!(":stateMachine:{name}")));
        if !current {
            let (arn, shape) = put(engine, &record, &name).await?;
            next.state_machine_arn = Some(arn);
            outcome = MachineOutcome::Put { name, shape };
        }
    }
    next.retired_state_machines = delete_idle(engine, &next.retired_state_machines).await;
    if next != record {
        next.version = record.version.saturating_add(1);
        state
            .workflows()
            .put_workflow(&next, Some(record.version))
            .await
            .map_err(|error| format!("the workflow record was not updated ({error})"))?;
    }
    Ok(outcome)
}

fn machine_name(
    settings: &StepFunctionsSettings,
    record: &WorkflowRecord,
) -> Result<String, String> {
    let hash = record.content_hash.trim_start_matches("sha256:");
    state_machine_name(&settings.prefix, &record.repository, &record.name, hash)
        .map_err(|error| error.to_string())
}

async fn put(
    engine: &StepFunctionsEngine,
    record: &WorkflowRecord,
    name: &str,
) -> Result<(String, Shape), String> {
    let workflow: Workflow = serde_json::from_str(&record.definition)
        .map_err(|error| format!("its stored definition does not parse ({error})"))?;
    let machine =
        compile(&workflow, &engine.settings.stage_queue_url).map_err(|error| error.to_string())?;
    let arn = engine
        .client
        .put_state_machine(name, &machine.definition)
        .await
        .map_err(|error| error.to_string())?;
    Ok((arn, machine.shape))
}

/// The retired machines that are still there after deleting each idle one.
async fn delete_idle(engine: &StepFunctionsEngine, retired: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    for arn in retired {
        match engine.client.delete_if_idle(arn).await {
            Ok(true) => tracing::info!(arn, "retired state machine deleted"),
            Ok(false) => kept.push(arn.clone()),
            Err(error) => {
                tracing::warn!(arn, %error, "cannot delete a retired state machine");
                kept.push(arn.clone());
            }
        }
    }
    kept
}

/// The check run's **Workflows on Step Functions** section, when a machine was put or failed.
pub fn section(lines: &[MachineLine]) -> Option<String> {
    let shown: Vec<&MachineLine> = lines
        .iter()
        .filter(|line| line.outcome != MachineOutcome::Unchanged)
        .collect();
    if shown.is_empty() {
        return None;
    }
    let mut text = String::from("### Workflows on Step Functions\n\n");
    for line in shown {
        let _ = match &line.outcome {
            MachineOutcome::Put { name, shape } => writeln!(
                text,
                "- `{}`: state machine `{name}`, {}.",
                line.workflow,
                shape_text(*shape)
            ),
            MachineOutcome::Failed(why) => writeln!(
                text,
                "- `{}`: **no state machine yet**: {why}. The next sync of this repository tries \
                 again; until then a run of it cannot start.",
                line.workflow
            ),
            MachineOutcome::Unchanged => Ok(()),
        };
    }
    Some(text)
}

fn shape_text(shape: Shape) -> &'static str {
    match shape {
        Shape::SeriesParallel => "its stages as nested parallel branches",
        Shape::Levels => {
            "by topological levels (the stage graph is not series-parallel, so each level starts \
             when the whole level before it has ended)"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_says_each_shape_and_each_failure_and_omits_the_unchanged() {
        let lines = [
            MachineLine {
                workflow: "triage".into(),
                outcome: MachineOutcome::Put {
                    name: "astrolift-o_r-triage-0123abcd".into(),
                    shape: Shape::Levels,
                },
            },
            MachineLine {
                workflow: "weekly".into(),
                outcome: MachineOutcome::Failed("throttled".into()),
            },
            MachineLine {
                workflow: "same".into(),
                outcome: MachineOutcome::Unchanged,
            },
        ];
        let text = section(&lines).expect("a section");
        assert!(
            text.contains("`astrolift-o_r-triage-0123abcd`, by topological levels"),
            "{text}"
        );
        assert!(
            text.contains("`weekly`: **no state machine yet**: throttled"),
            "{text}"
        );
        assert!(!text.contains("`same`"), "{text}");
        assert_eq!(section(&lines[2..]), None);
    }
}
