//! The agents concern on DynamoDB ([`AgentStore`]).

use super::*;
use crate::state::agents::AgentStore;
use crate::state::kept_requests::purge_deleted_bindings;

impl AgentStore for DynamoStateStore {
    fn get_agent<'a>(&'a self, agent: &'a AgentKey) -> BoxFuture<'a, StoreResult<Option<Agent>>> {
        Box::pin(self.get(key(
            repo_pk(&agent.repository),
            agent_sk(&agent.manifest_path),
        )))
    }

    fn list_agents<'a>(&'a self, repository: &'a str) -> BoxFuture<'a, StoreResult<Vec<Agent>>> {
        Box::pin(async move {
            self.query_partition(&repo_pk(repository), Some("AGENT#"))
                .await
        })
    }

    fn find_agents<'a>(
        &'a self,
        project_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<Agent>>> {
        Box::pin(async move {
            let mut agents: Vec<Agent> = self
                .query_project_index(project_id, format!("AGENT#{name}"))
                .await?;
            agents.sort_by_key(Agent::key);
            Ok(agents)
        })
    }

    fn apply(&self, changes: ChangeSet) -> BoxFuture<'_, StoreResult<ApplyReport>> {
        Box::pin(async move {
            changes.validate()?;
            let stored = if changes
                .agents
                .iter()
                .any(|c| !c.put_bindings.is_empty() || !c.delete_bindings.is_empty())
            {
                self.stored_event_copies(&changes.repository).await?
            } else {
                HashMap::new()
            };
            let events = plan_event_writes(&changes, &stored);
            if let Some((change, writes)) =
                changes.agents.iter().zip(&events).find(|(change, writes)| {
                    change.item_count() + writes.extra().items > TRANSACTION_MAX_ITEMS - 1
                })
            {
                return Err(StoreError::Invalid(format!(
                    "change of agent {}: {} items (its trigger bindings with a copy per GitHub \
                     event) exceed one transaction",
                    change.agent.key(),
                    change.item_count() + writes.extra().items
                )));
            }
            let mut report = ApplyReport::default();
            for chunk in changes.chunks(TRANSACTION_MAX_ITEMS, TRANSACTION_MAX_BYTES, |index| {
                events[index].extra()
            }) {
                let (writes, names) = self.chunk_items(&changes, &chunk, &events)?;
                let items = writes.len() as u64;
                self.transact(writes, &names)
                    .await
                    .map_err(|err| match err {
                        StoreError::Conflict(message) if report.transactions > 0 => {
                            StoreError::Conflict(format!(
                                "{message} (after {} of the change set's agents were committed)",
                                report.agents_written
                            ))
                        }
                        other => other,
                    })?;
                report.agents_written += chunk.agents.len();
                report.items_written += items;
                report.transactions += 1;
                // Committed: a later transaction failing does not undo this one.
                purge_deleted_bindings(self, &changes.agents[chunk.agents.clone()]).await;
            }
            Ok(report)
        })
    }

    fn list_audit_events<'a>(
        &'a self,
        agent: &'a AgentKey,
    ) -> BoxFuture<'a, StoreResult<Vec<AuditEvent>>> {
        Box::pin(async move {
            self.query_partition(&audit_pk(&agent.repository, &agent.manifest_path), None)
                .await
        })
    }
}
