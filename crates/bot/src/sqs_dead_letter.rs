//! The sync queue's SQS dead-letter queue on AWS, the Lambda side of the dead letter
//! (docs/operations.md, "Drain or redrive the DLQ"): what `astrolift jobs list|retry
//! --queue-url` read and redrive.
//!
//! - **Listing does not consume.** Messages are received with a short visibility timeout,
//!   then made visible again at once (`ChangeMessageVisibility` to 0); nothing is deleted.
//! - **A redrive sends, then deletes.** Each job goes back to the source queue with its
//!   message group (its lane keeps its order) and a fresh deduplication id (the delivery id
//!   it first carried may still be in SQS's 5-minute window, which would drop it); only
//!   once SQS accepted it is it deleted from the DLQ. A stop in between leaves the job in
//!   both queues: it runs twice, which a sync allows (the same end state).
//! - `StartMessageMoveTask`, the AWS-native redrive, is not used: it moves everything or
//!   nothing (no single message), and the local AWS mock the tests run on lacks it.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use serde::Serialize;

use crate::job::{QueuedJob, SyncJob};

/// The most messages one listing or redrive reads by default (it stops earlier when the
/// queue is empty): 100 receives of 10. [`SqsDeadLetterQueue::with_limit`] sets another.
pub const MAX_DEAD_LETTERS: usize = 1000;

/// How long a listed message is hidden before it is made visible again; the receive that
/// lists it must end within it.
const LIST_VISIBILITY_SECS: i32 = 30;

/// How long a message being redriven is hidden: SendMessage and DeleteMessage in between.
const REDRIVE_VISIBILITY_SECS: i32 = 60;

/// SQS's most messages per ReceiveMessage.
const RECEIVE_BATCH: usize = 10;

/// Why a listing or redrive failed. Messages name the queue URL and SQS's answer only.
#[derive(Debug, thiserror::Error)]
pub enum DeadLetterQueueError {
    /// An SQS call failed (in the store's words, so the CLI's hint finds the AWS cause).
    #[error("{0}")]
    Sqs(String),
    /// No queue names this DLQ in its redrive policy.
    #[error(
        "no queue sends its failed messages to {0}: name the queue to redrive to with --to-queue-url"
    )]
    NoSource(String),
    /// Several queues name this DLQ; which one a job came from is not known.
    #[error(
        "{count} queues send their failed messages to {dlq}: name the one to redrive to with --to-queue-url"
    )]
    SeveralSources { dlq: String, count: usize },
    /// No message of the DLQ has this id.
    #[error(
        "no message {0} in the dead-letter queue (`astrolift jobs list --queue-url` shows them)"
    )]
    NotFound(String),
}

/// One message of the DLQ, as `jobs list --queue-url --format json` prints it
/// (docs/reference.md §3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeadLetter {
    /// SQS's message id: what `jobs retry --queue-url MESSAGE_ID` takes.
    pub message_id: String,
    /// `ApproximateReceiveCount`: the receives on the source queue and since.
    pub receive_count: u32,
    /// The FIFO message group (repository id and lane), when the queue is FIFO.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_group_id: Option<String>,
    /// The sync job; `None` for a body that is not one.
    pub job: Option<SyncJob>,
    /// Why the body is not a sync job (absent when it is one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl DeadLetter {
    fn of(message: &Message) -> Self {
        let attribute = |name: MessageSystemAttributeName| {
            message
                .attributes()
                .and_then(|attributes| attributes.get(&name))
                .cloned()
        };
        let (job, error) = match QueuedJob::parse(message.body().unwrap_or_default()) {
            Ok(QueuedJob::Sync(job)) => (Some(*job), None),
            Ok(QueuedJob::Report(_)) => (None, Some("a report job, not a sync job".to_owned())),
            Err(error) => (None, Some(error.to_string())),
        };
        Self {
            message_id: message.message_id().unwrap_or_default().to_owned(),
            receive_count: attribute(MessageSystemAttributeName::ApproximateReceiveCount)
                .and_then(|count| count.parse().ok())
                .unwrap_or(0),
            message_group_id: attribute(MessageSystemAttributeName::MessageGroupId),
            job,
            error,
        }
    }
}

