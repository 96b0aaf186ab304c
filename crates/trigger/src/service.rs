//! [`TriggerService`]: stored bindings in, HTTP-shaped answers out. The one
//! piece `serve`, the trigger Lambda and the webhook function's GitHub
//! fan-out share; it does no HTTP itself.
//!
//! # `handle` (`POST /triggers/{trigger_id}`, DESIGN.md §3)
//! | Status | When | Body |
//! |---|---|---|
//! | 202 | dispatched | `{"dispatch_id","trigger_id","agent","snapshot","status":"queued","duplicate":false}` |
//! | 200 | a duplicate (same idempotency key) | the same, with the first dispatch's id and `"duplicate":true` |
//! | 204 | filtered out | `{}` |
//! | 401 | bad, missing or malformed signature or token | `{"error","trigger_id"}` |
//! | 404 | no such binding; a `github` binding (those are fed by the App's webhook, never by this route); a binding whose agent is not `active` | `{"error","trigger_id"}` |
//! | 413 | body over `Limits::trigger_body` | `{"error","trigger_id"}` |
//! | 400 | body not JSON | `{"error","trigger_id"}` |
//! | 422 | the filter or mapping failed | `{"error","trigger_id","stage"}` (the jq error in `error`) |
//! | 500 | the secret is not configured, the binding does not compile, or the dispatch was recorded but not queued | `{"error","trigger_id"}` |
//! | 503 | every jq evaluation slot is taken, or the state store or Secrets Manager is unreachable; [`TriggerResponse::retry_after`] gives the `Retry-After` | `{"error","trigger_id"}` |
//!
//! Error bodies never carry a secret value: they are built from
//! [`TriggerError`] and [`StoreError`] messages, which name references only.
//!
//! # Dispatch and the queue
//! The record is written first (conditional on the idempotency key), then the
//! [`DispatchMessage`] is published. A duplicate creates nothing: no record and
//! no message. If publishing fails after the record was written, the answer
//! is 500 with the `dispatch_id`, and the `pending` record stays in state for
//! the control plane to reconcile (a retry of the request is a duplicate).
//!
//! # Compiled bindings
//! Each binding's programs are compiled once per `(trigger_id, snapshot)` and
//! kept; a binding whose definition changed under the same snapshot is
//! recompiled too. [`TriggerService::compilations`] counts compilations.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use astrolift_manifest::Limits;
use astrolift_store::state::{Agent, AgentKey, AgentStatus, TriggerBinding};
use astrolift_store::{StateStore, StoreError};
use http::HeaderMap;
use serde_json::{Value, json};

use crate::dispatch::{
    DispatchError, DispatchMessage, DispatchQueue, delivery_key, idempotency_key, record,
};
use crate::error::TriggerError;
use crate::evaluate::{CompiledBinding, Outcome, evaluate, evaluate_verified};
use crate::secrets::{SecretError, SecretResolver};

/// An HTTP-shaped answer: a status and a JSON object (`{}` for 204).
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerResponse {
    pub status: u16,
    pub body: Value,
}

impl TriggerResponse {
    /// The `Retry-After` header's value, seconds: every 503 (busy, or a
    /// store or Secrets Manager that may come back) asks the caller to retry.
    pub fn retry_after(&self) -> Option<u64> {
        (self.status == 503).then_some(crate::error::RETRY_AFTER_SECONDS)
    }
}

/// One GitHub-sourced binding's answer to an event.
#[derive(Debug, Clone, PartialEq)]
pub struct FanOutResult {
    /// The binding; empty when the bindings could not be listed at all.
    pub trigger_id: String,
    pub response: TriggerResponse,
}

/// A compiled binding and what it was compiled from.
#[derive(Debug)]
struct CacheEntry {
    snapshot_hash: String,
    definition: Value,
    compiled: Arc<CompiledBinding>,
}

/// Evaluates and dispatches stored trigger bindings (see the module docs).
#[derive(Debug)]
pub struct TriggerService {
    state: Arc<dyn StateStore>,
    secrets: Arc<dyn SecretResolver>,
    queue: Arc<dyn DispatchQueue>,
    limits: Limits,
    compiled: Mutex<HashMap<String, CacheEntry>>,
    compilations: AtomicU64,
}

/// A binding that may dispatch: the binding, its agent and its programs.
struct Ready {
    binding: TriggerBinding,
    agent: Agent,
    compiled: Arc<CompiledBinding>,
}

