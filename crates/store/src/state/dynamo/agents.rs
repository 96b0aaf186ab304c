//! The agents concern on DynamoDB ([`AgentStore`]).

use futures_util::StreamExt as _;

use super::*;
use crate::state::agents::AgentStore;
use crate::state::kept_requests::purge_deleted_bindings;

/// Transactions of one change set in flight at once.
const TRANSACTIONS_IN_FLIGHT: usize = 8;

impl DynamoStateStore {
    /// Commits one chunk of `changes`, then purges the kept requests of the bindings it
    /// deleted (committed: a later chunk failing does not undo it). Returns the agents and
    /// the items it wrote.
    async fn commit_chunk(
        &self,
        changes: &ChangeSet,
        chunk: &Chunk,
        events: &[EventWrites<'_>],
    ) -> StoreResult<(usize, u64)> {
        let (writes, names) = self.chunk_items(changes, chunk, events)?;
        let items = writes.len() as u64;
        self.transact(writes, &names).await?;
        purge_deleted_bindings(self, &changes.agents[chunk.agents.clone()]).await;
        Ok((chunk.agents.len(), items))
    }
}

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
            let mut chunks =
                changes.chunks(TRANSACTION_MAX_ITEMS, TRANSACTION_MAX_BYTES, |index| {
                    events[index].extra()
                });
            // The chunk with the synced commit goes last, once every other has committed;
            // the others are independent (see `ChangeSet`), so they run side by side.
            let last = chunks.pop();
            let mut report = ApplyReport::default();
            // Collected first: a closure over borrowed chunks inside the stream would make
            // this future fail the higher-ranked `Send` check a spawned task needs.
            let mut commits = Vec::with_capacity(chunks.len());
            for chunk in &chunks {
                commits.push(self.commit_chunk(&changes, chunk, &events));
            }
            let mut committed = futures_util::stream::iter(commits)
                .buffer_unordered(TRANSACTIONS_IN_FLIGHT)
                .collect::<Vec<_>>()
                .await;
            if let Some(chunk) = &last
                && committed.iter().all(Result::is_ok)
            {
                committed.push(self.commit_chunk(&changes, chunk, &events).await);
            }
            let mut failure = None;
            for outcome in committed {
                match outcome {
                    Ok((agents, items)) => {
                        report.agents_written += agents;
                        report.items_written += items;
                        report.transactions += 1;
                    }
                    Err(error) => failure = failure.or(Some(error)),
                }
            }
            match failure {
                Some(StoreError::Conflict(message)) if report.transactions > 0 => {
                    Err(StoreError::Conflict(format!(
                        "{message} (after {} of the change set's agents were committed)",
                        report.agents_written
                    )))
                }
                Some(error) => Err(error),
                None => Ok(report),
            }
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
