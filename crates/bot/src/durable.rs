//! `serve`'s durable job queue (docs/operations.md, "Failed jobs on serve"): every job
//! is recorded in the state store (`astrolift_store::state::jobs`) before it is queued, so
//! that a job accepted with `202` survives `kill -9` and a restart.
//!
//! - **Queued:** the job takes its place in its lane of the in-process queue
//!   ([`LocalJobQueue`]), which runs each lane in order (at most
//!   [`LOCAL_QUEUE_CAPACITY`](crate::queue::LOCAL_QUEUE_CAPACITY) waiting per lane; a job
//!   over the bound is refused before its record is written, and a webhook's is answered
//!   as other queues answer it, its delivery first, so that a redelivery is still a
//!   duplicate), then is recorded `queued` (a
//!   webhook's with its delivery, in one transaction: `JobStore::put_job_for_delivery`), and
//!   only then answered. The lane's worker waits for that write and is handed the record as
//!   written, so a job's first attempt reads nothing back; a job whose write recorded
//!   nothing (a duplicate delivery) is dropped from its lane. Joining the lane before the
//!   write keeps a caller that goes away meanwhile (a webhook whose sender hung up) from
//!   leaving a recorded job in no lane, with no task spawned per job to carry the write.
//! - **Running:** each attempt records `running` and its number; at most `syncs` attempts
//!   run at once across lanes. A success deletes the record. The delivery that made the job
//!   moves with it, in the same write (`JobStore::update_job_marking`,
//!   `JobStore::delete_job_marking`): `running`, then `succeeded`; `queued` while a retry
//!   waits (a redelivery is a duplicate); `failed` with the dead letter (a redelivery queues
//!   it again). So a job that succeeds at once costs three writes, the record with its
//!   delivery, `running`, the delete: no more than marking its delivery alone would.
//!   Because every attempt is recorded `running`
//!   before it runs, a start counts the attempts a stop cut short: a job found `running`
//!   with no attempt left (one that stops the process) is dead-lettered instead of run
//!   again. The attempt is
//!   [`SyncRunner::perform_unmarked`](crate::SyncRunner::perform_unmarked), which leaves the
//!   delivery to the queue.
//! - **Retried:** a failed attempt waits as [`RetryPolicy`] says (no sync slot held), then
//!   runs again; when the policy gives up the record stays, `failed`, with the last error:
//!   the dead letter, which `astrolift jobs list` shows, the check run reports with a
//!   **Re-run** button (the [`DeadLetters`] hook), and `astrolift jobs retry` or the button
//!   queue again ([`crate::dead_letter`]).
//! - **Resumed:** at start, every `queued` and `running` record (a `running` one was cut
//!   short by a stop) is queued again in id order, which is the order jobs were accepted;
//!   then, every [`SWEEP_INTERVAL`], the `queued` records this process does not hold
//!   (those `astrolift jobs retry` queued) join their lanes.
//! - **Drained:** [`DurableJobQueue::drain`] refuses new jobs, starts no more attempts, waits
//!   for the running ones up to a grace time and reports what waits for the next start.

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use astrolift_store::state::{
    DeliveryMark, DeliveryOutcome, DeliveryState, JobJson, JobRecord, JobState, StateStore,
};
use astrolift_store::{BoxFuture, StoreError};
use tokio::sync::{Notify, Semaphore, oneshot, watch};

use crate::ingress::now;
use crate::job::SyncJob;
use crate::job_error::JobError;
use crate::queue::{
    Delivery, DeliveryQueueError, JobHandler, JobQueue, LaneItem, LocalJobQueue, QueueError,
    record_then_enqueue,
};
use crate::retry::{RetryPolicy, jitter};

/// How often the queue looks for jobs queued by another process (`astrolift jobs retry`).
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(5);

/// A job in its lane: the record's id beside the job.
#[derive(Debug)]
pub(crate) struct DurableJob {
    id: String,
    job: SyncJob,
    record: Record,
}

