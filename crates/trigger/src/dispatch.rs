//! Dispatch: the idempotency key, the conditional record, and the queue message.
//!
//! # Idempotency key
//! `{trigger_id}:signed:{timestamp}:{signature hex}` for a timestamped
//! signature (replay protection: a replay is a duplicate whatever its other
//! headers), else `{trigger_id}:delivery:{X-GitHub-Delivery}`, else
//! `{trigger_id}:key:{Idempotency-Key}`, else
//! `{trigger_id}:body:{sha256 hex of trigger_id, a NUL byte, the verified body}`.
//! The trigger id is part of every key: one GitHub delivery that matches two
//! bindings dispatches each once, and two senders cannot collide by reusing a key.
//! An `Idempotency-Key` or `X-GitHub-Delivery` over `Limits::idempotency_key`
//! bytes (256), or not visible ASCII, is a 400, whichever key is used.
//!
//! # Queue message (SQS standard queue, body = one JSON object)
//! ```json
//! {"dispatch_id":"d-…","trigger_id":"…","repository":"owner/repo",
//!  "manifest_path":"agents/triage/astrolift.toml","snapshot_hash":"<hex>",
//!  "created_at":1767225600,"payload":{"mode":"triage"},
//!  "sender":"octocat","trusted":true}
//! ```
//! `payload` is absent for the empty payload (never `null`); `sender` is
//! absent when there is no GitHub sender (generic and manual dispatches);
//! `trusted` is `false` only for a GitHub event that a binding's
//! `allow_untrusted = true` let through. Consumers must
//! tolerate redelivery (SQS is at-least-once): `dispatch_id` is the key.

use std::sync::Mutex;

use astrolift_store::state::{
    Agent, Dispatch, DispatchOutcome, DispatchStatus, TriggerBinding, UnixSeconds,
};
use astrolift_store::{BoxFuture, StateStore, StoreError};
use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::TriggerError;

/// The idempotency key of a verified request (see the module docs):
/// `replay_key` is [`crate::verify::Verified::replay_key`], `limit` is
/// `Limits::idempotency_key`.
pub fn idempotency_key(
    headers: &HeaderMap,
    trigger_id: &str,
    body: &[u8],
    replay_key: Option<&str>,
    limit: usize,
) -> Result<String, TriggerError> {
    let delivery = key_header(headers, "X-GitHub-Delivery", limit)?;
    let key = key_header(headers, "Idempotency-Key", limit)?;
    if let Some(replay) = replay_key {
        return Ok(format!("{trigger_id}:signed:{replay}"));
    }
    if let Some(delivery) = delivery {
        return Ok(delivery_key(trigger_id, delivery));
    }
    if let Some(key) = key {
        return Ok(format!("{trigger_id}:key:{key}"));
    }
    let mut hasher = Sha256::new();
    hasher.update(trigger_id.as_bytes());
    hasher.update([0u8]);
    hasher.update(body);
    Ok(format!(
        "{trigger_id}:body:{}",
        hex::encode(hasher.finalize())
    ))
}

/// A key header, trimmed; `None` when absent or blank. Over `limit` bytes or
/// not visible ASCII is a 400 (the message names neither header nor value).
fn key_header<'h>(
    headers: &'h HeaderMap,
    name: &str,
    limit: usize,
) -> Result<Option<&'h str>, TriggerError> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    if value.len() > limit {
        return Err(TriggerError::BadIdempotencyKey(format!(
            "is {} bytes, over the {limit}-byte limit",
            value.len()
        )));
    }
    let text = value
        .to_str()
        .map_err(|_| TriggerError::BadIdempotencyKey("is not visible ASCII".to_owned()))?;
    Ok(Some(text.trim()).filter(|t| !t.is_empty()))
}

/// The idempotency key of a GitHub delivery for one binding: a delivery that
/// matches two bindings dispatches each once.
pub fn delivery_key(trigger_id: &str, delivery_id: &str) -> String {
    format!("{trigger_id}:delivery:{delivery_id}")
}

/// A new random dispatch id: `d-` and 32 hex digits from the OS CSPRNG.
pub fn new_dispatch_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(format!("d-{}", hex::encode(bytes)))
}

/// What [`record`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchResult {
    /// The dispatch's id: the new one, or the first dispatch's for a duplicate.
    pub id: String,
    /// `true` for a new dispatch (HTTP 202), `false` for a duplicate (HTTP 200).
    pub created: bool,
    /// The record as stored (for a duplicate: as this request would have stored it).
    pub dispatch: Dispatch,
}

