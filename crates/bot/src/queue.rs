//! Where sync jobs wait: an SQS FIFO queue on AWS, the in-process lanes that
//! `serve`'s durable queue ([`crate::durable`]) runs its jobs in, a recording queue in
//! tests. Every implementation keeps the jobs
//! of one lane of a repository in order ([`SyncJob::lane`]: the registered
//! ref's pushes never wait behind forks or other branches) and runs
//! different lanes and repositories independently.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use astrolift_store::state::deliveries::DELIVERY_LEASE;
use astrolift_store::state::{DeliveryOutcome, StateStore, UnixSeconds};
use astrolift_store::{BoxFuture, StoreError};
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
    #[error("cannot record the job: {0}")]
    Store(#[from] astrolift_store::StoreError),
}

/// A webhook delivery recorded with its job ([`JobQueue::enqueue_delivery`]).
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    pub id: &'a str,
    pub now: UnixSeconds,
    /// How long its id is remembered.
    pub ttl: Duration,
}

/// Why a delivery's job was not queued (the webhook answers 503).
#[derive(Debug, thiserror::Error)]
pub enum DeliveryQueueError {
    #[error("cannot record the delivery: {0}")]
    Record(StoreError),
    #[error("cannot queue the sync job: {0}")]
    Queue(QueueError),
}

/// A queue of sync jobs.
pub trait JobQueue: Send + Sync + fmt::Debug {
    /// Queues `job`; the jobs of one lane of a repository come out in the
    /// order they went in.
    fn enqueue<'a>(&'a self, job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>>;

    /// Records `delivery` in `state` and queues its job, once: a duplicate delivery
    /// queues nothing, and a job that cannot be queued leaves its delivery forgotten
    /// again, so that a redelivery is processed. By default the delivery's conditional
    /// write, then [`Self::enqueue`]; `serve`'s durable queue records both in one
    /// transaction ([`crate::durable`]).
    fn enqueue_delivery<'a>(
        &'a self,
        state: &'a dyn StateStore,
        delivery: Delivery<'a>,
        job: &'a SyncJob,
    ) -> BoxFuture<'a, Result<DeliveryOutcome, DeliveryQueueError>> {
        Box::pin(record_then_enqueue(self, state, delivery, job))
    }
}

/// [`JobQueue::enqueue_delivery`] for a queue that does not record deliveries itself.
pub(crate) async fn record_then_enqueue<Q: JobQueue + ?Sized>(
    queue: &Q,
    state: &dyn StateStore,
    delivery: Delivery<'_>,
    job: &SyncJob,
) -> Result<DeliveryOutcome, DeliveryQueueError> {
    let recorded = state
        .record_delivery(delivery.id, delivery.now, delivery.ttl)
        .await
        .map_err(DeliveryQueueError::Record)?;
    if recorded == DeliveryOutcome::Duplicate {
        return Ok(recorded);
    }
    if let Err(error) = queue.enqueue(job).await {
        forget_unqueued_delivery(state, delivery.id).await;
        return Err(DeliveryQueueError::Queue(error));
    }
    Ok(DeliveryOutcome::New)
}

/// Forgets a recorded delivery whose job was not queued, so that its redelivery (or the next
/// reconcile pass) queues it. If even that fails, the log says what the sender sees.
pub(crate) async fn forget_unqueued_delivery(state: &dyn StateStore, delivery_id: &str) {
    if let Err(error) = state.forget_delivery(delivery_id).await {
        tracing::error!(
            %error,
            delivery = %delivery_id,
            lease_seconds = DELIVERY_LEASE.as_secs(),
            "cannot forget the delivery of a job not queued: for its lease, a redelivery is \
             answered `duplicate` and reconcile takes the ref as queued"
        );
    }
}

/// The SQS FIFO sync queue: MessageGroupId = repository id and lane
/// ([`SyncJob::message_group_id`]: each lane of a repository syncs in order),
/// MessageDeduplicationId = delivery id (a delivery sent twice within SQS's
/// 5-minute window is queued once).
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
                .message_group_id(job.message_group_id())
                .message_deduplication_id(&job.delivery_id)
                .message_body(body)
                .send()
                .await
                .map_err(|e| {
                    QueueError::Sqs(astrolift_store::describe_sdk_error(
                        "SQS",
                        "SendMessage",
                        &e,
                    ))
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

/// A queue set once after it is built: what `serve`'s runner queues dependents' re-syncs on,
/// since the in-process queue that runs them is built from the runner. Refuses jobs
/// ([`QueueError::Closed`]) until it is set.
#[derive(Debug, Default)]
pub struct LateJobQueue {
    queue: std::sync::OnceLock<Arc<dyn JobQueue>>,
}

impl LateJobQueue {
    /// Sets the queue jobs go to; a second call is ignored.
    pub fn set(&self, queue: Arc<dyn JobQueue>) {
        let _ = self.queue.set(queue);
    }
}

impl JobQueue for LateJobQueue {
    fn enqueue<'a>(&'a self, job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>> {
        Box::pin(async move {
            let queue = self.queue.get().ok_or(QueueError::Closed)?;
            queue.enqueue(job).await
        })
    }

    fn enqueue_delivery<'a>(
        &'a self,
        state: &'a dyn StateStore,
        delivery: Delivery<'a>,
        job: &'a SyncJob,
    ) -> BoxFuture<'a, Result<DeliveryOutcome, DeliveryQueueError>> {
        match self.queue.get() {
            Some(queue) => queue.enqueue_delivery(state, delivery, job),
            None => Box::pin(record_then_enqueue(self, state, delivery, job)),
        }
    }
}

/// Runs one job; the in-process queue calls it.
pub type JobHandler<J = SyncJob> = Arc<dyn Fn(J) -> BoxFuture<'static, ()> + Send + Sync>;

