//! The state store contract ([`StateStore`]) and its traffic counters ([`StateStats`]).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use super::agents::AgentStore;
use super::bindings::TriggerBindingStore;
use super::change::{AgentChange, ChangeSet};
use super::configs::ConfigPackageStore;
use super::deliveries::DeliveryStore;
use super::dispatches::DispatchStore;
use super::env_specs::EnvSpecStore;
use super::installations::InstallationStore;
use super::jobs::JobStore;
use super::kept_requests::KeptRequestStore;
use super::layers::LayerStore;
use super::model::*;
use super::outbox::DispatchOutbox;
use super::previews::{PreviewStatus, PreviewStore, close_all};
use super::registrations::RegistrationStore;
use super::seen_heads::SeenHeadStore;
use super::skills::SkillSourceStore;
use super::tasks::TaskStore;
use super::workflows::WorkflowStore;
use super::workspaces::WorkspaceStore;
use crate::{BoxFuture, StoreError, StoreResult};

/// Counters of state traffic, so tests can assert "0 writes on a no-op re-run".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateStats {
    /// Items (rows) written: puts, updates and deletes that took effect.
    pub writes: u64,
    /// Atomic write batches (TransactWriteItems calls, SQLite transactions of `apply`).
    pub transactions: u64,
    /// Read requests.
    pub reads: u64,
    /// Records (items, rows) the reads returned: what a test counts to show that a keyed read
    /// touched no other repository's records.
    pub records_read: u64,
}

#[derive(Debug, Default)]
pub(crate) struct StateCounters {
    writes: AtomicU64,
    transactions: AtomicU64,
    reads: AtomicU64,
    records_read: AtomicU64,
}

impl StateCounters {
    pub(crate) fn wrote(&self, items: u64) {
        self.writes.fetch_add(items, Ordering::Relaxed);
    }
    pub(crate) fn transaction(&self) {
        self.transactions.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn read_records(&self, records: u64) {
        self.records_read.fetch_add(records, Ordering::Relaxed);
    }
    pub(crate) fn snapshot(&self) -> StateStats {
        StateStats {
            writes: self.writes.load(Ordering::Relaxed),
            transactions: self.transactions.load(Ordering::Relaxed),
            reads: self.reads.load(Ordering::Relaxed),
            records_read: self.records_read.load(Ordering::Relaxed),
        }
    }
}

/// Registration state. Dyn-compatible: used as `Arc<dyn StateStore>`.
///
/// Contract (checked by the contract suite against every implementation):
/// - `apply` writes agent upserts, their audit events and trigger bindings, and the synced
///   commit, each conditional; a failed condition writes nothing of its batch (see
///   [`ChangeSet`] for how big change sets are split);
/// - audit events are append-only; a torn-down agent stays as a tombstone;
/// - `record_delivery` and `record_dispatch` are conditional inserts;
/// - reads of the item just written see it, except `find_agents`, which on DynamoDB reads an
///   eventually consistent index.
pub trait StateStore:
    RegistrationStore
    + InstallationStore
    + AgentStore
    + DeliveryStore
    + EnvSpecStore
    + TriggerBindingStore
    + DispatchStore
    + Send
    + Sync
    + fmt::Debug
{
    /// Counters since the store was opened.
    fn stats(&self) -> StateStats;

    /// The store's location as a URL (`sqlite:PATH`, `dynamodb:TABLE`).
    fn location(&self) -> String;

    /// Workflows, runs and stage results ([`workflows`](super::workflows)).
    fn workflows(&self) -> &dyn WorkflowStore;

    /// The tasks of dispatches: renders and callbacks ([`tasks`](super::tasks)).
    fn tasks(&self) -> &dyn TaskStore;

    /// Registered workspace manifests and drift acceptances ([`workspaces`](super::workspaces)).
    fn workspaces(&self) -> &dyn WorkspaceStore;

    /// Dependency layer builds ([`layers`](super::layers)).
    fn layers(&self) -> &dyn LayerStore;

    /// Packaged config manifests ([`configs`](super::configs)).
    fn config_packages(&self) -> &dyn ConfigPackageStore;

    /// Organization skill repositories and the catalogue ([`skills`](super::skills)).
    fn skills(&self) -> &dyn SkillSourceStore;

    /// The jobs of `serve`'s durable queue and its dead letter ([`jobs`](super::jobs)).
    fn jobs(&self) -> &dyn JobStore;

    /// The heads `astrolift reconcile` last saw, with their `ETag`s ([`seen_heads`](super::seen_heads)).
    fn seen_heads(&self) -> &dyn SeenHeadStore;

    /// Pull requests' previews of agents and their `preview-closed` events
    /// ([`previews`](super::previews)).
    fn previews(&self) -> &dyn PreviewStore;

    /// The last accepted requests of each trigger binding, kept for replay
    /// ([`kept_requests`](super::kept_requests)).
    fn kept_requests(&self) -> &dyn KeptRequestStore;

    /// The dispatch outbox kept inside the store ([`outbox`](super::outbox)): SQLite's; `None` for a
    /// store without one (DynamoDB, whose dispatches go to SQS).
    fn dispatch_outbox(&self) -> Option<&dyn DispatchOutbox> {
        None
    }

    /// Explicit teardown: marks the agent `torn_down` (conditional on its current version),
    /// deletes its trigger bindings and appends a `torn_down` audit event. The agent record
    /// and its audit history stay. `NotFound` if there is no such agent, `Conflict` if it is
    /// already torn down or changed concurrently.
    ///
    /// Its active previews are torn down first, each with its `preview-closed` event, as a
    /// closed pull request's are (docs/reference.md §7, "preview"): a preview of a retired
    /// agent does not outlive it. They go before the agent so that a teardown cut short in
    /// between leaves the agent active and a second teardown finishes both.
    fn teardown<'a>(
        &'a self,
        key: &'a AgentKey,
        at: UnixSeconds,
        detail: &'a str,
    ) -> BoxFuture<'a, StoreResult<Agent>> {
        Box::pin(async move {
            let current = self
                .get_agent(key)
                .await?
                .ok_or_else(|| StoreError::NotFound(format!("agent {key}")))?;
            if current.status == AgentStatus::TornDown {
                return Err(StoreError::Conflict(format!(
                    "agent {key} is already torn down"
                )));
            }
            let previews = self
                .previews()
                .list_previews(&key.repository)
                .await?
                .into_iter()
                .filter(|p| p.manifest_path == key.manifest_path)
                .filter(|p| p.status == PreviewStatus::Active)
                .collect();
            let preview_detail = format!("its agent was torn down ({detail})");
            close_all(self.previews(), previews, &preview_detail, at).await?;
            let bindings = self
                .list_repository_trigger_bindings(&key.repository)
                .await?;
            let mut agent = current.clone();
            agent.status = AgentStatus::TornDown;
            agent.updated_at = at;
            // Its bindings go; the plan compares the listing when it reactivates it.
            agent.bindings_digest = None;
            let mut change = AgentChange::new(
                agent,
                Some(current.version),
                AuditAction::TornDown,
                &current.commit,
                detail,
                at,
            );
            change.audit.previous_snapshot_hash = Some(current.snapshot_hash.clone());
            change.delete_bindings = bindings
                .into_iter()
                .filter(|b| b.manifest_path == key.manifest_path)
                .map(|b| b.trigger_id)
                .collect();
            let torn_down = change.agent.clone();
            self.apply(ChangeSet {
                repository: key.repository.clone(),
                agents: vec![change],
                synced: None,
            })
            .await?;
            Ok(torn_down)
        })
    }
}
