//! Change sets: the one way agent state is written, and how a big one is split.

use std::collections::HashSet;
use std::ops::Range;

use super::model::{Agent, AuditAction, AuditEvent, SyncedCommit, TriggerBinding, UnixSeconds};
use crate::{StoreError, StoreResult};

/// DynamoDB's limit of items per `TransactWriteItems`.
pub const TRANSACTION_MAX_ITEMS: usize = 100;
/// DynamoDB's limit of bytes per `TransactWriteItems`.
pub const TRANSACTION_MAX_BYTES: usize = 4 * 1024 * 1024;
/// DynamoDB's limit of bytes per item.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
/// Our estimate of per-item overhead beyond the record's JSON (keys, index keys, names).
const ITEM_OVERHEAD_BYTES: usize = 256;
/// Items a binding write takes: the binding by id, and its copy keyed by repository (on
/// DynamoDB; SQLite writes one row with an indexed repository column).
const ITEMS_PER_BINDING: usize = 2;

/// A batch of agent changes of one repository, plus the synced commit they come from.
///
/// # Conditions
/// - each agent upsert requires the stored `version` to equal `expected_version`
///   (`None`: the agent must not exist);
/// - each audit event requires that no event with its sequence number exists;
/// - the synced-commit update requires the stored commit to be `expected_previous`
///   (`None`: nothing stored for that ref).
///
/// # Atomicity rule
/// SQLite applies the whole set in one transaction. DynamoDB takes at most 100 items and
/// 4 MB per `TransactWriteItems`, so a bigger set is split, in order, into chunks of
/// *whole agent changes*: an agent, its audit event and its trigger-binding writes are never
/// separated. The synced-commit update goes into the last chunk. Each chunk is atomic. The
/// chunks before the last are independent and run side by side (a few at once), and the last
/// runs only once every one of them has committed. A failing chunk fails the apply: the
/// chunks already started finish, and the last never starts. So after
/// any failure every agent is entirely at its old or entirely at its new version, and the
/// synced commit moves only once every agent change is stored: a re-run plans against what
/// is stored and converges.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeSet {
    /// `owner/name` of every agent in the set.
    pub repository: String,
    /// Agent upserts with their audit events.
    pub agents: Vec<AgentChange>,
    /// The commit to record as synced.
    pub synced: Option<SyncedCommitUpdate>,
}

/// One agent's upsert, its audit event and its trigger-binding writes.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentChange {
    /// The new record; `version` must be `expected_version + 1` (1 for a new agent).
    pub agent: Agent,
    /// The version read before planning; `None` when the agent must not exist yet.
    pub expected_version: Option<u64>,
    /// The audit event; its `version` must equal `agent.version`.
    pub audit: AuditEvent,
    /// Trigger bindings to create or replace (they must belong to this agent).
    pub put_bindings: Vec<TriggerBinding>,
    /// Trigger ids to delete.
    pub delete_bindings: Vec<String>,
}

/// Moves a ref's synced commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncedCommitUpdate {
    /// The new value.
    pub commit: SyncedCommit,
    /// The commit sha read before planning; `None` when none was stored.
    pub expected_previous: Option<String>,
}

/// What `apply` wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Agent records written.
    pub agents_written: usize,
    /// Items written in all (agents, audit events, bindings, synced commit).
    pub items_written: u64,
    /// Atomic batches committed.
    pub transactions: u64,
}

impl AgentChange {
    /// A change of `agent` from `expected_version`, with its audit event. Sets
    /// `agent.version` to the next version. Add bindings with the public fields.
    pub fn new(
        mut agent: Agent,
        expected_version: Option<u64>,
        action: AuditAction,
        commit: &str,
        detail: &str,
        at: UnixSeconds,
    ) -> Self {
        agent.version = expected_version.map_or(1, |v| v.saturating_add(1));
        let audit = AuditEvent {
            repository: agent.repository.clone(),
            manifest_path: agent.manifest_path.clone(),
            version: agent.version,
            action,
            commit: commit.to_owned(),
            snapshot_hash: agent.snapshot_hash.clone(),
            previous_snapshot_hash: None,
            detail: detail.to_owned(),
            at,
        };
        AgentChange {
            agent,
            expected_version,
            audit,
            put_bindings: Vec::new(),
            delete_bindings: Vec::new(),
        }
    }

    /// Items this change writes, before the per-event copies of `github` bindings that
    /// DynamoDB adds (see [`Extra`]).
    pub fn item_count(&self) -> usize {
        2 + ITEMS_PER_BINDING * (self.put_bindings.len() + self.delete_bindings.len())
    }