/// Jobs waiting per lane before the queue refuses more (bounded memory).
pub const LOCAL_QUEUE_CAPACITY: usize = 256;

/// How long a lane's worker waits for another job before it stops.
pub const LOCAL_WORKER_IDLE: Duration = Duration::from_secs(60);

/// A lane of a repository: (repository id, [`SyncJob::lane`]).
type LaneKey = (u64, String);

/// What the in-process queue holds: a [`SyncJob`], or a job of the durable queue
/// ([`crate::durable`]) that carries its id beside it.
pub trait LaneItem: Send + 'static {
    /// The sync job.
    fn sync_job(&self) -> &SyncJob;
}

impl LaneItem for SyncJob {
    fn sync_job(&self) -> &SyncJob {
        self
    }
}

/// A lane's worker: where its jobs go, and how many wait (the bound is checked here, not
/// by the channel, so that jobs resumed from a durable queue are never refused).
struct Lane<J> {
    sender: mpsc::UnboundedSender<J>,
    waiting: Arc<AtomicUsize>,
}

type Workers<J> = Arc<Mutex<HashMap<LaneKey, Lane<J>>>>;

/// The in-process lanes (under `serve`'s durable queue): one worker task per lane of a
/// repository, which runs that lane's jobs one at a time, in order; lanes
/// and repositories run concurrently. Each lane's backlog is bounded
/// ([`LOCAL_QUEUE_CAPACITY`]), and a worker idle for [`LOCAL_WORKER_IDLE`] stops and is
/// forgotten, so the queue holds only the lanes that have work.
pub struct LocalJobQueue<J: LaneItem = SyncJob> {
    handler: JobHandler<J>,
    idle: Duration,
    workers: Workers<J>,
}

impl<J: LaneItem> fmt::Debug for LocalJobQueue<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalJobQueue").finish_non_exhaustive()
    }
}

impl<J: LaneItem> LocalJobQueue<J> {
    /// A queue that runs each job with `handler` (on the current Tokio runtime).
    pub fn new(handler: JobHandler<J>) -> Self {
        Self::with_idle(handler, LOCAL_WORKER_IDLE)
    }

    /// A queue whose workers stop after `idle` without a job.
    pub fn with_idle(handler: JobHandler<J>, idle: Duration) -> Self {
        Self {
            handler,
            idle,
            workers: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Workers alive now (one per lane with work, or recently with work).
    pub fn workers(&self) -> usize {
        self.workers.lock().map(|w| w.len()).unwrap_or(0)
    }

    /// Sends `job` to its lane's worker, starting one if there is none; refused
    /// ([`QueueError::Full`]) when [`LOCAL_QUEUE_CAPACITY`] jobs of its lane wait already.
    pub fn push(&self, job: &J) -> Result<(), QueueError>
    where
        J: Clone,
    {
        self.send(job.clone(), true)
    }

    /// [`Self::push`] of a job the caller owns (no copy).
    pub fn push_owned(&self, job: J) -> Result<(), QueueError> {
        self.send(job, true)
    }

    /// Sends `job` to its lane's worker whatever its backlog: a job accepted earlier
    /// (resumed from a durable queue), which was counted against the bound then.
    pub fn push_resumed(&self, job: J) -> Result<(), QueueError> {
        self.send(job, false)
    }

    /// The send happens under the lock, so that a worker stopping for idleness
    /// (which also takes the lock) can never drop a job sent to it.
    fn send(&self, job: J, bounded: bool) -> Result<(), QueueError> {
        let mut workers = self.workers.lock().map_err(|_| QueueError::Closed)?;
        let sync = job.sync_job();
        let key = (sync.repository_id, sync.lane());
        let repository_id = sync.repository_id;
        let lane = match workers.get(&key).filter(|l| !l.sender.is_closed()) {
            Some(lane) => lane,
            None => {
                let lane = self.start_worker(key.clone());
                workers.insert(key.clone(), lane);
                workers.get(&key).ok_or(QueueError::Closed)?
            }
        };
        if bounded && lane.waiting.load(Ordering::SeqCst) >= LOCAL_QUEUE_CAPACITY {
            return Err(QueueError::Full(repository_id));
        }
        // Counted before it is sent: the worker takes it off the count once received.
        lane.waiting.fetch_add(1, Ordering::SeqCst);
        lane.sender.send(job).map_err(|_| {
            lane.waiting.fetch_sub(1, Ordering::SeqCst);
            QueueError::Closed
        })
    }

    fn start_worker(&self, key: LaneKey) -> Lane<J> {
        let (sender, mut receiver) = mpsc::unbounded_channel::<J>();
        let waiting = Arc::new(AtomicUsize::new(0));
        let handler = Arc::clone(&self.handler);
        let workers = Arc::clone(&self.workers);
        let idle = self.idle;
        let counted = Arc::clone(&waiting);
        tokio::spawn(async move {
            loop {
                match tokio::time::timeout(idle, receiver.recv()).await {
                    Ok(Some(job)) => {
                        counted.fetch_sub(1, Ordering::SeqCst);
                        handler(job).await;
                    }
                    Ok(None) => return,
                    Err(_) => {
                        // Senders send under this lock: if nothing is queued
                        // now, nothing can arrive before the entry is gone.
                        let Ok(mut workers) = workers.lock() else {
                            return;
                        };
                        if receiver.is_empty() {
                            workers.remove(&key);
                            return;
                        }
                    }
                }
            }
        });
        Lane { sender, waiting }
    }
}

impl JobQueue for LocalJobQueue<SyncJob> {
    fn enqueue<'a>(&'a self, job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>> {
        Box::pin(async move { self.push(job) })
    }
}
