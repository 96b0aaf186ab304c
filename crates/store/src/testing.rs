//! Fault-injecting wrappers for crash tests (feature `testing`).
//!
//! A wrapper forwards every call to the inner store, except the Nth call that matches its
//! [`FaultPlan`], which fails with [`StoreError::Unavailable`] *without reaching the inner
//! store*: the state is exactly as if the process had died just before that call.

use crate::state::{
    AgentStore, DeliveryStore, DispatchStore, EnvSpecStore, InstallationStore, RegistrationStore,
    TriggerBindingStore,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::state::{
    Agent, AgentKey, ApplyReport, AuditEvent, Catalogue, ChangeSet, DeliveryOutcome, Dispatch,
    DispatchOutcome, EnvSpec, Installation, LastSync, RepoRegistration, SkillRepo, StateStats,
    StateStore, SyncedCommit, TriggerBinding, UnixSeconds,
};
use crate::{
    BlobBody, BlobKey, BlobStats, BlobStore, BoxFuture, PutOutcome, StoreError, StoreResult,
};

/// Which calls fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPlan {
    /// The 1-based number of the matching call that fails.
    pub nth: u64,
    /// Count only writes (uploads, state writes); reads always pass.
    pub writes_only: bool,
    /// Once failed, keep failing every later matching call (a dead backend), instead of
    /// failing just one.
    pub sticky: bool,
}

impl FaultPlan {
    /// Fail only the Nth write.
    pub fn nth_write(nth: u64) -> Self {
        FaultPlan {
            nth,
            writes_only: true,
            sticky: false,
        }
    }

    /// Fail only the Nth call of any kind.
    pub fn nth_call(nth: u64) -> Self {
        FaultPlan {
            nth,
            writes_only: false,
            sticky: false,
        }
    }

    /// Fail the Nth write and every write after it.
    pub fn writes_from(nth: u64) -> Self {
        FaultPlan {
            nth,
            writes_only: true,
            sticky: true,
        }
    }
}

/// Counts calls and decides which one fails.
#[derive(Debug)]
pub struct FaultInjector {
    plan: FaultPlan,
    calls: AtomicU64,
    injected: AtomicU64,
}

impl FaultInjector {
    /// An injector following `plan`.
    pub fn new(plan: FaultPlan) -> Self {
        FaultInjector {
            plan,
            calls: AtomicU64::new(0),
            injected: AtomicU64::new(0),
        }
    }

    /// Counts one call; `Err` when this call must fail.
    pub fn check(&self, operation: &str, is_write: bool) -> StoreResult<()> {
        if self.plan.writes_only && !is_write {
            return Ok(());
        }
        let number = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let fails = number == self.plan.nth || (self.plan.sticky && number > self.plan.nth);
        if fails {
            self.injected.fetch_add(1, Ordering::SeqCst);
            return Err(StoreError::Unavailable(format!(
                "injected fault on {operation} (call {number})"
            )));
        }
        Ok(())
    }

    /// How many faults were injected so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }
}

/// A [`BlobStore`] whose Nth call fails, and whose calls may each take a fixed extra time
/// (a store far away).
#[derive(Debug)]
pub struct FaultyBlobStore {
    inner: Arc<dyn BlobStore>,
    faults: FaultInjector,
    delay: Duration,
}

impl FaultyBlobStore {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn BlobStore>, plan: FaultPlan) -> Self {
        FaultyBlobStore {
            inner,
            faults: FaultInjector::new(plan),
            delay: Duration::ZERO,
        }
    }

    /// Each call waits `delay` before it goes on.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    async fn check(&self, operation: &str, is_write: bool) -> StoreResult<()> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.faults.check(operation, is_write)
    }

    /// The injector, to ask how many faults fired.
    pub fn faults(&self) -> &FaultInjector {
        &self.faults
    }
}

impl BlobStore for FaultyBlobStore {
    fn put_if_absent<'a>(
        &'a self,
        key: &'a BlobKey,
        body: BlobBody,
        content_type: &'a str,
    ) -> BoxFuture<'a, StoreResult<PutOutcome>> {
        Box::pin(async move {
            self.check("put_if_absent", true).await?;
            self.inner.put_if_absent(key, body, content_type).await
        })
    }

    fn get<'a>(&'a self, key: &'a BlobKey) -> BoxFuture<'a, StoreResult<Vec<u8>>> {
        Box::pin(async move {
            self.check("get", false).await?;
            self.inner.get(key).await
        })
    }

    fn exists<'a>(&'a self, key: &'a BlobKey) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            self.check("exists", false).await?;
            self.inner.exists(key).await
        })
    }

    fn presigned_get_url<'a>(
        &'a self,
        key: &'a BlobKey,
        expiry: Duration,
    ) -> BoxFuture<'a, StoreResult<String>> {
        Box::pin(async move {
            self.check("presigned_get_url", false).await?;
            self.inner.presigned_get_url(key, expiry).await
        })
    }

    fn stats(&self) -> BlobStats {
        self.inner.stats()
    }

    fn location(&self) -> String {
        self.inner.location()
    }
}

