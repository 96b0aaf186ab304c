//! Trigger bindings as the bot sees them: the service built from the
//! environment, and GitHub-sourced fan-out for the webhook ingress.

use std::sync::Arc;

use astrolift_manifest::Limits;
use astrolift_store::{BoxFuture, StateStore};
use astrolift_trigger::dispatch::{DispatchQueue, MemoryDispatchQueue, SqsDispatchQueue};
use astrolift_trigger::secrets::resolver_from_env;
use astrolift_trigger::{SecretError, SecretResolver, TriggerService};

use crate::ingress::{EventFanOut, FanOutDelivery};

/// The trigger service on `state`, with the secret resolver of
/// `ASTROLIFT_SECRETS` and the dispatch queue of `ASTROLIFT_DISPATCH_QUEUE_URL`
/// (in memory, with a warning, when unset: local runs only).
pub async fn service_from_env(state: Arc<dyn StateStore>) -> Result<TriggerService, SecretError> {
    let secrets: Arc<dyn SecretResolver> = Arc::from(resolver_from_env().await?);
    let queue: Arc<dyn DispatchQueue> = match std::env::var("ASTROLIFT_DISPATCH_QUEUE_URL") {
        Ok(url) if !url.trim().is_empty() => Arc::new(SqsDispatchQueue::from_env(url).await),
        _ => {
            tracing::warn!(
                "ASTROLIFT_DISPATCH_QUEUE_URL is not set: dispatches are recorded, and queued in memory only"
            );
            Arc::new(MemoryDispatchQueue::new())
        }
    };
    Ok(TriggerService::new(state, secrets, queue, Limits::DEFAULT))
}

impl EventFanOut for TriggerService {
    /// Every matching GitHub-sourced binding is evaluated and dispatched under
    /// the delivery id; the count is of new dispatches (202).
    fn fan_out<'a>(&'a self, delivery: FanOutDelivery<'a>) -> BoxFuture<'a, usize> {
        Box::pin(async move {
            let results = self
                .fan_out_github(
                    delivery.repository,
                    delivery.event_name,
                    delivery.action,
                    delivery.delivery_id,
                    delivery.body,
                )
                .await;
            for result in &results {
                tracing::info!(
                    trigger_id = %result.trigger_id,
                    status = result.response.status,
                    "github-sourced trigger"
                );
            }
            results.iter().filter(|r| r.response.status == 202).count()
        })
    }
}
