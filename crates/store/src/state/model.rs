//! The entities of docs/reference.md §7, as plain records shared by every state store.

use serde::{Deserialize, Serialize};

/// Seconds since the Unix epoch.
pub type UnixSeconds = i64;

/// A registration (`astrolift register-repo`), keyed by (repository, manifest path): it
/// covers one manifest of a repository, or every manifest (`manifest_path` is `None`).
/// A repository may hold several registrations (different manifests, projects or refs);
/// a manifest is covered by at most one, which the stores enforce on every write
/// ([`StoreError::Overlap`](crate::StoreError::Overlap)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoRegistration {
    /// `owner/name`.
    pub repository: String,
    /// The GitHub App installation that can read it; `None` for local use.
    pub installation_id: Option<u64>,
    /// The project its agents belong to.
    pub project_id: String,
    /// The ref whose pushes register agents, e.g. `main`.
    pub registered_ref: String,
    /// The one manifest it covers (repository-relative path of an `astrolift.toml` or
    /// `astrolift.agents.toml`); `None` covers every discovered manifest.
    pub manifest_path: Option<String>,
    /// When the registration was last written.
    pub updated_at: UnixSeconds,
    /// What the last sync of the registered ref through the App learnt about it, for
    /// re-syncing it when a skill source it names moves (docs/reference.md §5.1, "Dependents
    /// follow"). Written only by syncs ([`super::RegistrationStore::record_last_sync`]); absent from
    /// registrations no sync has applied since, and cleared when the registration is
    /// written again (`register-repo`) until its next sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<LastSync>,
    /// Whether pull requests get previews of the agents it covers (`register-repo
    /// --previews`, docs/reference.md §7). Written whole with the registration, so
    /// registering again without the flag turns previews off; `false` on records written
    /// before previews existed.
    #[serde(default)]
    pub previews: bool,
}

/// What a sync of a registration's ref records on it ([`RepoRegistration::last_sync`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastSync {
    /// GitHub's repository id: with the ref, the FIFO lane a dependent re-sync joins, so it
    /// is ordered with the ref's pushes.
    pub repository_id: u64,
    /// The skill repositories (at the ref each reference names) that the agents it covers
    /// named at that sync, sorted, without duplicates, at most [`LastSync::MAX_SOURCES`].
    #[serde(default)]
    pub skill_sources: Vec<SkillSource>,
}

impl LastSync {
    /// At most this many skill sources are recorded (a sync fetches at most 32 skill
    /// repositories, `Limits::skill_repositories`, so a larger list names sources no sync read).
    pub const MAX_SOURCES: usize = 64;
}

/// A skill repository at a ref: an organization reference's resolved repository and the
/// ref it names (`alias/path@main` → (`steadymd/runbooks`, `main`)), or the catalogue's
/// repository and registered ref.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SkillSource {
    /// `owner/name`.
    pub repository: String,
    /// The branch, tag or sha the reference names.
    pub git_ref: String,
}

impl SkillSource {
    /// Whether this is `repository` at `git_ref` (GitHub's repository names are
    /// case-insensitive; refs are not).
    pub fn is(&self, repository: &str, git_ref: &str) -> bool {
        self.repository.eq_ignore_ascii_case(repository) && self.git_ref == git_ref
    }
}

impl RepoRegistration {
    /// Whether this registration covers the manifest at `manifest_path`.
    pub fn covers(&self, manifest_path: &str) -> bool {
        self.manifest_path
            .as_deref()
            .is_none_or(|covered| covered == manifest_path)
    }

    /// Whether `self` and `other` share a key (a write of one replaces the other).
    pub fn same_key(&self, other: &RepoRegistration) -> bool {
        self.repository == other.repository && self.manifest_path == other.manifest_path
    }

    /// Whether some manifest would be covered by both: two registrations of one repository
    /// with different keys where one covers every manifest.
    pub fn overlaps(&self, other: &RepoRegistration) -> bool {
        self.repository == other.repository
            && !self.same_key(other)
            && (self.manifest_path.is_none() || other.manifest_path.is_none())
    }

