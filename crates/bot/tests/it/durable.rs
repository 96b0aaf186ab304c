//! `serve`'s durable queue (`astrolift_bot::durable`) on a SQLite state store: the lane
//! bound at its limit and past it, resumption in lane order after a stop, the dead
//! letter, `jobs retry` picked up by a running queue, and the delivery that moves with its
//! job.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use astrolift_bot::dead_letter::{Retried, retry_failed, retry_job};
use astrolift_bot::durable::{Attempt, DurableJobQueue, DurableOptions};
use astrolift_bot::queue::{Delivery, DeliveryQueueError, LOCAL_QUEUE_CAPACITY, QueueError};
use astrolift_bot::retry::RetryPolicy;
use astrolift_bot::{JobError, JobQueue, SyncJob};
use astrolift_forge::github::GitHubError;
use astrolift_store::StoreError;
use astrolift_store::state::{DeliveryOutcome, JobJson, JobRecord, JobState, JobStore, StateStore};
use tokio::sync::Semaphore;

use crate::support::{embedded_stores, push_job};

/// Runs `$helper` on a SQLite state store as test `$test`, and on DynamoDB (moto) as
/// `$test` in module `dynamodb` when `AWS_ENDPOINT_URL` is set.
macro_rules! on_sqlite_and_dynamodb {
    ($test:ident, $helper:ident) => {
        #[tokio::test(flavor = "multi_thread")]
        async fn $test() {
            let (stores, _dir) = embedded_stores().await;
            $helper(stores.state).await;
        }

        mod $test {
            #[tokio::test(flavor = "multi_thread")]
            async fn on_dynamodb() {
                let test = concat!(stringify!($test), "_on_dynamodb");
                if let Some(stores) = crate::support::aws_stores(test).await {
                    super::$helper(stores.state).await;
                }
            }
        }
    };
}

/// How each attempt of a delivery ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    Succeeds,
    /// A store that is unavailable: retried.
    Retryable,
    /// GitHub's 404: given up at once.
    Permanent,
}

/// Attempts that record each delivery id as it starts, wait for a permit of `gate` (when
/// given), and end as `ends` says for that delivery.
fn attempts(
    gate: Option<Arc<Semaphore>>,
    ends: Arc<Mutex<Ends>>,
) -> (Attempt, Arc<Mutex<Vec<String>>>) {
    let started = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&started);
    let attempt: Attempt = Arc::new(move |job: SyncJob| {
        let (gate, ends, log) = (gate.clone(), Arc::clone(&ends), Arc::clone(&log));
        Box::pin(async move {
            log.lock().expect("log").push(job.delivery_id.clone());
            if let Some(gate) = gate {
                gate.acquire().await.expect("gate").forget();
            }
            let end = *ends.lock().expect("ends");
            match end {
                Ends::Succeeds => Ok(()),
                Ends::Retryable => Err(JobError::Store(StoreError::Unavailable("busy".into()))),
                Ends::Permanent => Err(JobError::GitHub(GitHubError::Status {
                    method: http::Method::GET,
                    path: "/repos/octo/agents/tarball/x".into(),
                    status: http::StatusCode::NOT_FOUND,
                    message: "Not Found".into(),
                })),
            }
        })
    });
    (attempt, started)
}

/// Attempts that record each delivery id as they start and never end (a gate that opens
/// never): each is cut short by the queue's drain.
fn attempts_that_never_end() -> (Attempt, Arc<Mutex<Vec<String>>>) {
    let closed = Arc::new(Semaphore::new(0));
    attempts(Some(closed), Arc::new(Mutex::new(Ends::Succeeds)))
}

fn options() -> DurableOptions {
    DurableOptions {
        policy: RetryPolicy {
            attempts: 3,
            base: Duration::from_millis(1),
            cap: Duration::from_millis(10),
        },
        syncs: 1,
        idle: Duration::from_secs(60),
        sweep: Duration::from_millis(50),
    }
}