/// A [`StateStore`] whose Nth call fails.
#[derive(Debug)]
pub struct FaultyStateStore {
    inner: Arc<dyn StateStore>,
    faults: FaultInjector,
    hide_trigger_bindings: bool,
    hidden_agent: Option<String>,
}

impl FaultyStateStore {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn StateStore>, plan: FaultPlan) -> Self {
        FaultyStateStore {
            inner,
            faults: FaultInjector::new(plan),
            hide_trigger_bindings: false,
            hidden_agent: None,
        }
    }

    /// Lists no trigger bindings: a read that sees an agent record but not
    /// the bindings written in the same change set, as a Query may while a
    /// concurrent DynamoDB transaction is being applied.
    pub fn hiding_trigger_bindings(mut self) -> Self {
        self.hide_trigger_bindings = true;
        self
    }

    /// Lists no agent at `manifest_path`: a read that lags a concurrent writer of that agent,
    /// so that a change planned from it fails its condition when it is written.
    pub fn hiding_agent(mut self, manifest_path: &str) -> Self {
        self.hidden_agent = Some(manifest_path.to_owned());
        self
    }

    /// The injector, to ask how many faults fired.
    pub fn faults(&self) -> &FaultInjector {
        &self.faults
    }
}

/// Forwards one call after asking the injector.
macro_rules! forward {
    ($self:ident, $op:literal, $write:expr, $call:expr) => {
        Box::pin(async move {
            $self.faults.check($op, $write)?;
            $call.await
        })
    };
}

impl StateStore for FaultyStateStore {
    fn stats(&self) -> StateStats {
        self.inner.stats()
    }

    fn location(&self) -> String {
        self.inner.location()
    }

    /// Not fault-injected: workflow writes are single conditional puts whose
    /// failures the workflow tests provoke with real races instead.
    fn workflows(&self) -> &dyn crate::state::WorkflowStore {
        self.inner.workflows()
    }

    fn tasks(&self) -> &dyn crate::state::TaskStore {
        self.inner.tasks()
    }

    fn workspaces(&self) -> &dyn crate::state::WorkspaceStore {
        self.inner.workspaces()
    }

    fn layers(&self) -> &dyn crate::state::LayerStore {
        self.inner.layers()
    }

    fn config_packages(&self) -> &dyn crate::state::ConfigPackageStore {
        self.inner.config_packages()
    }

    fn skills(&self) -> &dyn crate::state::SkillSourceStore {
        self.inner.skills()
    }

    fn jobs(&self) -> &dyn crate::state::JobStore {
        self.inner.jobs()
    }

    fn seen_heads(&self) -> &dyn crate::state::SeenHeadStore {
        self.inner.seen_heads()
    }

    fn previews(&self) -> &dyn crate::state::PreviewStore {
        self.inner.previews()
    }

    fn kept_requests(&self) -> &dyn crate::state::KeptRequestStore {
        self.inner.kept_requests()
    }
}

impl RegistrationStore for FaultyStateStore {
    fn get_registration<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<RepoRegistration>>> {
        forward!(
            self,
            "get_registration",
            false,
            self.inner.get_registration(repository)
        )
    }

    fn put_registration<'a>(
        &'a self,
        registration: &'a RepoRegistration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        forward!(
            self,
            "put_registration",
            true,
            self.inner.put_registration(registration)
        )
    }

    fn record_last_sync<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: Option<&'a str>,
        last_sync: &'a LastSync,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        forward!(
            self,
            "record_last_sync",
            true,
            self.inner
                .record_last_sync(repository, manifest_path, last_sync)
        )
    }

    fn list_registrations(&self) -> BoxFuture<'_, StoreResult<Vec<RepoRegistration>>> {
        forward!(
            self,
            "list_registrations",
            false,
            self.inner.list_registrations()
        )
    }

    fn list_repository_registrations<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<RepoRegistration>>> {
        forward!(
            self,
            "list_repository_registrations",
            false,
            self.inner.list_repository_registrations(repository)
        )
    }

    fn delete_registration<'a>(
        &'a self,
        repository: &'a str,
        manifest_path: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        forward!(
            self,
            "delete_registration",
            true,
            self.inner.delete_registration(repository, manifest_path)
        )
    }

    fn get_synced_commit<'a>(
        &'a self,
        repository: &'a str,
        ref_name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SyncedCommit>>> {
        forward!(
            self,
            "get_synced_commit",
            false,
            self.inner.get_synced_commit(repository, ref_name)
        )
    }
}

