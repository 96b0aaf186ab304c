//! Trigger bindings, keyed by repository and, for GitHub-sourced ones, by event (written by [`AgentStore::apply`](super::AgentStore::apply)).
//!
//! A backend that keeps a copy of a binding per key (DynamoDB: one per repository and one per
//! event) writes every copy in the binding's transaction, and derives which event copies to
//! delete from the copies stored, so the copies never differ from the binding after a commit.
//! No per-delivery path lists every binding ([`TriggerBindingStore::list_trigger_bindings`]
//! is for operators' listings); [`StateStats`](crate::StateStats)' `records_read` lets the
//! contract suite prove it.
//!
//! One concern of the state store: [`StateStore`](super::StateStore) is the union of
//! the concerns; its contract suite is `crates/store/tests/it/binding_contract.rs`, run on
//! SQLite and DynamoDB.

use super::model::TriggerBinding;
use crate::{BoxFuture, StoreResult};

/// Trigger bindings, keyed by repository and, for GitHub-sourced ones, by event (written by [`AgentStore::apply`](super::AgentStore::apply)). Dyn-compatible.
pub trait TriggerBindingStore: Send + Sync {
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
    /// The default filters [`TriggerBindingStore::list_repository_trigger_bindings`]; the SQLite and
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
}