    /// What it covers, for messages: `every manifest of o/r` or `o/r:path`.
    pub fn scope(&self) -> String {
        match &self.manifest_path {
            Some(path) => format!("{}:{path}", self.repository),
            None => format!("every manifest of {}", self.repository),
        }
    }
}

/// The registration among `registrations` that covers `manifest_path` (at most one does:
/// the stores refuse overlapping registrations).
pub fn covering_registration<'a>(
    registrations: &'a [RepoRegistration],
    manifest_path: &str,
) -> Option<&'a RepoRegistration> {
    registrations.iter().find(|r| r.covers(manifest_path))
}

/// Refuses `new` when it overlaps one of `existing` (the repository's registrations):
/// the one check both stores make, inside their write's condition.
pub(crate) fn refuse_overlap(
    existing: &[RepoRegistration],
    new: &RepoRegistration,
) -> crate::StoreResult<()> {
    let Some(other) = existing.iter().find(|r| r.overlaps(new)) else {
        return Ok(());
    };
    let (what, hint) = match new.manifest_path {
        Some(_) => (
            format!(
                "{} is already covered by the registration of {} (project {}, ref {})",
                new.scope(),
                other.scope(),
                other.project_id,
                other.registered_ref
            ),
            "remove that registration first (`astrolift unregister-repo`)",
        ),
        None => (
            format!(
                "{} overlaps the registration of {} (project {}, ref {})",
                new.scope(),
                other.scope(),
                other.project_id,
                other.registered_ref
            ),
            "remove the per-manifest registrations first (`astrolift unregister-repo --manifest-path`), or register each manifest on its own",
        ),
    };
    Err(crate::StoreError::Overlap(format!(
        "{what}; a manifest is covered by at most one registration: {hint}"
    )))
}

/// The commit whose state was last applied for one repository and ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncedCommit {
    /// `owner/name`.
    pub repository: String,
    /// The ref, e.g. `main`.
    pub ref_name: String,
    /// The commit sha.
    pub commit: String,
    /// The commit's committer time, for ordering when ancestry is unknown.
    pub commit_time: UnixSeconds,
    /// When it was applied.
    pub synced_at: UnixSeconds,
}

/// A GitHub App installation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installation {
    /// GitHub's installation id.
    pub installation_id: u64,
    /// The account (user or organization) login.
    pub account: String,
    /// `owner/name` of the repositories it covers, when GitHub listed them.
    pub repositories: Vec<String>,
    /// Whether the installation is suspended.
    pub suspended: bool,
    /// When it was last written.
    pub updated_at: UnixSeconds,
}

/// Lifecycle of a registered agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Registered and runnable.
    Active,
    /// `enabled = false` in the federation file.
    Disabled,
    /// Its manifest was removed; kept until an explicit teardown.
    Orphaned,
    /// Torn down. The record stays as a tombstone so versions and audit history continue.
    TornDown,
}

impl AgentStatus {
    /// The wire name (`active`, `disabled`, `orphaned`, `torn_down`).
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Active => "active",
            AgentStatus::Disabled => "disabled",
            AgentStatus::Orphaned => "orphaned",
            AgentStatus::TornDown => "torn_down",
        }
    }
}

/// Identity of an agent: the repository and its manifest path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AgentKey {
    /// `owner/name`.
    pub repository: String,
    /// Path of its `astrolift.toml` in the repository.
    pub manifest_path: String,
}

impl AgentKey {
    /// A key.
    pub fn new(repository: impl Into<String>, manifest_path: impl Into<String>) -> Self {
        AgentKey {
            repository: repository.into(),
            manifest_path: manifest_path.into(),
        }
    }
}

impl std::fmt::Display for AgentKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.repository, self.manifest_path)
    }
}