/// Why a dispatch could not be recorded or queued.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("cannot record the dispatch: {0}")]
    Store(#[from] StoreError),
    #[error("cannot mint a dispatch id: {0}")]
    Random(String),
    #[error("cannot queue the dispatch: {0}")]
    Queue(String),
    /// The recorded payload does not parse back (never for a payload the
    /// sandbox accepted: its nesting and size are bounded for this).
    #[error("the recorded payload does not parse back: {0}")]
    Payload(String),
}

/// Who caused a dispatch, and whether it passed the trust policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The GitHub sender's login, for GitHub events.
    pub sender: Option<String>,
    pub trusted: bool,
}

impl Origin {
    /// A verified generic trigger or a manual dispatch: no GitHub sender, trusted.
    pub const TRUSTED: Origin = Origin {
        sender: None,
        trusted: true,
    };
}

/// Records a dispatch of `binding` with a conditional write. A key seen before
/// creates nothing and returns the first dispatch's id.
pub async fn record(
    state: &dyn StateStore,
    binding: &TriggerBinding,
    snapshot_hash: &str,
    payload: Option<&Value>,
    idempotency_key: &str,
    origin: &Origin,
    now: UnixSeconds,
) -> Result<DispatchResult, DispatchError> {
    let id = new_dispatch_id().map_err(|e| DispatchError::Random(e.to_string()))?;
    let dispatch = Dispatch {
        id,
        idempotency_key: idempotency_key.to_owned(),
        trigger_id: binding.trigger_id.clone(),
        repository: binding.repository.clone(),
        manifest_path: binding.manifest_path.clone(),
        snapshot_hash: snapshot_hash.to_owned(),
        payload: payload.map(Value::to_string),
        created_at: now,
        status: DispatchStatus::Pending,
        sender: origin.sender.clone(),
        trusted: origin.trusted,
    };
    record_new(state, dispatch).await
}

/// The `trigger_id` of a dispatch asked for by hand (`astrolift dispatch`).
pub const MANUAL_TRIGGER: &str = "manual";

/// Records a manual dispatch of `agent` at its current snapshot (`astrolift
/// dispatch AGENT --input JSON`, like the seed's `astro agent dispatch
/// --input`). The key is `manual:{repository}:{manifest}:key:{key}`, so
/// repeating a command with the same `--idempotency-key` is one dispatch;
/// without a key every call is a new dispatch. `payload` should already be
/// reduced by [`crate::env::non_empty_payload`].
pub async fn record_manual(
    state: &dyn StateStore,
    agent: &Agent,
    payload: Option<&Value>,
    key: Option<&str>,
    now: UnixSeconds,
) -> Result<DispatchResult, DispatchError> {
    let id = new_dispatch_id().map_err(|e| DispatchError::Random(e.to_string()))?;
    let scope = format!("manual:{}:{}", agent.repository, agent.manifest_path);
    let idempotency_key = match key {
        Some(key) => format!("{scope}:key:{key}"),
        None => format!("{scope}:id:{id}"),
    };
    let dispatch = Dispatch {
        id,
        idempotency_key,
        trigger_id: MANUAL_TRIGGER.to_owned(),
        repository: agent.repository.clone(),
        manifest_path: agent.manifest_path.clone(),
        snapshot_hash: agent.snapshot_hash.clone(),
        payload: payload.map(Value::to_string),
        created_at: now,
        status: DispatchStatus::Pending,
        sender: None,
        trusted: true,
    };
    record_new(state, dispatch).await
}

/// The conditional write shared by [`record`] and [`record_manual`].
async fn record_new(
    state: &dyn StateStore,
    dispatch: Dispatch,
) -> Result<DispatchResult, DispatchError> {
    let id = dispatch.id.clone();
    Ok(match state.record_dispatch(&dispatch).await? {
        DispatchOutcome::New => DispatchResult {
            id,
            created: true,
            dispatch,
        },
        DispatchOutcome::Existing(first) => DispatchResult {
            id: first,
            created: false,
            dispatch,
        },
    })
}

/// The message published for the control plane (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchMessage {
    pub dispatch_id: String,
    pub trigger_id: String,
    pub repository: String,
    pub manifest_path: String,
    pub snapshot_hash: String,
    pub created_at: UnixSeconds,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// The GitHub sender's login (GitHub events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    /// `false` for a GitHub event let through by `allow_untrusted = true`.
    #[serde(default)]
    pub trusted: bool,
}

