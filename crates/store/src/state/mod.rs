//! Registration state: repositories, agents, audit history, deliveries, triggers, dispatches
//! and their tasks, where remote skills come from, the heads reconcile last saw, pull
//! requests' previews, and the requests trigger bindings keep for replay.

pub mod agents;
pub mod bindings;
mod change;
pub mod configs;
pub mod deliveries;
pub mod dispatches;
mod dynamo;
pub mod env_specs;
pub mod installations;
pub mod jobs;
pub mod kept_requests;
pub mod layers;
mod model;
mod open;
pub mod outbox;
pub mod previews;
pub mod registrations;
pub mod seen_heads;
pub mod skills;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
mod table;
pub mod tasks;
pub mod workflows;
pub mod workspaces;

pub use agents::AgentStore;
pub use bindings::TriggerBindingStore;
pub use change::{
    AgentChange, ApplyReport, ChangeSet, SyncedCommitUpdate, TRANSACTION_MAX_BYTES,
    TRANSACTION_MAX_ITEMS,
};
pub use configs::{ConfigPackage, ConfigPackageStore};
pub use deliveries::DeliveryStore;
pub use dispatches::DispatchStore;
pub use dynamo::DynamoStateStore;
pub use env_specs::EnvSpecStore;
pub use installations::InstallationStore;
pub use jobs::{DeliveryMark, JobJson, JobRecord, JobState, JobStore};
pub use kept_requests::{
    KEPT_REQUEST_TTL, KeptOutcome, KeptRequest, KeptRequestStore, MAX_KEPT_BODY, MAX_KEPT_REQUESTS,
};
pub use layers::{DependencyFileRef, Layer, LayerBuild, LayerRequest, LayerStatus, LayerStore};
pub use model::*;
pub use open::{open_state_store, state_store_from_url};
pub use outbox::{DispatchOutbox, Queued, QueuedDispatch};
pub use previews::{MAX_PREVIEW_NAME_CHARS, Preview, PreviewStatus, PreviewStore, preview_name};
pub use registrations::RegistrationStore;
pub use seen_heads::{SeenHead, SeenHeadStore};
pub use skills::{Catalogue, SkillRepo, SkillSourceStore};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStateStore;
pub use store::{StateStats, StateStore};
pub use table::{AttributeShape, IndexShape, KeyShape, TableShape, table_definition};
pub use tasks::{DispatchTask, ReportOutcome, TaskReport, TaskStatus, TaskStore};
pub use workflows::{
    RunStatus, StageResult, StageState, StageStatus, WorkflowRecord, WorkflowRun, WorkflowStatus,
    WorkflowStore,
};
pub use workspaces::{
    Acceptor, WorkspaceRecord, WorkspaceStatus, WorkspaceStore, accepted_by, drift_acceptance,
};

use crate::StoreResult;

/// The env spec `name` if an agent of `project_id` may use it (env specs
/// belong to a project: docs/reference.md). The one check that the sync (for the check
/// run), the trigger service and `astrolift dispatch` (at dispatch) share.
/// `Err` is the store failing; `Ok(Err(_))` a refusal.
pub async fn env_spec_for_project(
    state: &dyn StateStore,
    name: &str,
    project_id: &str,
) -> StoreResult<Result<EnvSpec, EnvSpecRefusal>> {
    let Some(spec) = state.get_env_spec(name).await? else {
        return Ok(Err(EnvSpecRefusal::Missing));
    };
    Ok(spec.usable_by(project_id).map(|()| spec))
}