fn push(delivery: &str) -> SyncJob {
    push_job(delivery)
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn states(state: &dyn StateStore) -> Vec<(String, JobState)> {
    state
        .jobs()
        .list_jobs(None)
        .await
        .expect("jobs")
        .into_iter()
        .map(|r| {
            let delivery = r.job.value()["delivery_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (delivery, r.state)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lane_takes_256_waiting_jobs_and_refuses_the_next_without_recording_it() {
    let (stores, _dir) = embedded_stores().await;
    let gate = Arc::new(Semaphore::new(0));
    let ends = Arc::new(Mutex::new(Ends::Succeeds));
    let (attempt, started) = attempts(Some(Arc::clone(&gate)), ends);
    let (queue, resumed) = DurableJobQueue::start(stores.state.clone(), attempt, None, options())
        .await
        .expect("starts");
    assert_eq!(resumed, 0);
    // One job runs (held at the gate); then the lane fills to its bound.
    queue.enqueue(&push("running")).await.expect("queued");
    wait_for("the first job to start", || {
        started.lock().expect("log").len() == 1
    })
    .await;
    for n in 0..LOCAL_QUEUE_CAPACITY {
        queue
            .enqueue(&push(&format!("waiting-{n}")))
            .await
            .unwrap_or_else(|e| panic!("job {n} within the bound: {e}"));
    }
    let refused = queue.enqueue(&push("one-too-many")).await;
    assert!(matches!(refused, Err(QueueError::Full(_))), "{refused:?}");
    let recorded = states(stores.state.as_ref()).await;
    assert_eq!(recorded.len(), LOCAL_QUEUE_CAPACITY + 1);
    assert!(recorded.iter().all(|(d, _)| d != "one-too-many"));
    // Another lane is not held back by this one's bound.
    let mut fork = push("fork");
    fork.fork = true;
    fork.trigger = astrolift_bot::JobTrigger::PullRequest;
    queue.enqueue(&fork).await.expect("another lane");

    gate.add_permits(LOCAL_QUEUE_CAPACITY + 2);
    wait_for("every job", || {
        started.lock().expect("log").len() == LOCAL_QUEUE_CAPACITY + 2
    })
    .await;
    let started = started.lock().expect("log").clone();
    let lane: Vec<&String> = started.iter().filter(|d| *d != "fork").collect();
    assert_eq!(lane[0], "running");
    for (n, delivery) in lane[1..].iter().enumerate() {
        assert_eq!(**delivery, format!("waiting-{n}"), "lane order");
    }
}

/// A webhook over its lane's bound is answered as before the lane was full: a redelivery
/// of a delivery already queued is a duplicate, and a new delivery is refused with nothing
/// recorded, so that its own redelivery, once the lane has room, is queued.
#[tokio::test(flavor = "multi_thread")]
async fn a_full_lane_still_answers_a_redelivery_as_a_duplicate() {
    let (stores, _dir) = embedded_stores().await;
    let state = stores.state.clone();
    let gate = Arc::new(Semaphore::new(0));
    let (attempt, started) = attempts(
        Some(Arc::clone(&gate)),
        Arc::new(Mutex::new(Ends::Succeeds)),
    );
    let (queue, _) = DurableJobQueue::start(Arc::clone(&state), attempt, None, options())
        .await
        .expect("starts");
    let send = |id: String| {
        let (queue, state) = (Arc::clone(&queue), Arc::clone(&state));
        async move {
            let delivery = Delivery {
                id: &id,
                now: unix_now(),
                ttl: Duration::from_secs(3600),
            };
            queue
                .enqueue_delivery(state.as_ref(), delivery, &push(&id))
                .await
        }
    };
    send("running".into()).await.expect("queued");
    wait_for("the first job to start", || {
        started.lock().expect("log").len() == 1
    })
    .await;
    for n in 0..LOCAL_QUEUE_CAPACITY {
        let outcome = send(format!("waiting-{n}"))
            .await
            .expect("within the bound");
        assert_eq!(outcome, DeliveryOutcome::New);
    }
    let again = send("waiting-0".into()).await.expect("answered");
    assert_eq!(again, DeliveryOutcome::Duplicate);
    let refused = send("one-too-many".into()).await;
    assert!(
        matches!(refused, Err(DeliveryQueueError::Queue(QueueError::Full(_)))),
        "{refused:?}"
    );
    gate.add_permits(LOCAL_QUEUE_CAPACITY + 2);
    wait_for("every job", || {
        started.lock().expect("log").len() == LOCAL_QUEUE_CAPACITY + 1
    })
    .await;
    let redelivered = send("one-too-many".into()).await.expect("queued");
    assert_eq!(redelivered, DeliveryOutcome::New);
    wait_for("the redelivered job", || {
        started.lock().expect("log").len() == LOCAL_QUEUE_CAPACITY + 2
    })
    .await;
}

on_sqlite_and_dynamodb!(
    jobs_left_by_a_stopped_queue_are_resumed_in_lane_order_by_the_next,
    resumed_in_lane_order
);

async fn resumed_in_lane_order(state: Arc<dyn StateStore>) {
    let (attempt, started) = attempts_that_never_end();
    let (first, _) = DurableJobQueue::start(Arc::clone(&state), attempt, None, options())
        .await
        .expect("starts");
    for n in 1..=5 {
        first
            .enqueue(&push(&format!("push-{n}")))
            .await
            .expect("queued");
    }
    wait_for("the first job to start", || {
        started.lock().expect("log").len() == 1
    })
    .await;
    // Its `running` marker is sent as its attempt starts, not awaited first (on DynamoDB it
    // may still be in flight here).
    let deadline = Instant::now() + Duration::from_secs(20);
    while states(state.as_ref()).await.first().map(|(_, s)| *s) != Some(JobState::Running) {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for push-1's running marker"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A drain with no grace: push-1 is cut short, the rest never start.
    let drained = first.drain(Duration::ZERO).await;
    assert_eq!(drained.running, 1);
    assert_eq!(drained.waiting, 5);
    let refused = first.enqueue(&push("after-the-drain")).await;
    assert!(matches!(refused, Err(QueueError::Closed)), "{refused:?}");
    let recorded = states(state.as_ref()).await;
    assert_eq!(recorded[0], ("push-1".to_owned(), JobState::Running));
    assert!(recorded[1..].iter().all(|(_, s)| *s == JobState::Queued));

    let (attempt, resumed_log) = attempts(None, Arc::new(Mutex::new(Ends::Succeeds)));
    let (second, resumed) = DurableJobQueue::start(Arc::clone(&state), attempt, None, options())
        .await
        .expect("starts again");
    assert_eq!(resumed, 5);
    wait_for("the resumed jobs", || {
        resumed_log.lock().expect("log").len() == 5
    })
    .await;
    assert_eq!(
        *resumed_log.lock().expect("log"),
        ["push-1", "push-2", "push-3", "push-4", "push-5"]
    );
    wait_for("the records to go", || {
        futures_done(states(state.as_ref())).is_empty()
    })
    .await;
    // A new job after the resumed ones gets a later id.
    second.enqueue(&push("push-6")).await.expect("queued");
    wait_for("push-6", || resumed_log.lock().expect("log").len() == 6).await;
}

/// A record's last error ("" before one).
fn error_of(record: &JobRecord) -> &str {
    record.error.as_deref().unwrap_or_default()
}

/// The failed jobs, once there are `count`.
async fn dead_letters(jobs: &dyn JobStore, count: usize) -> Vec<JobRecord> {
    wait_for("the dead letter", || {
        futures_done(jobs.list_jobs(Some(JobState::Failed)))
            .map(|f| f.len() == count)
            .unwrap_or(false)
    })
    .await;
    jobs.list_jobs(Some(JobState::Failed)).await.expect("jobs")
}

/// Runs a store future to completion from a synchronous check.
fn futures_done<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(future))
}

on_sqlite_and_dynamodb!(
    a_job_that_gives_up_is_dead_lettered_and_jobs_retry_runs_it_again,
    dead_lettered_and_retried
);

async fn dead_lettered_and_retried(state: Arc<dyn StateStore>) {
    let ends = Arc::new(Mutex::new(Ends::Retryable));
    let (attempt, started) = attempts(None, Arc::clone(&ends));
    let (queue, _) = DurableJobQueue::start(Arc::clone(&state), attempt, None, options())
        .await
        .expect("starts");
    queue.enqueue(&push("flaky")).await.expect("queued");
    let jobs = state.jobs();
    let failed = dead_letters(jobs, 1).await;
    assert_eq!(failed[0].attempts, 3, "every attempt of the policy");
    assert!(error_of(&failed[0]).contains("busy"), "{failed:?}");
    assert_eq!(started.lock().expect("log").len(), 3);

    // A permanent failure gives up after one attempt.
    *ends.lock().expect("ends") = Ends::Permanent;
    queue.enqueue(&push("refused")).await.expect("queued");
    let failed = dead_letters(jobs, 2).await;
    assert_eq!(failed[1].attempts, 1);
    assert!(error_of(&failed[1]).contains("404"));

    // The cause is gone: one retried by id, then the rest; the running queue takes them.
    *ends.lock().expect("ends") = Ends::Succeeds;
    let id = failed[0].id.clone();
    assert_eq!(
        retry_job(jobs, &id, 0).await.expect("retry"),
        Retried::Queued
    );
    assert_eq!(
        retry_job(jobs, "00000000000000000000", 0)
            .await
            .expect("retry"),
        Retried::NotFound
    );
    wait_for("the retried job", || {
        started.lock().expect("log").last().map(String::as_str) == Some("flaky")
            && started.lock().expect("log").len() == 5
    })
    .await;
    assert_eq!(
        retry_failed(jobs, 0).await.expect("retry"),
        [failed[1].id.clone()]
    );
    wait_for("every job to go", || {
        futures_done(jobs.list_jobs(None))
            .map(|j| j.is_empty())
            .unwrap_or(false)
    })
    .await;
    assert_eq!(
        *started.lock().expect("log"),
        ["flaky", "flaky", "flaky", "refused", "flaky", "refused"]
    );
}

on_sqlite_and_dynamodb!(
    a_webhook_delivery_moves_with_its_job_to_success_or_the_dead_letter,
    delivery_moves_with_its_job
);

/// The queue writes the delivery's state with its job's (the attempt, the runner's
/// `run_unmarked`, marks nothing): a delivery whose job succeeded stays a duplicate; one
/// whose job was dead-lettered is queued again by its redelivery.
async fn delivery_moves_with_its_job(state: Arc<dyn StateStore>) {
    let ends = Arc::new(Mutex::new(Ends::Succeeds));
    let (attempt, started) = attempts(None, Arc::clone(&ends));
    let (queue, _) = DurableJobQueue::start(Arc::clone(&state), attempt, None, options())
        .await
        .expect("starts");
    let ttl = Duration::from_secs(3600);
    let delivered = |id: &'static str| Delivery {
        id,
        now: unix_now(),
        ttl,
    };
    let job = push("applied");
    let outcome = queue
        .enqueue_delivery(state.as_ref(), delivered("applied"), &job)
        .await
        .expect("queued");
    assert_eq!(outcome, DeliveryOutcome::New);
    let jobs = state.jobs();
    wait_for("the job to succeed", || {
        futures_done(jobs.list_jobs(None)).is_ok_and(|j| j.is_empty())
            && started.lock().expect("log").len() == 1
    })
    .await;
    let again = queue
        .enqueue_delivery(state.as_ref(), delivered("applied"), &job)
        .await
        .expect("answered");
    assert_eq!(again, DeliveryOutcome::Duplicate, "succeeded: a duplicate");

    *ends.lock().expect("ends") = Ends::Permanent;
    let job = push("refused");
    queue
        .enqueue_delivery(state.as_ref(), delivered("refused"), &job)
        .await
        .expect("queued");
    dead_letters(jobs, 1).await;
    *ends.lock().expect("ends") = Ends::Succeeds;
    let again = queue
        .enqueue_delivery(state.as_ref(), delivered("refused"), &job)
        .await
        .expect("queued again");
    assert_eq!(again, DeliveryOutcome::New, "dead-lettered: queued again");
    wait_for("the redelivered job to run", || {
        started.lock().expect("log").len() == 3
    })
    .await;
    // The duplicate joined its lane ahead of the later jobs and was dropped there, unrun.
    assert_eq!(
        *started.lock().expect("log"),
        ["applied", "refused", "refused"]
    );
}

on_sqlite_and_dynamodb!(
    a_job_whose_every_attempt_a_stop_cut_short_is_dead_lettered,
    cut_short_every_time
);

/// A job whose attempts never end before the process stops (one that stops the process,
/// say): each start records it `running` before it runs, so each attempt a stop cuts short
/// is counted, and the start that finds it `running` with no attempt left dead-letters it
/// instead of running it.
async fn cut_short_every_time(state: Arc<dyn StateStore>) {
    let (attempt, started) = attempts_that_never_end();
    let options = options();
    let policy_attempts = options.policy.attempts;
    for start in 1..=policy_attempts {
        let (queue, _) =
            DurableJobQueue::start(Arc::clone(&state), Arc::clone(&attempt), None, options)
                .await
                .expect("starts");
        if start == 1 {
            queue
                .enqueue(&push("stops-the-process"))
                .await
                .expect("queued");
        }
        wait_for("the attempt to start", || {
            started.lock().expect("log").len() == start as usize
        })
        .await;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let records = state.jobs().list_jobs(None).await.expect("jobs");
            if records.first().map(|r| (r.state, r.attempts)) == Some((JobState::Running, start)) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{records:?}: not running, attempt {start}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        queue.drain(Duration::ZERO).await;
    }
    let (_queue, resumed) =
        DurableJobQueue::start(Arc::clone(&state), Arc::clone(&attempt), None, options)
            .await
            .expect("starts");
    assert_eq!(resumed, 1);
    let failed = dead_letters(state.jobs(), 1).await;
    assert_eq!(
        error_of(&failed[0]),
        format!("the process stopped during each of its {policy_attempts} attempts")
    );
    assert_eq!(started.lock().expect("log").len(), policy_attempts as usize);
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The check run of a job the queue gave up on: `failure`, the reason (escaped as
/// repository text), and a Re-run button whose identifier is the job id.
#[test]
fn the_check_run_of_a_dead_lettered_job_offers_re_run() {
    let (conclusion, output) = astrolift_bot::check_run::dead_letter(
        "01795946400000000001",
        5,
        "GitHub answered 502 Bad Gateway to GET /repos/octo/agents/tarball/[x](y)",
    );
    assert_eq!(conclusion, astrolift_forge::github::Conclusion::Failure);
    insta::assert_json_snapshot!("dead_letter_check_run", output);
    assert!(astrolift_bot::dead_letter::is_job_id(
        "01795946400000000001"
    ));
    // The identifier GitHub allows is 20 characters: exactly 20 digits, nothing else.
    for not_an_id in [
        "0179594640000000001",
        "017959464000000000011",
        "accept-drift",
        "0179594640000000000a",
    ] {
        assert!(
            !astrolift_bot::dead_letter::is_job_id(not_an_id),
            "{not_an_id}"
        );
    }
}

/// A recorded job that does not read as a sync job (written by a later version, or
/// damaged) is not run: at start it goes to the dead letter, saying why.
#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_job_that_cannot_be_read_is_dead_lettered_at_start() {
    let (stores, _dir) = embedded_stores().await;
    let unreadable = JobRecord {
        id: "00000000000000000001".into(),
        state: JobState::Queued,
        attempts: 0,
        job: JobJson::of(&serde_json::json!({ "version": 99, "what": "not a sync job" }))
            .expect("encoded"),
        queued_at: 0,
        updated_at: 0,
        error: None,
    };
    stores.state.jobs().put_job(&unreadable).await.expect("put");
    let (attempt, started) = attempts(None, Arc::new(Mutex::new(Ends::Succeeds)));
    let (_queue, resumed) = DurableJobQueue::start(stores.state.clone(), attempt, None, options())
        .await
        .expect("starts");
    assert_eq!(resumed, 0);
    let failed = dead_letters(stores.state.jobs(), 1).await;
    assert_eq!(failed[0].id, unreadable.id);
    assert!(
        error_of(&failed[0]).starts_with("the recorded job cannot be read"),
        "{failed:?}"
    );
    assert!(started.lock().expect("log").is_empty());
}

/// An enqueue whose caller goes away once the record is being written (a webhook sender
/// that hung up: the connection's handler is dropped) still runs the job, in its place in
/// the lane. Left recorded but in no lane, this process would hold it and never run it, and
/// the next start would run it after the later jobs of its lane (a push then skipped as
/// older than the registered commit).
#[tokio::test(flavor = "multi_thread")]
async fn a_job_whose_caller_went_away_while_it_was_recorded_still_runs() {
    let (stores, _dir) = embedded_stores().await;
    let (attempt, started) = attempts(None, Arc::new(Mutex::new(Ends::Succeeds)));
    let (queue, _) = DurableJobQueue::start(stores.state.clone(), attempt, None, options())
        .await
        .expect("starts");
    const JOBS: usize = 5;
    for n in 1..=JOBS {
        // Polled once: the record's write has started when the caller drops the future.
        let job = push(&format!("push-{n}"));
        let _ = tokio::time::timeout(Duration::ZERO, queue.enqueue(&job)).await;
    }
    wait_for("every recorded job to run", || {
        started.lock().expect("log").len() == JOBS
    })
    .await;
    // A job joins its lane before its write starts: each runs once, in the order the
    // callers came, though none of them waited for its write.
    let ran = started.lock().expect("log").clone();
    let expected: Vec<String> = (1..=JOBS).map(|n| format!("push-{n}")).collect();
    assert_eq!(ran, expected);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !states(stores.state.as_ref()).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for no job left"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