/// How a job in its lane comes by its record.
#[derive(Debug)]
enum Record {
    /// Resumed or swept from the store: read again before it runs (another process may have
    /// retried or dead-lettered it).
    Stored,
    /// Accepted by this process, which joined its lane before the record's write, so that
    /// the lane's order is the order jobs were accepted in and no task of its own carries
    /// the write: sent the record as written once it is (so that its first attempt reads
    /// nothing), `None` when nothing was recorded (a duplicate delivery, a store that
    /// failed), and dropped unsent when the accepting caller went away during the write.
    /// Then the record is read like a stored one. SQLite runs its calls in the order they
    /// came, so that read sees whatever the write did; on a store where it may not, a
    /// record the read missed is a `queued` one this process no longer holds, which the
    /// next sweep takes.
    Accepted(oneshot::Receiver<Option<JobRecord>>),
}

impl LaneItem for DurableJob {
    fn sync_job(&self) -> &SyncJob {
        &self.job
    }
}

/// Runs one attempt of a job (`serve`: [`crate::SyncRunner::perform_unmarked`]: the queue
/// writes the delivery's state itself).
pub type Attempt = Arc<dyn Fn(SyncJob) -> BoxFuture<'static, Result<(), JobError>> + Send + Sync>;

/// Told of each job the retry policy gave up on, with its last error, once it is recorded
/// `failed` (`serve`: [`crate::SyncRunner::report_dead_letter`], the check run with its
/// **Re-run** button).
pub type DeadLetters =
    Arc<dyn Fn(SyncJob, JobRecord, JobError) -> BoxFuture<'static, ()> + Send + Sync>;

/// How a durable queue runs its jobs.
#[derive(Debug, Clone, Copy)]
pub struct DurableOptions {
    pub policy: RetryPolicy,
    /// Attempts running at once, across every lane.
    pub syncs: usize,
    /// How long a lane's worker waits for another job before it stops.
    pub idle: Duration,
    /// How often it looks for jobs queued by another process.
    pub sweep: Duration,
}

impl DurableOptions {
    /// `serve`'s: [`RetryPolicy::SERVE`], `syncs` at once.
    pub fn serve(syncs: usize) -> Self {
        DurableOptions {
            policy: RetryPolicy::SERVE,
            syncs,
            idle: crate::queue::LOCAL_WORKER_IDLE,
            sweep: SWEEP_INTERVAL,
        }
    }
}

/// What a drain left for the next start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Attempts still running when the grace time ran out.
    pub running: usize,
    /// Jobs recorded `queued` or `running`: what the next start resumes.
    pub waiting: usize,
}

/// What the lanes' handler shares with the queue.
struct Shared {
    store: Arc<dyn StateStore>,
    attempt: Attempt,
    dead_letters: Option<DeadLetters>,
    policy: RetryPolicy,
    syncs: Semaphore,
    /// Ids of the jobs this process holds (in a lane or running).
    held: Mutex<HashSet<String>>,
    /// Attempts running now.
    running: AtomicUsize,
    finished: Notify,
    closing: watch::Sender<bool>,
    ids: JobIds,
}

/// The durable queue of `serve`. Built with [`DurableJobQueue::start`].
pub struct DurableJobQueue {
    shared: Arc<Shared>,
    lanes: Arc<LocalJobQueue<DurableJob>>,
}

impl fmt::Debug for DurableJobQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableJobQueue").finish_non_exhaustive()
    }
}