/// A registered agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    /// `owner/name`.
    pub repository: String,
    /// Path of its `astrolift.toml`.
    pub manifest_path: String,
    /// The project of the repository's registration (copied for look-ups by name).
    pub project_id: String,
    /// The agent's name.
    pub name: String,
    /// Its alias from the federation file.
    pub alias: Option<String>,
    /// Lifecycle status.
    pub status: AgentStatus,
    /// sha256 of the agent package snapshot: the agent's version as content.
    pub snapshot_hash: String,
    /// sha256 of the package archive.
    pub payload_digest: String,
    /// The commit it was registered from.
    pub commit: String,
    /// Optimistic-locking counter: 1 on creation, +1 on every write.
    pub version: u64,
    /// When it was last written.
    pub updated_at: UnixSeconds,
    /// Digest of the trigger bindings written in the same change set as this
    /// record. The plan trusts it over a listing of the bindings, which is a
    /// separate read and may see a concurrent change set half-applied (a
    /// DynamoDB Query is read-committed per item, not per transaction).
    /// `None` on records written before bindings were tracked, or by a write
    /// that does not know them; the plan then compares the listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bindings_digest: Option<String>,
    /// The layer key of its package's dependency files (docs/reference.md "Dependency
    /// layers"): its layers are the [`LayerBuild`](super::LayerBuild) of that key. `None`
    /// for a package that needs no layer, and on records written before layers existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_key: Option<String>,
    /// What its archive (`payload_digest`) was built from and is: a sync of the same slice
    /// takes the archive from here and builds nothing, without asking the blob store
    /// (docs/reference.md §6). `None` for an inline package, and on records written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_build: Option<PackageBuild>,
}

/// An agent's archive as built: the slice fingerprint it was built from, and what the
/// archive turned out to be (its digest is the agent's `payload_digest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageBuild {
    /// The slice fingerprint (hex).
    pub fingerprint: String,
    /// `sha256:<hex>` of the uncompressed tar stream.
    pub content_digest: String,
    /// Archive bytes.
    pub size: u64,
    /// Files in the archive.
    pub files: u64,
    /// The files' bytes, uncompressed.
    pub uncompressed_size: u64,
}

impl Agent {
    /// Its key.
    pub fn key(&self) -> AgentKey {
        AgentKey::new(&self.repository, &self.manifest_path)
    }
}

/// What a registration change did; one audit event per change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    /// First registration.
    Added,
    /// A new snapshot or alias.
    Changed,
    /// Marked disabled.
    Disabled,
    /// Its manifest was removed.
    Orphaned,
    /// An orphaned, disabled or torn-down agent became active again.
    Reactivated,
    /// Explicit teardown.
    TornDown,
    /// A person with write permission accepted a pull request's critical drift of this
    /// manifest at one head sha (see [`super::workspaces`]).
    DriftAccepted,
    /// A pull request's preview of this manifest was torn down (see [`super::previews`]).
    /// Its wire name is `preview-closed`, as docs/reference.md §7 names the event, rather
    /// than the snake case of the other actions: the name is a contract of the audit
    /// history's JSON.
    #[serde(rename = "preview-closed")]
    PreviewClosed,
}

/// An append-only record of one registration change. Its sequence number is the agent
/// `version` the change produced, so a change is recorded exactly once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// `owner/name`.
    pub repository: String,
    /// The agent's manifest path.
    pub manifest_path: String,
    /// The agent version this change produced.
    pub version: u64,
    /// What happened.
    pub action: AuditAction,
    /// The commit that caused it (empty for a manual teardown).
    pub commit: String,
    /// The snapshot after the change.
    pub snapshot_hash: String,
    /// The snapshot before the change, if any.
    pub previous_snapshot_hash: Option<String>,
    /// Free text: who or what, drift summary.
    pub detail: String,
    /// When.
    pub at: UnixSeconds,
}

/// Whether a webhook delivery id was seen before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// First time, or a redelivery of one whose job failed or was lost: process it.
    New,
    /// Already recorded, queued or running within its lease, or succeeded, and not
    /// expired: acknowledge and skip.
    Duplicate,
}