impl DispatchMessage {
    /// The message for a recorded dispatch (its payload parsed back to
    /// JSON). A payload that does not parse is an error, never dropped.
    pub fn of(dispatch: &Dispatch) -> Result<Self, DispatchError> {
        let payload = dispatch
            .payload
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| DispatchError::Payload(e.to_string()))?;
        Ok(Self {
            dispatch_id: dispatch.id.clone(),
            trigger_id: dispatch.trigger_id.clone(),
            repository: dispatch.repository.clone(),
            manifest_path: dispatch.manifest_path.clone(),
            snapshot_hash: dispatch.snapshot_hash.clone(),
            created_at: dispatch.created_at,
            payload,
            sender: dispatch.sender.clone(),
            trusted: dispatch.trusted,
        })
    }
}

/// Where dispatches go for the control plane.
pub trait DispatchQueue: Send + Sync + std::fmt::Debug {
    fn publish<'a>(
        &'a self,
        message: &'a DispatchMessage,
    ) -> BoxFuture<'a, Result<(), DispatchError>>;
}

/// An in-memory queue, for `serve` without AWS and for tests.
#[derive(Debug, Default)]
pub struct MemoryDispatchQueue {
    messages: Mutex<Vec<DispatchMessage>>,
}

impl MemoryDispatchQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// The messages published so far, oldest first.
    pub fn messages(&self) -> Vec<DispatchMessage> {
        self.messages.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

impl DispatchQueue for MemoryDispatchQueue {
    fn publish<'a>(
        &'a self,
        message: &'a DispatchMessage,
    ) -> BoxFuture<'a, Result<(), DispatchError>> {
        Box::pin(async move {
            self.messages
                .lock()
                .map_err(|_| DispatchError::Queue("the in-memory queue is poisoned".to_owned()))?
                .push(message.clone());
            Ok(())
        })
    }
}

/// An SQS standard queue, by URL.
#[derive(Debug, Clone)]
pub struct SqsDispatchQueue {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsDispatchQueue {
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }

    /// A client from the standard AWS configuration (`AWS_ENDPOINT_URL` included).
    pub async fn from_env(queue_url: impl Into<String>) -> Self {
        let config = aws_config::load_from_env().await;
        Self::new(aws_sdk_sqs::Client::new(&config), queue_url)
    }

    /// Creates (or finds) the standard queue `name` and returns it: for local
    /// setups and tests against a local endpoint.
    pub async fn create(client: aws_sdk_sqs::Client, name: &str) -> Result<Self, DispatchError> {
        let output = client
            .create_queue()
            .queue_name(name)
            .send()
            .await
            .map_err(|e| {
                DispatchError::Queue(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())
            })?;
        let url = output
            .queue_url
            .ok_or_else(|| DispatchError::Queue(format!("no URL for the queue {name}")))?;
        Ok(Self::new(client, url))
    }

    /// The queue's URL.
    pub fn url(&self) -> &str {
        &self.queue_url
    }

    /// Receives (and leaves in flight) up to 10 messages, waiting up to
    /// `wait_seconds` for the first: what a consumer sees. A body that is not
    /// a [`DispatchMessage`] is an error.
    pub async fn receive(&self, wait_seconds: i32) -> Result<Vec<DispatchMessage>, DispatchError> {
        let output = self
            .client
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(wait_seconds)
            .send()
            .await
            .map_err(|e| {
                DispatchError::Queue(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())
            })?;
        output
            .messages()
            .iter()
            .filter_map(|m| m.body())
            .map(|body| {
                serde_json::from_str(body)
                    .map_err(|e| DispatchError::Queue(format!("not a dispatch message: {e}")))
            })
            .collect()
    }
}

impl DispatchQueue for SqsDispatchQueue {
    fn publish<'a>(
        &'a self,
        message: &'a DispatchMessage,
    ) -> BoxFuture<'a, Result<(), DispatchError>> {
        Box::pin(async move {
            let body =
                serde_json::to_string(message).map_err(|e| DispatchError::Queue(e.to_string()))?;
            self.client
                .send_message()
                .queue_url(&self.queue_url)
                .message_body(body)
                .send()
                .await
                .map_err(|e| {
                    DispatchError::Queue(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())
                })?;
            Ok(())
        })
    }
}
