//! Dispatch: the conditional record and the queue message.
//!
//! # Idempotency key
//! Built on the request side (`astrolift_trigger::idempotency`); a GitHub
//! delivery's is [`delivery_key`], the one both sides share.
//!
//! # Queue message
//! The body of each queue message is one [`DispatchMessage`] v1 (see
//! [`crate::message`] and `schemas/dispatch.schema.json`), the same message
//! the record keeps. Consumers must tolerate redelivery (SQS is
//! at-least-once): `dispatch_id` is the key.

use std::sync::Mutex;

use astrolift_store::state::{
    Agent, Dispatch, DispatchOutcome, DispatchStatus, ReportTarget, UnixSeconds,
};
use astrolift_store::{BoxFuture, StateStore, StoreError, describe_sdk_error};
use serde_json::Value;

use crate::message::{DispatchContent, EnvSpecRef, MessageParts, Source, build_message};
pub use crate::message::{DispatchMessage, MANUAL_TRIGGER};

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
    /// What the dispatch carries could not be read (snapshot, package, URL).
    #[error("cannot assemble the dispatch: {0}")]
    Content(#[from] crate::content::ContentError),
    /// The local outbox holds its maximum of undrained messages.
    #[error("the dispatch outbox is full ({max} undrained messages)")]
    Full { max: u64 },
    /// The dispatch was recorded, but its queue did not take the message.
    #[error("dispatch {dispatch_id} was recorded but not queued: {source}")]
    NotQueued {
        dispatch_id: String,
        source: Box<DispatchError>,
    },
}

/// Who caused a dispatch, whether it passed the trust policy, and where its
/// result is reported back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The GitHub sender's login, for GitHub events.
    pub sender: Option<String>,
    pub trusted: bool,
    /// A GitHub-sourced trigger's `report`, with the issue or pull request it goes to.
    pub report: Option<ReportTarget>,
}

impl Origin {
    /// A verified generic trigger or a manual dispatch: no GitHub sender, trusted.
    pub const TRUSTED: Origin = Origin {
        sender: None,
        trusted: true,
        report: None,
    };
}

/// A new random task id: a GUID (UUID version 4 from the OS CSPRNG).
pub fn new_task_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

/// One dispatch to create: what caused it, of which agent version, with
/// what payload and content. Every path that creates a dispatch fills one
/// and calls [`record`] (through [`new_dispatch`]).
#[derive(Debug, Clone)]
pub struct DispatchRequest<'a> {
    pub source: Source,
    pub repository: &'a str,
    pub manifest_path: &'a str,
    pub snapshot_hash: &'a str,
    /// The full idempotency key; `None`: this dispatch is never a duplicate
    /// (the key becomes `{source}:{repository}:{manifest}:id:{dispatch_id}`).
    pub idempotency_key: Option<String>,
    /// Already reduced by [`crate::prompts::non_empty_payload`].
    pub payload: Option<&'a Value>,
    pub origin: &'a Origin,
    pub env_spec: Option<EnvSpecRef>,
    /// The env spec's packaged config manifest ([`crate::content::env_spec_parts`]), if it names one.
    pub config: Option<&'a Value>,
    pub content: &'a DispatchContent,
    /// `ASTROLIFT_CALLBACK_BASE_URL`, when a callback route is configured.
    pub callback_base: Option<&'a str>,
    pub now: UnixSeconds,
}