/// Where the job of a recorded delivery is (`DeliveryStore::mark_delivery`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryState {
    /// Recorded and its job queued.
    Queued,
    /// Its job is running.
    Running,
    /// Its job ran to the end.
    Succeeded,
    /// Its job failed: a redelivery queues it again.
    Failed,
}

impl DeliveryState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Queued => "queued",
            DeliveryState::Running => "running",
            DeliveryState::Succeeded => "succeeded",
            DeliveryState::Failed => "failed",
        }
    }
}

/// A named environment spec (`astrolift env-spec upsert`). It belongs to
/// one project: only agents registered under that project may name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvSpec {
    /// Its name.
    pub name: String,
    /// The project it belongs to. `None` only on specs written before env
    /// specs had projects: those belong to no project and no agent can use
    /// them until an operator upserts them again with `--project-id`. The `None` of this
    /// field and the next two is a compatibility shim: when it can go is in
    /// docs/operations.md, "Compatibility shims".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The agent type the runtime starts, e.g. `claude`. `None` only on specs written
    /// before env specs had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The runtime, e.g. `claude-code` or `claude-code-vnc` (a `-vnc` runtime gets the VNC
    /// variables). `None` only on specs written before env specs had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// `owner/name` of the config repository; empty when the spec names no config manifest.
    #[serde(default)]
    pub config_repo: String,
    /// Path of the config manifest in it; empty when the spec names no config manifest.
    #[serde(default)]
    pub manifest_path: String,
    /// When it was last written.
    pub updated_at: UnixSeconds,
    /// Whether a preview's dispatch may use it (`env-spec upsert --previews`,
    /// docs/reference.md §7): a preview runs unmerged code, so an env spec holding
    /// production secrets leaves it off. Upserting again without the flag clears it;
    /// `false` on records written before previews existed.
    #[serde(default)]
    pub previews: bool,
}

impl EnvSpec {
    /// The config manifest it selects, `(repository, path)`, if any.
    pub fn config_manifest(&self) -> Option<(&str, &str)> {
        (!self.config_repo.is_empty() && !self.manifest_path.is_empty())
            .then_some((self.config_repo.as_str(), self.manifest_path.as_str()))
    }

    /// Whether its runtime is a VNC runtime (`*-vnc`).
    pub fn is_vnc(&self) -> bool {
        self.runtime.as_deref().is_some_and(|r| r.ends_with("-vnc"))
    }

    /// Whether an agent of `project_id` may use this spec.
    pub fn usable_by(&self, project_id: &str) -> Result<(), EnvSpecRefusal> {
        match self.project_id.as_deref() {
            Some(owner) if owner == project_id => Ok(()),
            Some(_) => Err(EnvSpecRefusal::OtherProject),
            None => Err(EnvSpecRefusal::NoProject),
        }
    }
}

/// Why a project may not use an env spec it names. The three are told apart
/// for logs and operators; what a repository sees (the check run, an HTTP
/// answer) is the same for all three, so that no tenant learns which names
/// another project uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EnvSpecRefusal {
    #[error("no env spec has that name")]
    Missing,
    #[error("the env spec belongs to another project")]
    OtherProject,
    #[error("the env spec belongs to no project (written before env specs had projects)")]
    NoProject,
}

/// A registered trigger binding (from an agent's `[[triggers]]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerBinding {
    /// Stable id, the `{trigger_id}` of `POST /triggers/{trigger_id}`.
    pub trigger_id: String,
    /// The agent's repository.
    pub repository: String,
    /// The agent's manifest path.
    pub manifest_path: String,
    /// The agent's name.
    pub agent_name: String,
    /// The trigger's name, unique within the agent.
    pub name: String,
    /// `generic` or `github`.
    pub source: String,
    /// The trigger table as JSON (verify, filter, payload, events, env_spec).
    pub definition: serde_json::Value,
    /// The agent snapshot it belongs to.
    pub snapshot_hash: String,
}