/// Which messages a redrive sends back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redrive {
    /// The one with this message id.
    Message(String),
    /// Every message (up to the queue's limit, [`MAX_DEAD_LETTERS`] by default).
    All,
}

/// The dead-letter queue at one URL.
#[derive(Debug, Clone)]
pub struct SqsDeadLetterQueue {
    client: aws_sdk_sqs::Client,
    url: String,
    /// The most messages one listing or redrive reads.
    limit: usize,
}

impl SqsDeadLetterQueue {
    pub fn new(client: aws_sdk_sqs::Client, url: impl Into<String>) -> Self {
        Self {
            client,
            url: url.into(),
            limit: MAX_DEAD_LETTERS,
        }
    }

    /// The same queue, reading at most `limit` messages per listing or redrive.
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// The queue at `url` with the standard AWS configuration (`AWS_ENDPOINT_URL` included).
    pub async fn from_env(url: impl Into<String>) -> Self {
        let config = astrolift_store::load_sdk_config().await;
        Self::new(aws_sdk_sqs::Client::new(&config), url)
    }

    /// The messages waiting, oldest first per message group; none is consumed.
    pub async fn list(&self) -> Result<Vec<DeadLetter>, DeadLetterQueueError> {
        let messages = self.receive_all(LIST_VISIBILITY_SECS).await?;
        let listed = messages.iter().map(DeadLetter::of).collect();
        self.release(&messages).await?;
        Ok(listed)
    }

    /// Sends the messages `which` names back to `to` (else the queue whose redrive policy
    /// names this DLQ), then deletes them here; returns what was sent, in order.
    pub async fn redrive(
        &self,
        which: &Redrive,
        to: Option<&str>,
    ) -> Result<Vec<DeadLetter>, DeadLetterQueueError> {
        let target = match to {
            Some(url) => url.to_owned(),
            None => self.source_queue().await?,
        };
        match which {
            Redrive::All => self.redrive_all(&target).await,
            Redrive::Message(id) => self.redrive_one(id, &target).await.map(|sent| vec![sent]),
        }
    }

    /// A batch at a time, each sent back before the next is received: a FIFO queue gives
    /// no more of a message group while some of it is received and not deleted.
    async fn redrive_all(&self, target: &str) -> Result<Vec<DeadLetter>, DeadLetterQueueError> {
        let mut sent = Vec::new();
        while sent.len() < self.limit {
            let room = self.limit - sent.len();
            let batch = self.receive_batch(REDRIVE_VISIBILITY_SECS, room).await?;
            if batch.is_empty() {
                break;
            }
            for message in &batch {
                self.send_back(message, target).await?;
                sent.push(DeadLetter::of(message));
            }
        }
        Ok(sent)
    }

    async fn redrive_one(
        &self,
        id: &str,
        target: &str,
    ) -> Result<DeadLetter, DeadLetterQueueError> {
        let messages = self.receive_all(REDRIVE_VISIBILITY_SECS).await?;
        let (chosen, others): (Vec<&Message>, Vec<&Message>) = messages
            .iter()
            .partition(|message| message.message_id() == Some(id));
        self.release(others).await?;
        let Some(message) = chosen.first() else {
            return Err(DeadLetterQueueError::NotFound(id.to_owned()));
        };
        self.send_back(message, target).await?;
        Ok(DeadLetter::of(message))
    }

    /// The queue whose redrive policy names this DLQ (`ListDeadLetterSourceQueues`).
    async fn source_queue(&self) -> Result<String, DeadLetterQueueError> {
        let answer = self
            .client
            .list_dead_letter_source_queues()
            .queue_url(&self.url)
            .send()
            .await
            .map_err(|e| sqs_error("ListDeadLetterSourceQueues", &e))?;
        match answer.queue_urls() {
            [url] => Ok(url.clone()),
            [] => Err(DeadLetterQueueError::NoSource(self.url.clone())),
            urls => Err(DeadLetterQueueError::SeveralSources {
                dlq: self.url.clone(),
                count: urls.len(),
            }),
        }
    }