impl DurableJobQueue {
    /// A queue on `store` that runs each job with `attempt` (and tells `dead_letters` of
    /// each one it gives up on), after resuming the jobs a stopped process left (returned:
    /// how many), and that sweeps for jobs queued by others every `options.sweep`. Call it
    /// before accepting webhooks, so resumed jobs keep their place ahead of new ones in
    /// each lane.
    pub async fn start(
        store: Arc<dyn StateStore>,
        attempt: Attempt,
        dead_letters: Option<DeadLetters>,
        options: DurableOptions,
    ) -> Result<(Arc<Self>, usize), StoreError> {
        let (closing, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            store,
            attempt,
            dead_letters,
            policy: options.policy,
            syncs: Semaphore::new(options.syncs.max(1)),
            held: Mutex::new(HashSet::new()),
            running: AtomicUsize::new(0),
            finished: Notify::new(),
            closing,
            ids: JobIds::default(),
        });
        let handler: JobHandler<DurableJob> = {
            let shared = Arc::clone(&shared);
            Arc::new(move |job| Box::pin(Arc::clone(&shared).run(job)))
        };
        let queue = Arc::new(DurableJobQueue {
            shared,
            lanes: Arc::new(LocalJobQueue::with_idle(handler, options.idle)),
        });
        let resumed = queue.resume(true).await?;
        let sweeper = Arc::downgrade(&queue);
        let mut closing = queue.shared.closing.subscribe();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(options.sweep) => {}
                    _ = closing.wait_for(|closing| *closing) => return,
                }
                let Some(queue) = sweeper.upgrade() else {
                    return;
                };
                if let Err(error) = queue.resume(false).await {
                    tracing::warn!(%error, "cannot look for queued jobs");
                }
            }
        });
        Ok((queue, resumed))
    }

    /// Queues the recorded jobs this process does not hold, in id order: `queued` ones,
    /// and at start (`at_start`) `running` ones too (their process stopped). Returns how
    /// many.
    async fn resume(&self, at_start: bool) -> Result<usize, StoreError> {
        let jobs = self.shared.store.jobs();
        // A sweep reads only the queued ones: the dead letter may be long.
        let records = jobs
            .list_jobs((!at_start).then_some(JobState::Queued))
            .await?;
        if let Some(last) = records.last() {
            self.shared.ids.after(&last.id);
        }
        let mut resumed = 0;
        for record in records {
            let waiting = match record.state {
                JobState::Queued => true,
                JobState::Running => at_start,
                JobState::Failed => false,
            };
            if !waiting || !self.shared.hold(&record.id) {
                continue;
            }
            // Listed before a job of this process finished and let go of it: only a job
            // still queued now is one to take.
            if !at_start {
                let current = jobs.get_job(&record.id).await;
                if !matches!(&current, Ok(Some(r)) if r.state == JobState::Queued) {
                    self.shared.release(&record.id);
                    continue;
                }
            }
            let job = match record.job.decode::<SyncJob>() {
                Ok(job) => job,
                Err(error) => {
                    let reason = format!("the recorded job cannot be read: {error}");
                    let id = record.id.clone();
                    self.shared.dead_letter(record, reason, None).await;
                    self.shared.release(&id);
                    continue;
                }
            };
            let id = record.id.clone();
            let resumed_job = DurableJob {
                id,
                job,
                record: Record::Stored,
            };
            if let Err(error) = self.lanes.push_resumed(resumed_job) {
                self.shared.release(&record.id);
                return Err(StoreError::Unavailable(error.to_string()));
            }
            resumed += 1;
        }
        Ok(resumed)
    }

    /// Refuses new jobs, starts no more attempts, and waits up to `grace` for the running
    /// ones; what is left is recorded and waits for the next start.
    pub async fn drain(&self, grace: Duration) -> Drained {
        self.shared.closing.send_replace(true);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let finished = self.shared.finished.notified();
            if self.shared.running.load(Ordering::SeqCst) == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, finished).await.is_err() {
                break;
            }
        }
        let running = self.shared.running.load(Ordering::SeqCst);
        // Only the states a start resumes: the dead letter may be long.
        let mut waiting = 0;
        for state in [JobState::Queued, JobState::Running] {
            match self.shared.store.jobs().list_jobs(Some(state)).await {
                Ok(jobs) => waiting += jobs.len(),
                Err(error) => tracing::warn!(%error, "cannot count the jobs left"),
            }
        }
        Drained { running, waiting }
    }

    /// Workers alive now (one per lane with work, or recently with work).
    pub fn workers(&self) -> usize {
        self.lanes.workers()
    }

    fn closing(&self) -> bool {
        *self.shared.closing.borrow()
    }

    /// A new job's record, held (so that a sweep never takes it as another's) and in its
    /// lane (so that its place there is taken now), before it is recorded; the sender
    /// gives the lane's worker the record once written. A job its lane refuses is neither
    /// held nor recorded.
    fn accept(
        &self,
        job: &SyncJob,
    ) -> Result<(JobRecord, oneshot::Sender<Option<JobRecord>>), QueueError> {
        if self.closing() {
            return Err(QueueError::Closed);
        }
        let record = queued_record(self.shared.ids.next(), JobJson::of(job)?);
        let (written, receiver) = oneshot::channel();
        let lane_job = DurableJob {
            id: record.id.clone(),
            job: job.clone(),
            record: Record::Accepted(receiver),
        };
        // Held from here until its worker is done with it (`Shared::run`).
        self.shared.hold(&record.id);
        if let Err(refused) = self.lanes.push_owned(lane_job) {
            self.shared.release(&record.id);
            return Err(refused);
        }
        Ok((record, written))
    }

    async fn record_and_queue(&self, job: &SyncJob) -> Result<(), QueueError> {
        let (record, written) = self.accept(job)?;
        let recorded = self.shared.store.jobs().put_job(&record).await;
        // Refused only when the worker is gone (its runtime shutting down): no one to tell.
        let _ = written.send(recorded.is_ok().then_some(record));
        Ok(recorded?)
    }

    /// Records `delivery` and the job in one transaction; the job waits in its lane for it.
    /// A lane at its bound answers a delivery as any queue does, the delivery first: a
    /// redelivery of one already queued or applied is still a duplicate, and a new one is
    /// refused and forgotten again.
    async fn record_delivery_and_queue(
        &self,
        delivery: Delivery<'_>,
        job: &SyncJob,
    ) -> Result<DeliveryOutcome, DeliveryQueueError> {
        let (record, written) = match self.accept(job) {
            Ok(accepted) => accepted,
            Err(QueueError::Full(_)) => {
                let state = self.shared.store.as_ref();
                return record_then_enqueue(self, state, delivery, job).await;
            }
            Err(refused) => return Err(DeliveryQueueError::Queue(refused)),
        };
        let recorded = self
            .shared
            .store
            .jobs()
            .put_job_for_delivery(delivery.id, delivery.now, delivery.ttl, &record)
            .await;
        let new = matches!(recorded, Ok(DeliveryOutcome::New));
        // As in `record_and_queue`.
        let _ = written.send(new.then_some(record));
        recorded.map_err(DeliveryQueueError::Record)
    }
}