impl TriggerBinding {
    /// The URL path that `serve` and the trigger function answer for it.
    pub fn url_path(&self) -> String {
        format!("/triggers/{}", self.trigger_id)
    }

    /// The GitHub event names (`issues` for `issues.opened`) under which the stores index a
    /// `github`-sourced binding, sorted and without repeats; empty for any other source.
    /// Entries that are not a GitHub event name (lowercase letters, digits and `_`, as
    /// validation requires) are not indexed: such a binding cannot match a delivery.
    pub fn event_names(&self) -> Vec<String> {
        if self.source != "github" {
            return Vec::new();
        }
        let mut names: Vec<String> = self
            .definition
            .get("events")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .map(|event| event.split_once('.').map_or(event, |(name, _)| name))
            .filter(|name| is_event_name(name))
            .map(str::to_owned)
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Whether it is indexed under the GitHub event `event` ([`Self::event_names`]).
    pub fn lists_event(&self, event: &str) -> bool {
        self.event_names().iter().any(|name| name == event)
    }
}

/// Whether `name` can be a GitHub event name (`issue_comment`): the only form the stores put
/// into a key, so that a key never needs escaping.
pub fn is_event_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_EVENT_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The longest event name indexed (GitHub's longest is under 40 bytes).
pub const MAX_EVENT_NAME_BYTES: usize = 64;

/// Status of a dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DispatchStatus {
    /// Recorded, not yet handed to the runtime.
    Pending,
    /// Handed to the runtime.
    Dispatched,
    /// Could not be handed over.
    Failed,
}

/// One run requested by a trigger, recorded idempotently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dispatch {
    /// Our id for it.
    pub id: String,
    /// The key that makes a redelivered request the same dispatch.
    pub idempotency_key: String,
    /// The binding that fired.
    pub trigger_id: String,
    /// The agent's repository.
    pub repository: String,
    /// The agent's manifest path.
    pub manifest_path: String,
    /// The snapshot that runs.
    pub snapshot_hash: String,
    /// The mapped payload as JSON text; `None` for the empty payload.
    pub payload: Option<String>,
    /// When it was recorded.
    pub created_at: UnixSeconds,
    /// Its status.
    pub status: DispatchStatus,
    /// Who caused it: the GitHub login of a GitHub event's sender; `None`
    /// for generic triggers (the sender is whoever holds the secret) and
    /// manual dispatches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    /// Whether the cause passed the trust policy: `true` for a verified
    /// generic trigger, a manual dispatch, or a GitHub event from an owner,
    /// member or collaborator that is not a fork pull request; `false` for a
    /// GitHub event let through by `allow_untrusted`, and for records
    /// written before the field existed. The default of this field, `task_id`
    /// and `message` is a compatibility shim: when it can go is in
    /// docs/operations.md, "Compatibility shims".
    #[serde(default)]
    pub trusted: bool,
    /// The task's GUID (`ASTROLIFT_TASK_ID`); empty on records written
    /// before dispatch messages had one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    /// The env spec it runs with, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_spec: Option<String>,
    /// The dispatch message (`astrolift.dispatch/v1`) as JSON text, without
    /// its `payload` (kept once, in `payload`, so a record holds it once).
    /// `None` on records written before messages were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Where its terminal result is reported back (a GitHub-sourced trigger's `report`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<ReportTarget>,
}

/// The issue or pull request a GitHub-sourced dispatch came from, to report its terminal
/// result to: a comment on it, or a check run on the pull request's head commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportTarget {
    /// `comment` or `check`.
    pub kind: String,
    /// `owner/name`.
    pub repository: String,
    /// The App installation the event came through.
    pub installation_id: u64,
    /// The issue or pull request number.
    pub number: u64,
    /// The pull request's head commit (what a check run is created on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_sha: Option<String>,
}

/// Whether `record_dispatch` stored a new dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DispatchOutcome {
    /// Stored.
    New,
    /// A dispatch with that idempotency key exists; its id.
    Existing(String),
}