impl InstallationStore for FaultyStateStore {
    fn get_installation(
        &self,
        installation_id: u64,
    ) -> BoxFuture<'_, StoreResult<Option<Installation>>> {
        forward!(
            self,
            "get_installation",
            false,
            self.inner.get_installation(installation_id)
        )
    }

    fn put_installation<'a>(
        &'a self,
        installation: &'a Installation,
    ) -> BoxFuture<'a, StoreResult<()>> {
        forward!(
            self,
            "put_installation",
            true,
            self.inner.put_installation(installation)
        )
    }

    fn delete_installation(&self, installation_id: u64) -> BoxFuture<'_, StoreResult<()>> {
        forward!(
            self,
            "delete_installation",
            true,
            self.inner.delete_installation(installation_id)
        )
    }
}

impl AgentStore for FaultyStateStore {
    fn get_agent<'a>(&'a self, key: &'a AgentKey) -> BoxFuture<'a, StoreResult<Option<Agent>>> {
        forward!(self, "get_agent", false, self.inner.get_agent(key))
    }

    fn list_agents<'a>(&'a self, repository: &'a str) -> BoxFuture<'a, StoreResult<Vec<Agent>>> {
        Box::pin(async move {
            self.faults.check("list_agents", false)?;
            let mut agents = self.inner.list_agents(repository).await?;
            if let Some(hidden) = &self.hidden_agent {
                agents.retain(|agent| &agent.manifest_path != hidden);
            }
            Ok(agents)
        })
    }

    fn find_agents<'a>(
        &'a self,
        project_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<Agent>>> {
        forward!(
            self,
            "find_agents",
            false,
            self.inner.find_agents(project_id, name)
        )
    }

    fn apply(&self, changes: ChangeSet) -> BoxFuture<'_, StoreResult<ApplyReport>> {
        forward!(self, "apply", true, self.inner.apply(changes))
    }

    fn list_audit_events<'a>(
        &'a self,
        key: &'a AgentKey,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditEvent>>> {
        forward!(
            self,
            "list_audit_events",
            false,
            self.inner.list_audit_events(key)
        )
    }
}

impl DeliveryStore for FaultyStateStore {
    fn record_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        now: UnixSeconds,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<DeliveryOutcome>> {
        forward!(
            self,
            "record_delivery",
            true,
            self.inner.record_delivery(delivery_id, now, ttl)
        )
    }

    fn forget_delivery<'a>(&'a self, delivery_id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        forward!(
            self,
            "forget_delivery",
            true,
            self.inner.forget_delivery(delivery_id)
        )
    }

    fn mark_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        state: crate::state::DeliveryState,
        now: UnixSeconds,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        forward!(
            self,
            "mark_delivery",
            true,
            self.inner.mark_delivery(delivery_id, state, now)
        )
    }
}

impl EnvSpecStore for FaultyStateStore {
    fn put_env_spec<'a>(&'a self, spec: &'a EnvSpec) -> BoxFuture<'a, StoreResult<()>> {
        forward!(self, "put_env_spec", true, self.inner.put_env_spec(spec))
    }

    fn get_env_spec<'a>(&'a self, name: &'a str) -> BoxFuture<'a, StoreResult<Option<EnvSpec>>> {
        forward!(self, "get_env_spec", false, self.inner.get_env_spec(name))
    }

    fn list_env_specs(&self) -> BoxFuture<'_, StoreResult<Vec<EnvSpec>>> {
        forward!(self, "list_env_specs", false, self.inner.list_env_specs())
    }
}

impl TriggerBindingStore for FaultyStateStore {
    fn get_trigger_binding<'a>(
        &'a self,
        trigger_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TriggerBinding>>> {
        forward!(
            self,
            "get_trigger_binding",
            false,
            self.inner.get_trigger_binding(trigger_id)
        )
    }