/// The record of `job` (encoded), queued now as `id`.
fn queued_record(id: String, job: JobJson) -> JobRecord {
    let at = now();
    JobRecord {
        id,
        state: JobState::Queued,
        attempts: 0,
        job,
        queued_at: at,
        updated_at: at,
        error: None,
    }
}

impl JobQueue for DurableJobQueue {
    fn enqueue<'a>(&'a self, job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>> {
        Box::pin(self.record_and_queue(job))
    }

    /// The delivery is recorded in this queue's state store, with the job, in one
    /// transaction (`serve` builds its ingress and this queue on one store).
    fn enqueue_delivery<'a>(
        &'a self,
        _state: &'a dyn StateStore,
        delivery: Delivery<'a>,
        job: &'a SyncJob,
    ) -> BoxFuture<'a, Result<DeliveryOutcome, DeliveryQueueError>> {
        Box::pin(self.record_delivery_and_queue(delivery, job))
    }
}

impl Shared {
    /// Takes `id` as this process's; `false` when it holds it already.
    fn hold(&self, id: &str) -> bool {
        self.held
            .lock()
            .map(|mut held| held.insert(id.to_owned()))
            .unwrap_or(false)
    }

    fn release(&self, id: &str) {
        if let Ok(mut held) = self.held.lock() {
            held.remove(id);
        }
    }

    fn closing(&self) -> bool {
        *self.closing.borrow()
    }

    /// Runs a job's attempts to success or to the dead letter; a drain leaves it recorded.
    async fn run(self: Arc<Self>, queued: DurableJob) {
        let DurableJob { id, job, record } = queued;
        let recorded = match record {
            Record::Stored => None,
            Record::Accepted(written) => match written.await {
                Ok(Some(record)) => Some(record),
                // Not recorded: nothing to run.
                Ok(None) => {
                    self.release(&id);
                    return;
                }
                // Its caller went away during the write: read what it left.
                Err(_) => None,
            },
        };
        self.attempts(&id, &job, recorded).await;
        self.release(&id);
    }