/// The record of a new dispatch, with its message v1: fresh ids, and the
/// message built by [`build_message`]. Nothing is written.
pub fn new_dispatch(request: &DispatchRequest<'_>) -> Result<Dispatch, DispatchError> {
    let id = new_dispatch_id().map_err(|e| DispatchError::Random(e.to_string()))?;
    let task_id = new_task_id().map_err(|e| DispatchError::Random(e.to_string()))?;
    let trigger_id = request.source.record_id();
    let idempotency_key = match &request.idempotency_key {
        Some(key) => key.clone(),
        None => format!(
            "{trigger_id}:{}:{}:id:{id}",
            request.repository, request.manifest_path
        ),
    };
    let mut message = build_message(&MessageParts {
        dispatch_id: &id,
        task_id: &task_id,
        idempotency_key: &idempotency_key,
        created_at: request.now,
        source: &request.source,
        repository: request.repository,
        manifest_path: request.manifest_path,
        snapshot_hash: request.snapshot_hash,
        env_spec: request.env_spec.as_ref(),
        config: request.config,
        payload: request.payload,
        content: request.content,
        callback_base: request.callback_base,
        sender: request.origin.sender.as_deref(),
        trusted: request.origin.trusted,
    });
    let payload = message.payload.take().map(|p| p.to_string());
    let message =
        serde_json::to_string(&message).map_err(|e| DispatchError::Payload(e.to_string()))?;
    Ok(Dispatch {
        id,
        idempotency_key,
        trigger_id,
        repository: request.repository.to_owned(),
        manifest_path: request.manifest_path.to_owned(),
        snapshot_hash: request.snapshot_hash.to_owned(),
        payload,
        created_at: request.now,
        status: DispatchStatus::Pending,
        sender: request.origin.sender.clone(),
        trusted: request.origin.trusted,
        task_id,
        env_spec: request.env_spec.as_ref().map(|spec| spec.name.clone()),
        message: Some(message),
        report: request.origin.report.clone(),
    })
}

/// Records a new dispatch with a conditional write. A key seen before
/// creates nothing and returns the first dispatch's id.
pub async fn record(
    state: &dyn StateStore,
    request: &DispatchRequest<'_>,
) -> Result<DispatchResult, DispatchError> {
    record_new(state, new_dispatch(request)?).await
}

/// Records a new dispatch, as [`record`], and gives a new one's message to
/// `queue` ([`DispatchQueue::record_and_publish`]): what every dispatch
/// (trigger, workflow stage, `astrolift dispatch`) goes through.
pub async fn record_and_queue(
    state: &dyn StateStore,
    queue: &dyn DispatchQueue,
    request: &DispatchRequest<'_>,
) -> Result<DispatchResult, DispatchError> {
    queue
        .record_and_publish(state, new_dispatch(request)?)
        .await
}

/// [`DispatchQueue::record_and_publish`]'s default: the bound, the record,
/// then the message.
pub(crate) async fn record_then_publish<Q: DispatchQueue + ?Sized>(
    queue: &Q,
    state: &dyn StateStore,
    dispatch: Dispatch,
) -> Result<DispatchResult, DispatchError> {
    queue.has_room().await?;
    let recorded = record_new(state, dispatch).await?;
    if recorded.created {
        let published = match DispatchMessage::of(&recorded.dispatch) {
            Ok(message) => queue.publish(&message).await,
            Err(error) => Err(error),
        };
        published.map_err(|error| DispatchError::NotQueued {
            dispatch_id: recorded.id.clone(),
            source: Box::new(error),
        })?;
    }
    Ok(recorded)
}

/// The idempotency key of a manual dispatch of `agent` (`astrolift dispatch
/// AGENT --input JSON`, like the seed's `astro agent dispatch --input`):
/// `manual:{repository}:{manifest}:key:{key}`, so repeating a command with
/// the same `--idempotency-key` is one dispatch; without a key (`None`)
/// every call is a new dispatch.
pub fn manual_key(agent: &Agent, key: Option<&str>) -> Option<String> {
    key.map(|key| {
        format!(
            "{MANUAL_TRIGGER}:{}:{}:key:{key}",
            agent.repository, agent.manifest_path
        )
    })
}

/// The conditional write of [`record`].
async fn record_new(
    state: &dyn StateStore,
    dispatch: Dispatch,
) -> Result<DispatchResult, DispatchError> {
    let outcome = state.record_dispatch(&dispatch).await?;
    Ok(DispatchResult::of(dispatch, outcome))
}

impl DispatchResult {
    /// The result of recording `dispatch` with `outcome`.
    pub fn of(dispatch: Dispatch, outcome: DispatchOutcome) -> Self {
        let id = dispatch.id.clone();
        match outcome {
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
        }
    }
}