    fn validate(&self, repository: &str) -> StoreResult<()> {
        let agent = &self.agent;
        let key = agent.key();
        let invalid =
            |why: String| Err(StoreError::Invalid(format!("change of agent {key}: {why}")));
        if agent.repository != repository {
            return invalid(format!("belongs to another repository than {repository}"));
        }
        if agent.manifest_path.is_empty() || agent.name.is_empty() || agent.project_id.is_empty() {
            return invalid("empty manifest path, name or project".into());
        }
        if Some(agent.version) != self.expected_version.map_or(Some(1), |v| v.checked_add(1)) {
            return invalid(format!(
                "version {} does not follow {:?}",
                agent.version, self.expected_version
            ));
        }
        let audit = &self.audit;
        if (
            audit.repository.as_str(),
            audit.manifest_path.as_str(),
            audit.version,
        ) != (
            agent.repository.as_str(),
            agent.manifest_path.as_str(),
            agent.version,
        ) {
            return invalid("audit event does not match the agent and its new version".into());
        }
        if let Some(binding) = self.put_bindings.iter().find(|b| {
            b.repository != agent.repository
                || b.manifest_path != agent.manifest_path
                || b.trigger_id.is_empty()
        }) {
            return invalid(format!(
                "trigger binding {:?} belongs to another agent",
                binding.trigger_id
            ));
        }
        if self.item_count() > TRANSACTION_MAX_ITEMS - 1 {
            return invalid(format!(
                "{} items exceed one transaction",
                self.item_count()
            ));
        }
        let largest = [json_len(agent), json_len(audit)]
            .into_iter()
            .chain(self.put_bindings.iter().map(json_len))
            .max()
            .unwrap_or(0);
        if largest + ITEM_OVERHEAD_BYTES > MAX_ITEM_BYTES {
            return invalid(format!(
                "a record of {largest} bytes exceeds the {MAX_ITEM_BYTES}-byte item limit"
            ));
        }
        Ok(())
    }

    /// A generous estimate of the bytes this change adds to a transaction.
    fn estimated_bytes(&self) -> usize {
        json_len(&self.agent)
            + json_len(&self.audit)
            + ITEMS_PER_BINDING
                * (self.put_bindings.iter().map(json_len).sum::<usize>()
                    + self.delete_bindings.iter().map(String::len).sum::<usize>())
            + self.item_count() * ITEM_OVERHEAD_BYTES
    }
}

/// Length of a record's JSON form (0 if it cannot be serialized, which our records can).
pub(crate) fn json_len<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(0, |v| v.len())
}

/// Items and record bytes a backend writes for one agent change beyond what the change
/// lists (DynamoDB: a copy of each `github` binding per event it lists, and the deletion
/// of copies under events a binding no longer lists).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Extra {
    /// Items.
    pub items: usize,
    /// Bytes of the records they hold.
    pub bytes: usize,
}

/// One atomic batch of a split change set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Indexes into `ChangeSet::agents`.
    pub agents: Range<usize>,
    /// Whether the synced-commit update belongs to this chunk.
    pub synced: bool,
}

impl ChangeSet {
    /// An empty change set for `repository`.
    pub fn new(repository: impl Into<String>) -> Self {
        ChangeSet {
            repository: repository.into(),
            agents: Vec::new(),
            synced: None,
        }
    }