    fn list_trigger_bindings(&self) -> BoxFuture<'_, StoreResult<Vec<TriggerBinding>>> {
        forward!(self, "list_trigger_bindings", false, async {
            let bindings = self.inner.list_trigger_bindings().await?;
            Ok(if self.hide_trigger_bindings {
                Vec::new()
            } else {
                bindings
            })
        })
    }

    fn list_repository_trigger_bindings<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TriggerBinding>>> {
        forward!(self, "list_repository_trigger_bindings", false, async {
            let bindings = self
                .inner
                .list_repository_trigger_bindings(repository)
                .await?;
            Ok(if self.hide_trigger_bindings {
                Vec::new()
            } else {
                bindings
            })
        })
    }

    fn list_event_trigger_bindings<'a>(
        &'a self,
        repository: &'a str,
        event: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<TriggerBinding>>> {
        forward!(self, "list_event_trigger_bindings", false, async {
            let bindings = self
                .inner
                .list_event_trigger_bindings(repository, event)
                .await?;
            Ok(if self.hide_trigger_bindings {
                Vec::new()
            } else {
                bindings
            })
        })
    }
}

impl DispatchStore for FaultyStateStore {
    fn record_dispatch<'a>(
        &'a self,
        dispatch: &'a Dispatch,
    ) -> BoxFuture<'a, StoreResult<DispatchOutcome>> {
        forward!(
            self,
            "record_dispatch",
            true,
            self.inner.record_dispatch(dispatch)
        )
    }

    fn get_dispatch<'a>(
        &'a self,
        idempotency_key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<Dispatch>>> {
        forward!(
            self,
            "get_dispatch",
            false,
            self.inner.get_dispatch(idempotency_key)
        )
    }

    fn list_dispatches(&self) -> BoxFuture<'_, StoreResult<Vec<Dispatch>>> {
        forward!(self, "list_dispatches", false, self.inner.list_dispatches())
    }
}

/// The local AWS endpoint, or `None` when the AWS tests must be skipped.
/// Panics (fails the test) when `ASTROLIFT_REQUIRE_AWS=1` and no endpoint is set.
pub fn aws_endpoint(test: &str) -> Option<String> {
    match std::env::var("AWS_ENDPOINT_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("ASTROLIFT_REQUIRE_AWS").as_deref() == Ok("1") => panic!(
            "{test}: ASTROLIFT_REQUIRE_AWS=1 but AWS_ENDPOINT_URL is not set; start moto with \
             `eval \"$(scripts/moto.sh start)\"`"
        ),
        _ => {
            eprintln!(
                "note: skipping {test}: AWS_ENDPOINT_URL is not set (start moto with scripts/moto.sh)"
            );
            None
        }
    }
}

/// A name unique to this process and call, valid as an S3 bucket and a DynamoDB table.
pub fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The env spec `triage-prod` of `project_id`, the one the examples'
/// triage trigger names: what a test defines before it registers
/// `examples/monorepo` (or a fixture copied from it) under that project.
pub fn triage_env_spec(project_id: &str) -> EnvSpec {
    EnvSpec {
        name: "triage-prod".into(),
        project_id: Some(project_id.into()),
        agent_type: Some("claude".into()),
        runtime: Some("claude-code".into()),
        // No config manifest: a dispatch with a spec that names one needs that config
        // packaged first (docs/reference.md §12), which tests of other things do not set up.
        config_repo: String::new(),
        manifest_path: String::new(),
        updated_at: 1,
        previews: false,
    }
}

/// Registers the skill sources the examples' catalogue and organization skills resolve
/// through (`tests/fake-github/skill-repos/`, served by the fake GitHub's
/// `add_example_skill_repos`), for `project_id`: the aliases `steadymd` (the monorepo's)
/// and `platform` (the single agent's), both `example/runbooks`, and the catalogue
/// `example/catalogue` at `main`.
pub async fn register_example_skill_sources(
    state: &dyn StateStore,
    project_id: &str,
) -> StoreResult<()> {
    let skills = state.skills();
    for alias in ["steadymd", "platform"] {
        let repo = SkillRepo {
            project_id: project_id.into(),
            alias: alias.into(),
            repository: "example/runbooks".into(),
            updated_at: 1,
        };
        skills.put_skill_repo(&repo).await?;
    }
    let catalogue = Catalogue {
        repository: "example/catalogue".into(),
        registered_ref: "main".into(),
        updated_at: 1,
    };
    skills.put_catalogue(&catalogue).await
}