/// The message kept in a dispatch record, with its payload put back. A
/// record without a message (written before messages were kept) or whose
/// payload does not parse back is an error, never a message without them.
pub fn message_of(dispatch: &Dispatch) -> Result<DispatchMessage, DispatchError> {
    let text = dispatch.message.as_deref().ok_or_else(|| {
        DispatchError::Payload(format!("dispatch {} has no message", dispatch.id))
    })?;
    let mut message: DispatchMessage =
        serde_json::from_str(text).map_err(|e| DispatchError::Payload(e.to_string()))?;
    message.payload = dispatch
        .payload
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| DispatchError::Payload(e.to_string()))?;
    Ok(message)
}

impl DispatchMessage {
    /// [`message_of`].
    pub fn of(dispatch: &Dispatch) -> Result<Self, DispatchError> {
        message_of(dispatch)
    }
}

/// Where dispatches go for the control plane.
pub trait DispatchQueue: Send + Sync + std::fmt::Debug {
    fn publish<'a>(
        &'a self,
        message: &'a DispatchMessage,
    ) -> BoxFuture<'a, Result<(), DispatchError>>;

    /// Whether a new dispatch may be made now: [`DispatchError::Full`] when
    /// a bounded queue (the local outbox) is full. Checked before recording.
    fn has_room(&self) -> BoxFuture<'_, Result<(), DispatchError>> {
        Box::pin(async { Ok(()) })
    }

    /// Records `dispatch` (a conditional write: a key seen before records
    /// nothing) and, when it is new, publishes its message;
    /// [`DispatchError::Full`] before anything is recorded when the queue
    /// is full, [`DispatchError::NotQueued`] when the record was written but
    /// the message was not taken. The default does the three one after the
    /// other; the outbox inside the state store ([`crate::outbox::StateOutbox`])
    /// does them in one transaction.
    fn record_and_publish<'a>(
        &'a self,
        state: &'a dyn StateStore,
        dispatch: Dispatch,
    ) -> BoxFuture<'a, Result<DispatchResult, DispatchError>> {
        Box::pin(record_then_publish(self, state, dispatch))
    }

    /// Where published messages wait (what `dispatch --tail` says of a queued dispatch).
    fn destination(&self) -> QueueDestination {
        QueueDestination::Memory
    }
}

/// Where a [`DispatchQueue`] keeps the messages it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueDestination {
    /// The durable local outbox at this path ([`crate::outbox`]).
    Outbox(std::path::PathBuf),
    /// The SQS queue of this URL.
    Sqs(String),
    /// In memory (tests).
    Memory,
}

impl QueueDestination {
    /// `{"queue":"outbox","outbox":PATH}`, `{"queue":"sqs","queue_url":URL}` or
    /// `{"queue":"memory"}`.
    pub fn to_json(&self) -> serde_json::Map<String, Value> {
        let mut fields = serde_json::Map::new();
        let (kind, detail) = match self {
            QueueDestination::Outbox(path) => {
                ("outbox", Some(("outbox", path.display().to_string())))
            }
            QueueDestination::Sqs(url) => ("sqs", Some(("queue_url", url.clone()))),
            QueueDestination::Memory => ("memory", None),
        };
        fields.insert("queue".to_owned(), Value::String(kind.to_owned()));
        if let Some((name, value)) = detail {
            fields.insert(name.to_owned(), Value::String(value));
        }
        fields
    }
}

/// An in-memory queue, for unit tests only (`serve` and the CLI use the
/// durable `file_outbox::SqliteOutbox` when no queue is configured).
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
        let config = astrolift_store::load_sdk_config().await;
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
            .map_err(|e| DispatchError::Queue(describe_sdk_error("SQS", "CreateQueue", &e)))?;
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
            .map_err(|e| DispatchError::Queue(describe_sdk_error("SQS", "ReceiveMessage", &e)))?;
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
    fn destination(&self) -> QueueDestination {
        QueueDestination::Sqs(self.queue_url.clone())
    }

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
                .map_err(|e| DispatchError::Queue(describe_sdk_error("SQS", "SendMessage", &e)))?;
            Ok(())
        })
    }
}