impl TriggerService {
    pub fn new(
        state: Arc<dyn StateStore>,
        secrets: Arc<dyn SecretResolver>,
        queue: Arc<dyn DispatchQueue>,
        limits: Limits,
    ) -> Self {
        Self {
            state,
            secrets,
            queue,
            limits,
            compiled: Mutex::new(HashMap::new()),
            compilations: AtomicU64::new(0),
        }
    }

    /// How many times a binding's programs were compiled since `new`.
    pub fn compilations(&self) -> u64 {
        self.compilations.load(Ordering::Relaxed)
    }

    /// How many compiled bindings are cached.
    pub fn cached_bindings(&self) -> usize {
        self.compiled.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// `POST /triggers/{trigger_id}`: see the module docs for every status.
    pub async fn handle(
        &self,
        trigger_id: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> TriggerResponse {
        let ready = match self.load(trigger_id).await {
            Ok(Some(ready)) => ready,
            Ok(None) => {
                let unknown = TriggerError::UnknownTrigger(trigger_id.to_owned());
                return error_response(404, trigger_id, &unknown.to_string());
            }
            Err(response) => return response,
        };
        let outcome = evaluate(
            &ready.compiled,
            headers,
            body,
            self.secrets.as_ref(),
            &self.limits,
        )
        .await;
        let key = idempotency_key(headers, trigger_id, body);
        self.finish(&ready, outcome, &key).await
    }

    /// The GitHub-sourced bindings of `repository` whose `events` match,
    /// evaluated without verification (the App verified the delivery) and
    /// dispatched under the delivery id. One entry per matching binding of an
    /// active agent; one entry with an empty `trigger_id` when the bindings
    /// could not be listed.
    pub async fn fan_out_github(
        &self,
        repository: &str,
        event_name: &str,
        action: Option<&str>,
        delivery_id: &str,
        body: &[u8],
    ) -> Vec<FanOutResult> {
        let bindings = match self.state.list_trigger_bindings().await {
            Ok(bindings) => bindings,
            Err(error) => {
                return vec![FanOutResult {
                    trigger_id: String::new(),
                    response: store_error_response("", &error),
                }];
            }
        };
        let mut results = Vec::new();
        for binding in bindings
            .into_iter()
            .filter(|b| b.repository == repository && b.source == "github")
        {
            let trigger_id = binding.trigger_id.clone();
            if let Some(response) = self
                .fan_out_one(binding, event_name, action, delivery_id, body)
                .await
            {
                results.push(FanOutResult {
                    trigger_id,
                    response,
                });
            }
        }
        results
    }

    /// One binding of a fan-out; `None` when it does not match the event or
    /// its agent is not active.
    async fn fan_out_one(
        &self,
        binding: TriggerBinding,
        event_name: &str,
        action: Option<&str>,
        delivery_id: &str,
        body: &[u8],
    ) -> Option<TriggerResponse> {
        let trigger_id = binding.trigger_id.clone();
        let ready = match self.ready(binding).await {
            Ok(Some(ready)) => ready,
            Ok(None) => return None,
            Err(response) => return Some(response),
        };
        if !ready.compiled.matches_event(event_name, action) {
            return None;
        }
        let outcome = evaluate_verified(&ready.compiled, body, &self.limits).await;
        let key = delivery_key(&trigger_id, delivery_id);
        Some(self.finish(&ready, outcome, &key).await)
    }

    /// The generic binding `trigger_id`, if it exists and its agent is
    /// active, with its programs. GitHub-sourced bindings are not found here.
    async fn load(&self, trigger_id: &str) -> Result<Option<Ready>, TriggerResponse> {
        match self.state.get_trigger_binding(trigger_id).await {
            Ok(Some(binding)) if binding.source != "github" => self.ready(binding).await,
            Ok(_) => Ok(None),
            Err(error) => Err(store_error_response(trigger_id, &error)),
        }
    }

    /// `binding` with its agent (when active) and its compiled programs.
    async fn ready(&self, binding: TriggerBinding) -> Result<Option<Ready>, TriggerResponse> {
        let key = AgentKey::new(&binding.repository, &binding.manifest_path);
        let agent = match self.state.get_agent(&key).await {
            Ok(Some(agent)) if agent.status == AgentStatus::Active => agent,
            Ok(_) => return Ok(None),
            Err(error) => return Err(store_error_response(&binding.trigger_id, &error)),
        };
        let compiled = self
            .compiled(&binding)
            .map_err(|error| trigger_error_response(&binding.trigger_id, &error))?;
        Ok(Some(Ready {
            binding,
            agent,
            compiled,
        }))
    }

    /// The cached programs of `binding`, compiled on first use.
    fn compiled(&self, binding: &TriggerBinding) -> Result<Arc<CompiledBinding>, TriggerError> {
        if let Ok(cache) = self.compiled.lock()
            && let Some(entry) = cache.get(&binding.trigger_id)
            && entry.snapshot_hash == binding.snapshot_hash
            && entry.definition == binding.definition
        {
            return Ok(entry.compiled.clone());
        }
        let compiled = Arc::new(CompiledBinding::from_binding(binding)?);
        self.compilations.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut cache) = self.compiled.lock() {
            cache.insert(
                binding.trigger_id.clone(),
                CacheEntry {
                    snapshot_hash: binding.snapshot_hash.clone(),
                    definition: binding.definition.clone(),
                    compiled: compiled.clone(),
                },
            );
        }
        Ok(compiled)
    }

    /// Turns an evaluation into its answer, recording and queueing a dispatch.
    async fn finish(
        &self,
        ready: &Ready,
        outcome: Result<Outcome, TriggerError>,
        key: &str,
    ) -> TriggerResponse {
        let trigger_id = ready.binding.trigger_id.as_str();
        let payload = match outcome {
            Err(error) => return trigger_error_response(trigger_id, &error),
            Ok(Outcome::Filtered) => {
                tracing::info!(trigger_id, "filtered out");
                return TriggerResponse {
                    status: 204,
                    body: json!({}),
                };
            }
            Ok(Outcome::Dispatch { payload }) => payload,
        };
        let now = now_seconds();
        let recorded = match record(
            self.state.as_ref(),
            &ready.binding,
            &ready.agent.snapshot_hash,
            payload.as_ref(),
            key,
            now,
        )
        .await
        {
            Ok(recorded) => recorded,
            Err(error) => return dispatch_error_response(trigger_id, &error, None),
        };
        if recorded.created {
            let published = match DispatchMessage::of(&recorded.dispatch) {
                Ok(message) => self.queue.publish(&message).await,
                Err(error) => Err(error),
            };
            if let Err(error) = published {
                return dispatch_error_response(trigger_id, &error, Some(&recorded.id));
            }
        }
        tracing::info!(
            trigger_id,
            dispatch_id = %recorded.id,
            duplicate = !recorded.created,
            "dispatched"
        );
        TriggerResponse {
            status: if recorded.created { 202 } else { 200 },
            body: json!({
                "dispatch_id": recorded.id,
                "trigger_id": trigger_id,
                "agent": ready.agent.name,
                "snapshot": ready.agent.snapshot_hash,
                "status": "queued",
                "duplicate": !recorded.created,
            }),
        }
    }
}

fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn error_response(status: u16, trigger_id: &str, message: &str) -> TriggerResponse {
    if status >= 500 {
        tracing::error!(trigger_id, status, error = message, "trigger failed");
    } else {
        tracing::info!(trigger_id, status, error = message, "trigger refused");
    }
    TriggerResponse {
        status,
        body: json!({"error": message, "trigger_id": trigger_id}),
    }
}

/// 503 for a store that may come back, 500 otherwise.
fn store_error_response(trigger_id: &str, error: &StoreError) -> TriggerResponse {
    let status = if error.is_retryable() { 503 } else { 500 };
    error_response(status, trigger_id, &format!("state store: {error}"))
}

/// The error's own status, except Secrets Manager being unreachable (503).
fn trigger_error_response(trigger_id: &str, error: &TriggerError) -> TriggerResponse {
    let status = match error {
        TriggerError::Secret(SecretError::Aws { .. }) => 503,
        other => other.status(),
    };
    let mut response = error_response(status, trigger_id, &error.to_string());
    if let (TriggerError::MappingFailed { stage, .. }, Value::Object(body)) =
        (error, &mut response.body)
    {
        body.insert("stage".to_owned(), Value::String(stage.to_string()));
    }
    response
}

fn dispatch_error_response(
    trigger_id: &str,
    error: &DispatchError,
    recorded: Option<&str>,
) -> TriggerResponse {
    let mut response = match error {
        DispatchError::Store(store) => store_error_response(trigger_id, store),
        other => error_response(500, trigger_id, &other.to_string()),
    };
    if let (Some(id), Value::Object(body)) = (recorded, &mut response.body) {
        body.insert("dispatch_id".to_owned(), Value::String(id.to_owned()));
    }
    response
}