    /// The attempts of job `id`; `recorded` is its record as this process wrote it when it
    /// accepted the job (taken, not read back), `None` for a resumed or swept one.
    async fn attempts(&self, id: &str, job: &SyncJob, recorded: Option<JobRecord>) {
        let jobs = self.store.jobs();
        let resumed = recorded.is_none();
        let recorded = match recorded {
            Some(record) => Ok(Some(record)),
            None => jobs.get_job(id).await,
        };
        let mut record = match recorded {
            Ok(Some(record)) if record.state != JobState::Failed => record,
            // Gone (retried by hand and already run) or dead-lettered meanwhile.
            Ok(_) => return,
            // Run it now, in its lane's order, rather than let a later sweep take it out of
            // order; its attempts count again from here.
            Err(error) => {
                tracing::warn!(%error, job_id = %id, "cannot read the job's record; running it as queued");
                queued_record(id.to_owned(), JobJson::of(job).unwrap_or_default())
            }
        };
        // Recorded `running` with no attempt left: a stop cut each of its attempts short
        // (a job that stops the process, say), so it is not run again.
        if resumed && record.state == JobState::Running && record.attempts >= self.policy.attempts {
            let reason = format!(
                "the process stopped during each of its {} attempts",
                record.attempts
            );
            self.give_up(record, job, reason, JobError::Interrupted)
                .await;
            return;
        }
        let mut closing = self.closing.subscribe();
        loop {
            let slot = tokio::select! {
                slot = self.syncs.acquire() => slot.ok(),
                _ = closing.wait_for(|closing| *closing) => return,
            };
            // Counted before the check, so that a drain (which closes, then counts) either
            // sees this attempt running or this attempt sees it closing.
            self.running.fetch_add(1, Ordering::SeqCst);
            if self.closing() {
                self.running.fetch_sub(1, Ordering::SeqCst);
                self.finished.notify_waiters();
                return;
            }
            record.attempts = record.attempts.saturating_add(1);
            record.state = JobState::Running;
            record.updated_at = now();
            // The marker is sent before the attempt starts (a join polls its futures in
            // order, and the SQLite store queues a call at its first poll), so whatever is
            // asked of the store after the attempt started sees it `running`; but the slot
            // is not held for its commit, which a burst of short attempts would wait on.
            let attempt = async {
                let outcome = (self.attempt)(job.clone()).await;
                drop(slot);
                outcome
            };
            let ((), outcome) = tokio::join!(
                self.write_marking(&record, job, DeliveryState::Running),
                attempt
            );
            // Settled before the attempt stops counting as running, so that a drain that
            // sees none running counts what is left correctly.
            let next = self.settle(&mut record, job, outcome).await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            self.finished.notify_waiters();
            let Some(wait) = next else {
                return;
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = closing.wait_for(|closing| *closing) => return,
            }
        }
    }

    /// Records how an attempt ended: a success deletes the job; a failure the policy
    /// retries is `queued` again with its error (the wait before the next attempt
    /// returned); one it gives up on is dead-lettered.
    async fn settle(
        &self,
        record: &mut JobRecord,
        job: &SyncJob,
        outcome: Result<(), JobError>,
    ) -> Option<Duration> {
        let error = match outcome {
            Ok(()) => {
                let succeeded = mark(job, DeliveryState::Succeeded);
                let deleted = self.store.jobs().delete_job_marking(&record.id, succeeded);
                if let Err(error) = deleted.await {
                    tracing::warn!(%error, job_id = %record.id, "cannot delete a finished job; the next start runs it again");
                }
                return None;
            }
            Err(error) => error,
        };
        let Some(wait) = self.policy.wait_after(&error, record.attempts, jitter()) else {
            self.give_up(record.clone(), job, error.to_string(), error)
                .await;
            return None;
        };
        record.state = JobState::Queued;
        record.error = Some(error.to_string());
        record.updated_at = now();
        // Its delivery stays a duplicate while the job waits to be tried again.
        self.write_marking(record, job, DeliveryState::Queued).await;
        Some(wait)
    }