    /// Whether applying it would write nothing.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty() && self.synced.is_none()
    }

    /// Items it writes.
    pub fn item_count(&self) -> usize {
        self.agents
            .iter()
            .map(AgentChange::item_count)
            .sum::<usize>()
            + usize::from(self.synced.is_some())
    }

    /// Checks the set is coherent before anything is written.
    pub(crate) fn validate(&self) -> StoreResult<()> {
        let mut agents = HashSet::new();
        let mut triggers = HashSet::new();
        for change in &self.agents {
            change.validate(&self.repository)?;
            if !agents.insert(change.agent.manifest_path.as_str()) {
                return Err(StoreError::Invalid(format!(
                    "agent {} appears twice in one change set",
                    change.agent.key()
                )));
            }
            // DynamoDB refuses two writes of one item in a transaction; SQLite would silently
            // let the later win. Either way it is a planning mistake.
            let trigger_ids = change.put_bindings.iter().map(|b| b.trigger_id.as_str());
            let deleted = change.delete_bindings.iter().map(String::as_str);
            if let Some(id) = trigger_ids.chain(deleted).find(|id| !triggers.insert(*id)) {
                return Err(StoreError::Invalid(format!(
                    "trigger binding {id:?} is written twice in one change set"
                )));
            }
        }
        if let Some(update) = &self.synced
            && (update.commit.repository != self.repository || update.commit.ref_name.is_empty())
        {
            return Err(StoreError::Invalid(format!(
                "synced commit of {}:{} does not belong to {}",
                update.commit.repository, update.commit.ref_name, self.repository
            )));
        }
        Ok(())
    }

    /// Splits the set into atomic chunks under `max_items` and `max_bytes` (see the
    /// atomicity rule above). `extra(index)` is what the backend writes for the change at
    /// `index` beyond [`AgentChange::item_count`] (DynamoDB's per-event binding copies).
    pub(crate) fn chunks(
        &self,
        max_items: usize,
        max_bytes: usize,
        extra: impl Fn(usize) -> Extra,
    ) -> Vec<Chunk> {
        let mut chunks = Vec::new();
        let (mut start, mut items, mut bytes) = (0, 0, 0);
        for (index, change) in self.agents.iter().enumerate() {
            let more = extra(index);
            let (change_items, change_bytes) = (
                change.item_count() + more.items,
                change.estimated_bytes() + more.bytes + more.items * ITEM_OVERHEAD_BYTES,
            );
            if index > start
                && (items + change_items > max_items || bytes + change_bytes > max_bytes)
            {
                chunks.push(Chunk {
                    agents: start..index,
                    synced: false,
                });
                (start, items, bytes) = (index, 0, 0);
            }
            items += change_items;
            bytes += change_bytes;
        }
        let end = self.agents.len();
        if start < end || self.synced.is_some() {
            let room = items < max_items && bytes + ITEM_OVERHEAD_BYTES * 2 <= max_bytes;
            if start < end && (!room && self.synced.is_some()) {
                chunks.push(Chunk {
                    agents: start..end,
                    synced: false,
                });
                start = end;
            }
            chunks.push(Chunk {
                agents: start..end,
                synced: self.synced.is_some(),
            });
        }
        chunks
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::state::model::AgentStatus;

    fn change(n: usize, bindings: usize) -> AgentChange {
        let agent = Agent {
            repository: "o/r".into(),
            manifest_path: format!("agents/a{n}/astrolift.toml"),
            project_id: "p".into(),
            name: format!("a{n}"),
            alias: None,
            status: AgentStatus::Active,
            snapshot_hash: "s".into(),
            payload_digest: "d".into(),
            commit: "c".into(),
            version: 0,
            updated_at: 0,
            bindings_digest: None,
            layer_key: None,
            package_build: None,
        };
        let mut change = AgentChange::new(agent, None, AuditAction::Added, "c", "", 0);
        change.delete_bindings = (0..bindings).map(|i| format!("t{i}")).collect();
        change
    }

    fn set(agents: Vec<AgentChange>, synced: bool) -> ChangeSet {
        let synced = synced.then(|| SyncedCommitUpdate {
            commit: SyncedCommit {
                repository: "o/r".into(),
                ref_name: "main".into(),
                commit: "c".into(),
                commit_time: 0,
                synced_at: 0,
            },
            expected_previous: None,
        });
        ChangeSet {
            repository: "o/r".into(),
            agents,
            synced,
        }
    }

    #[test]
    fn small_sets_are_one_chunk() {
        let chunks = set((0..10).map(|n| change(n, 0)).collect(), true).chunks(
            100,
            TRANSACTION_MAX_BYTES,
            |_| Extra::default(),
        );
        assert_eq!(
            chunks,
            vec![Chunk {
                agents: 0..10,
                synced: true
            }]
        );
    }

    #[test]
    fn big_sets_split_between_agents_and_synced_goes_last() {
        let changes = set((0..120).map(|n| change(n, 0)).collect(), true);
        let chunks = changes.chunks(100, TRANSACTION_MAX_BYTES, |_| Extra::default());
        assert_eq!(
            chunks,
            vec![
                Chunk {
                    agents: 0..50,
                    synced: false
                },
                Chunk {
                    agents: 50..100,
                    synced: false
                },
                Chunk {
                    agents: 100..120,
                    synced: true
                },
            ]
        );
        let full = set((0..50).map(|n| change(n, 0)).collect(), true).chunks(
            100,
            TRANSACTION_MAX_BYTES,
            |_| Extra::default(),
        );
        assert_eq!(
            full,
            vec![
                Chunk {
                    agents: 0..50,
                    synced: false
                },
                Chunk {
                    agents: 50..50,
                    synced: true
                }
            ]
        );
    }

    #[test]
    fn byte_budget_splits_too() {
        let changes = set((0..6).map(|n| change(n, 3)).collect(), false);
        let per_change = changes.agents[0].estimated_bytes();
        let chunks = changes.chunks(100, per_change * 2, |_| Extra::default());
        assert_eq!(chunks.len(), 3);
        assert!(chunks.iter().all(|c| c.agents.len() == 2));
    }

    #[test]
    fn empty_set_has_no_chunks_and_validation_catches_mistakes() {
        assert!(
            set(vec![], false)
                .chunks(100, TRANSACTION_MAX_BYTES, |_| Extra::default())
                .is_empty()
        );
        let mut bad = change(1, 0);
        bad.agent.version = 5;
        assert!(set(vec![bad], false).validate().is_err());
        assert!(
            set(vec![change(1, 0), change(1, 0)], false)
                .validate()
                .is_err()
        );
        assert!(set(vec![change(1, 0)], true).validate().is_ok());
        let (mut a, mut b) = (change(1, 0), change(2, 0));
        a.delete_bindings.push("t".into());
        b.delete_bindings.push("t".into());
        assert!(
            set(vec![a, b], false).validate().is_err(),
            "one trigger written twice"
        );
    }
}
