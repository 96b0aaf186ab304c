//! The state store contract ([`StateStore`]) and its traffic counters ([`StateStats`]).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::change::{AgentChange, ApplyReport, ChangeSet};
use super::configs::ConfigPackageStore;
use super::model::*;
use super::outbox::DispatchOutbox;
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
pub trait StateStore: Send + Sync + fmt::Debug {
    /// The registration of a repository that covers every manifest (`manifest_path` is
    /// `None`), if there is one. A repository registered per manifest has none: use
    /// [`StateStore::list_repository_registrations`].
    fn get_registration<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<RepoRegistration>>>;
    /// Creates or replaces the registration with the same (repository, manifest path).
    /// Refuses, writing nothing, one that overlaps another registration of the repository
    /// ([`StoreError::Overlap`]); the check and the write are atomic against concurrent
    /// writers (a lost race is a `Conflict`).
    fn put_registration<'a>(
        &'a self,
        registration: &'a RepoRegistration,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Every registration, ordered by repository, then manifest path (the registration of
    /// every manifest first).
    fn list_registrations(&self) -> BoxFuture<'_, StoreResult<Vec<RepoRegistration>>>;
    /// The registrations of one repository, ordered by manifest path (the registration of
    /// every manifest first): a keyed read.
    fn list_repository_registrations<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<RepoRegistration>>>;
    /// Deletes the registration (repository, manifest path); `Ok(false)` when there was none.
    /// Its agents stay registered as they are: a sync no longer applies their manifests.
    fn delete_registration<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<bool>>;
    /// Sets the [`RepoRegistration::last_sync`] of the registration (repository, manifest
    /// path), leaving the rest of it as stored. Never creates one: `Ok(false)` when there is
    /// none, or (DynamoDB) when it was written or deleted concurrently (the next sync records
    /// it again). One row, or one conditional transaction: a sync never brings back a
    /// registration an operator removed meanwhile.
    fn record_last_sync<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: Option<&'a str>,
        last_sync: &'a LastSync,
    ) -> BoxFuture<'a, StoreResult<bool>>;
    /// The last applied commit of a repository's ref.
    fn get_synced_commit<'a>(
        &'a self,
        repository: &'a str,
        ref_name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SyncedCommit>>>;

    /// An installation.
    fn get_installation(
        &self,
        installation_id: u64,
    ) -> BoxFuture<'_, StoreResult<Option<Installation>>>;
    /// Creates or replaces an installation.
    fn put_installation<'a>(
        &'a self,
        installation: &'a Installation,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Deletes an installation (GitHub's `installation.deleted`); absent is fine.
    fn delete_installation(&self, installation_id: u64) -> BoxFuture<'_, StoreResult<()>>;

    /// One agent.
    fn get_agent<'a>(&'a self, key: &'a AgentKey) -> BoxFuture<'a, StoreResult<Option<Agent>>>;
    /// The agents of a repository (every status), ordered by manifest path.
    fn list_agents<'a>(&'a self, repository: &'a str) -> BoxFuture<'a, StoreResult<Vec<Agent>>>;
    /// The agents named `name` in a project (through the project/name index).
    fn find_agents<'a>(
        &'a self,
        project_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<Agent>>>;
    /// Writes a change set with conditional writes; see [`ChangeSet`].
    fn apply(&self, changes: ChangeSet) -> BoxFuture<'_, StoreResult<ApplyReport>>;
    /// The audit events of an agent, oldest first.
    fn list_audit_events<'a>(
        &'a self,
        key: &'a AgentKey,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditEvent>>>;

    /// Records a webhook delivery id for `ttl`; a live duplicate is reported, not rewritten.
    fn record_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        now: UnixSeconds,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<DeliveryOutcome>>;
    /// Forgets a recorded delivery, so that its redelivery is processed: the
    /// webhook calls it when it recorded a delivery but could not queue its job.
    fn forget_delivery<'a>(&'a self, delivery_id: &'a str) -> BoxFuture<'a, StoreResult<()>>;

    /// Creates or replaces an env spec.
    fn put_env_spec<'a>(&'a self, spec: &'a EnvSpec) -> BoxFuture<'a, StoreResult<()>>;
    /// An env spec by name.
    fn get_env_spec<'a>(&'a self, name: &'a str) -> BoxFuture<'a, StoreResult<Option<EnvSpec>>>;
    /// Every env spec, ordered by name.
    fn list_env_specs(&self) -> BoxFuture<'_, StoreResult<Vec<EnvSpec>>>;

    /// A trigger binding by id.
    fn get_trigger_binding<'a>(
        &'a self,
        trigger_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TriggerBinding>>>;
    /// Every trigger binding, ordered by id. A scan of every repository's bindings: for
    /// operators' listings only, never per delivery.
    fn list_trigger_bindings(&self) -> BoxFuture<'_, StoreResult<Vec<TriggerBinding>>>;
    /// The trigger bindings of one repository, ordered by id: a keyed read of that
    /// repository's bindings only (no binding of another repository is read). Bindings
    /// written before the repository key existed are found too (each backend migrates them).
    fn list_repository_trigger_bindings<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TriggerBinding>>>;
    /// The `github`-sourced bindings of `repository` that list the GitHub event `event`
    /// (`issues`, whatever the action), ordered by id: what a delivery of that event reads.
    /// A keyed read of that repository's bindings of that event: no binding of another
    /// repository or another event is read (each backend keys bindings by repository and
    /// event, see [`TriggerBinding::event_names`], and migrates bindings written before).
    ///
    /// The default filters [`StateStore::list_repository_trigger_bindings`]; the SQLite and
    /// DynamoDB stores override it with a keyed read.
    fn list_event_trigger_bindings<'a>(
        &'a self,
        repository: &'a str,
        event: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TriggerBinding>>> {
        Box::pin(async move {
            let mut bindings = self.list_repository_trigger_bindings(repository).await?;
            bindings.retain(|binding| binding.lists_event(event));
            Ok(bindings)
        })
    }

    /// Stores a dispatch unless one with its idempotency key exists, and with it, in the same
    /// conditional write, its task ([`DispatchTask::queued`], found by task id and by
    /// dispatch id through [`StateStore::tasks`]); a dispatch without a task id (the shape of
    /// records written before tasks existed) gets none (a compatibility shim: when it can go
    /// is in docs/operations.md, "Compatibility shims").
    fn record_dispatch<'a>(
        &'a self,
        dispatch: &'a Dispatch,
    ) -> BoxFuture<'a, StoreResult<DispatchOutcome>>;
    /// A dispatch by idempotency key.
    fn get_dispatch<'a>(
        &'a self,
        idempotency_key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<Dispatch>>>;

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

    /// Packaged config manifests ([`configs`](super::configs)).
    fn config_packages(&self) -> &dyn ConfigPackageStore;

    /// Organization skill repositories and the catalogue ([`skills`](super::skills)).
    fn skills(&self) -> &dyn SkillSourceStore;

    /// The dispatch outbox kept inside the store ([`outbox`](super::outbox)): SQLite's; `None` for a
    /// store without one (DynamoDB, whose dispatches go to SQS).
    fn dispatch_outbox(&self) -> Option<&dyn DispatchOutbox> {
        None
    }

    /// Explicit teardown: marks the agent `torn_down` (conditional on its current version),
    /// deletes its trigger bindings and appends a `torn_down` audit event. The agent record
    /// and its audit history stay. `NotFound` if there is no such agent, `Conflict` if it is
    /// already torn down or changed concurrently.
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