    /// Gives `job` up with `error` (`reason` in its record): logged, dead-lettered, and
    /// reported ([`DeadLetters`]).
    async fn give_up(&self, record: JobRecord, job: &SyncJob, reason: String, error: JobError) {
        tracing::error!(
            job_id = %record.id,
            delivery = %job.delivery_id,
            repository = %job.repository,
            attempts = record.attempts,
            retryable = error.is_retryable(),
            error = %reason,
            "sync gave up: the job is recorded as failed; `astrolift jobs retry` queues it again"
        );
        let failed = self.dead_letter(record, reason, Some(job)).await;
        if let Some(report) = &self.dead_letters {
            report(job.clone(), failed, error).await;
        }
    }

    /// Records `record` as failed with `reason`: the dead letter; the delivery that made
    /// `job` (when it could be read) is marked failed, so that its redelivery queues it again.
    async fn dead_letter(
        &self,
        mut record: JobRecord,
        reason: String,
        job: Option<&SyncJob>,
    ) -> JobRecord {
        record.state = JobState::Failed;
        record.error = Some(reason);
        record.updated_at = now();
        match job {
            Some(job) => {
                self.write_marking(&record, job, DeliveryState::Failed)
                    .await
            }
            None => {
                if let Err(error) = self.store.jobs().update_job(&record).await {
                    warn_unrecorded(&record, &error);
                }
            }
        }
        record
    }

    /// Records `record` and moves the delivery that made `job` to `delivery`, together.
    /// Best effort: a store that cannot record a step is logged; the record keeps its
    /// earlier state, which a start resumes.
    async fn write_marking(&self, record: &JobRecord, job: &SyncJob, delivery: DeliveryState) {
        let marked = self
            .store
            .jobs()
            .update_job_marking(record, mark(job, delivery));
        if let Err(error) = marked.await {
            warn_unrecorded(record, &error);
        }
    }
}

/// The mark that moves the delivery that made `job` to `state` now.
fn mark(job: &SyncJob, state: DeliveryState) -> DeliveryMark<'_> {
    DeliveryMark {
        delivery_id: &job.delivery_id,
        state,
        now: now(),
    }
}

fn warn_unrecorded(record: &JobRecord, error: &StoreError) {
    tracing::warn!(%error, job_id = %record.id, state = record.state.as_str(), "cannot record the job's state");
}

/// Queues on the state store only: each job is recorded `queued`, and a `serve` on that
/// store runs it (within [`SWEEP_INTERVAL`], or at its next start), in its lane's order.
/// What `astrolift reconcile` queues on, like `astrolift jobs retry`.
pub struct RecordedJobQueue {
    store: Arc<dyn StateStore>,
    ids: JobIds,
}

impl RecordedJobQueue {
    pub fn new(store: Arc<dyn StateStore>) -> Self {
        Self {
            store,
            ids: JobIds::default(),
        }
    }
}

impl fmt::Debug for RecordedJobQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordedJobQueue").finish_non_exhaustive()
    }
}

impl JobQueue for RecordedJobQueue {
    fn enqueue<'a>(&'a self, job: &'a SyncJob) -> BoxFuture<'a, Result<(), QueueError>> {
        Box::pin(async move {
            let record = queued_record(self.ids.next(), JobJson::of(job)?);
            self.store.jobs().put_job(&record).await?;
            Ok(())
        })
    }
}

/// Job ids: nanoseconds since the epoch, 20 digits, each greater than the last one this
/// process made or saw recorded, so that ids sort in the order jobs were accepted.
#[derive(Debug, Default)]
struct JobIds {
    last: Mutex<u64>,
}

impl JobIds {
    fn next(&self) -> String {
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let id = match self.last.lock() {
            Ok(mut last) => {
                *last = clock.max(last.saturating_add(1));
                *last
            }
            Err(_) => clock,
        };
        format!("{id:020}")
    }

    /// Makes later ids sort after `id` (a recorded one).
    fn after(&self, id: &str) {
        if let (Ok(seen), Ok(mut last)) = (id.parse::<u64>(), self.last.lock()) {
            *last = (*last).max(seen);
        }
    }
}