    /// Receives until the queue answers none (or the limit), each message once.
    async fn receive_all(&self, visibility: i32) -> Result<Vec<Message>, DeadLetterQueueError> {
        let mut messages: Vec<Message> = Vec::new();
        let mut seen = HashSet::new();
        while messages.len() < self.limit {
            let room = self.limit - messages.len();
            let batch = match self.receive_batch(visibility, room).await {
                Ok(batch) => batch,
                Err(error) => {
                    // What was received so far is made visible again before reporting.
                    let _ = self.release(&messages).await;
                    return Err(error);
                }
            };
            let before = messages.len();
            for message in batch {
                if seen.insert(message.message_id().unwrap_or_default().to_owned()) {
                    messages.push(message);
                }
            }
            if messages.len() == before {
                break;
            }
        }
        Ok(messages)
    }

    /// One ReceiveMessage of up to 10 messages (and `room`), hidden for `visibility` seconds.
    async fn receive_batch(
        &self,
        visibility: i32,
        room: usize,
    ) -> Result<Vec<Message>, DeadLetterQueueError> {
        // At most 10: the conversion cannot fail.
        let most = i32::try_from(room.min(RECEIVE_BATCH)).unwrap_or(1);
        let received = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(most)
            .visibility_timeout(visibility)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .map_err(|e| sqs_error("ReceiveMessage", &e))?;
        Ok(received.messages().to_vec())
    }

    /// Makes `messages` visible again at once.
    async fn release<'m>(
        &self,
        messages: impl IntoIterator<Item = &'m Message>,
    ) -> Result<(), DeadLetterQueueError> {
        for message in messages {
            let Some(receipt) = message.receipt_handle() else {
                continue;
            };
            self.client
                .change_message_visibility()
                .queue_url(&self.url)
                .receipt_handle(receipt)
                .visibility_timeout(0)
                .send()
                .await
                .map_err(|e| sqs_error("ChangeMessageVisibility", &e))?;
        }
        Ok(())
    }

    /// SendMessage to `target` (same group, fresh deduplication id), then DeleteMessage here.
    async fn send_back(&self, message: &Message, target: &str) -> Result<(), DeadLetterQueueError> {
        let letter = DeadLetter::of(message);
        let group = letter
            .message_group_id
            .clone()
            .or_else(|| letter.job.as_ref().map(SyncJob::message_group_id));
        let mut send = self
            .client
            .send_message()
            .queue_url(target)
            .message_body(message.body().unwrap_or_default());
        if let Some(group) = group.filter(|_| target.ends_with(".fifo")) {
            send = send
                .message_group_id(group)
                .message_deduplication_id(redrive_deduplication_id(&letter.message_id));
        }
        send.send()
            .await
            .map_err(|e| sqs_error("SendMessage", &e))?;
        if let Some(receipt) = message.receipt_handle() {
            self.client
                .delete_message()
                .queue_url(&self.url)
                .receipt_handle(receipt)
                .send()
                .await
                .map_err(|e| sqs_error("DeleteMessage", &e))?;
        }
        Ok(())
    }
}

/// `redrive-<message id>-<unix ms>`: new for every redrive, so a job redriven twice within
/// SQS's deduplication window is still queued (at most 128 characters: a message id is 100
/// at most).
fn redrive_deduplication_id(message_id: &str) -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let id: String = message_id.chars().take(100).collect();
    format!("redrive-{id}-{millis}")
}

fn sqs_error<E, R>(
    operation: &str,
    error: &aws_sdk_sqs::error::SdkError<E, R>,
) -> DeadLetterQueueError
where
    E: aws_sdk_sqs::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + 'static,
{
    DeadLetterQueueError::Sqs(astrolift_store::describe_sdk_error("SQS", operation, error))
}
