//! Registered agents and their append-only audit history, written only through [`AgentStore::apply`] (a [`ChangeSet`](super::ChangeSet): agents, audit events, trigger bindings and the synced commit, conditionally).
//!
//! One concern of the state store: [`StateStore`](super::StateStore) is the union of
//! the concerns; its contract suite is `crates/store/tests/it/agent_contract.rs`, run on
//! SQLite and DynamoDB.

use super::change::{ApplyReport, ChangeSet};
use super::model::{Agent, AgentKey, AuditEvent};
use crate::{BoxFuture, StoreResult};

/// Registered agents and their append-only audit history, written only through [`AgentStore::apply`] (a [`ChangeSet`](super::ChangeSet): agents, audit events, trigger bindings and the synced commit, conditionally). Dyn-compatible.
pub trait AgentStore: Send + Sync {
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
}
