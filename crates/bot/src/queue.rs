//! Where sync jobs wait: an SQS FIFO queue on AWS, an in-process queue in
//! `serve`, a recording queue in tests. Every implementation keeps one
//! repository's jobs in order and runs different repositories independently.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use astrolift_store::BoxFuture;
use tokio::sync::mpsc;

use crate::job::SyncJob;

/// Why a job could not be queued (the webhook answers 503 and GitHub's
/// redelivery, or the operator's, tries again).
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("cannot send the job to SQS: {0}")]
    Sqs(String),
    #[error("the in-process queue of repository {0} is full")]
    Full(u64),
    #[error("the in-process queue is closed")]
    Closed,
    #[error("cannot encode the job: {0}")]
    Encode(#[from] serde_json::Error),
}

/// A queue of sync jobs.
pub trait JobQueue: Send + Sync + fmt::Debug {
    /// Queues `job`; one repository's jobs come out in the order they went in.
    fn enqueue<'a>(&'a self, job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>>;
}

/// The SQS FIFO sync queue: MessageGroupId = repository id (one repository
/// syncs in order), MessageDeduplicationId = delivery id (a delivery sent
/// twice within SQS's 5-minute window is queued once).
#[derive(Debug, Clone)]
pub struct SqsJobQueue {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsJobQueue {
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }
}

impl JobQueue for SqsJobQueue {
    fn enqueue<'a>(&'a self, job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>> {
        Box::pin(async move {
            let body = serde_json::to_string(job)?;
            self.client
                .send_message()
                .queue_url(&self.queue_url)
                .message_group_id(job.repository_id.to_string())
                .message_deduplication_id(&job.delivery_id)
                .message_body(body)
                .send()
                .await
                .map_err(|e| {
                    QueueError::Sqs(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())
                })?;
            Ok(())
        })
    }
}

/// Records jobs and runs nothing: for tests and benchmarks of ingress.
#[derive(Debug, Default)]
pub struct RecordingJobQueue {
    jobs: Mutex<Vec<SyncJob>>,
}

impl RecordingJobQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// The jobs queued so far, oldest first.
    pub fn jobs(&self) -> Vec<SyncJob> {
        self.jobs.lock().map(|j| j.clone()).unwrap_or_default()
    }
}

impl JobQueue for RecordingJobQueue {
    fn enqueue<'a>(&'a self, job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>> {
        Box::pin(async move {
            self.jobs
                .lock()
                .map_err(|_| QueueError::Closed)?
                .push(job.clone());
            Ok(())
        })
    }
}

/// Runs one job; the in-process queue calls it.
pub type JobHandler = Arc<dyn Fn(SyncJob) -> BoxFuture<'static, ()> + Send + Sync>;

/// Jobs waiting per repository before the queue refuses more (bounded memory).
pub const LOCAL_QUEUE_CAPACITY: usize = 256;

/// The in-process queue of `serve`: one worker task per repository, which
/// runs that repository's jobs one at a time, in order; repositories run
/// concurrently. Each repository's backlog is bounded.
pub struct LocalJobQueue {
    handler: JobHandler,
    workers: Mutex<HashMap<u64, mpsc::Sender<SyncJob>>>,
}

impl fmt::Debug for LocalJobQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalJobQueue").finish_non_exhaustive()
    }
}

impl LocalJobQueue {
    /// A queue that runs each job with `handler` (on the current Tokio runtime).
    pub fn new(handler: JobHandler) -> Self {
        Self {
            handler,
            workers: Mutex::new(HashMap::new()),
        }
    }

    fn worker(&self, repository_id: u64) -> Result<mpsc::Sender<SyncJob>, QueueError> {
        let mut workers = self.workers.lock().map_err(|_| QueueError::Closed)?;
        if let Some(sender) = workers.get(&repository_id).filter(|s| !s.is_closed()) {
            return Ok(sender.clone());
        }
        let (sender, mut receiver) = mpsc::channel::<SyncJob>(LOCAL_QUEUE_CAPACITY);
        let handler = Arc::clone(&self.handler);
        tokio::spawn(async move {
            while let Some(job) = receiver.recv().await {
                handler(job).await;
            }
        });
        workers.insert(repository_id, sender.clone());
        Ok(sender)
    }
}

impl JobQueue for LocalJobQueue {
    fn enqueue<'a>(&'a self, job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>> {
        Box::pin(async move {
            let sender = self.worker(job.repository_id)?;
            sender.try_send(job.clone()).map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => QueueError::Full(job.repository_id),
                mpsc::error::TrySendError::Closed(_) => QueueError::Closed,
            })
        })
    }
}
