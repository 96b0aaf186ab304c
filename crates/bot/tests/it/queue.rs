//! The in-process queue of `serve`: lanes (the registered ref never waits
//! behind a fork), order within a lane, and idle workers removed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use astrolift_bot::queue::JobHandler;
use astrolift_bot::{JobQueue, JobTrigger, LocalJobQueue, SyncJob};
use tokio::sync::Notify;

fn job(delivery: &str, trigger: JobTrigger, branch: &str, fork: bool) -> SyncJob {
    SyncJob {
        version: 1,
        delivery_id: delivery.to_owned(),
        trigger,
        installation_id: 1,
        repository: "octo/agents".to_owned(),
        repository_id: 4001,
        head_sha: "a".repeat(40),
        branch: Some(branch.to_owned()),
        fork,
        commit_time: None,
        before: None,
        default_branch: Some("main".to_owned()),
        pull_request: fork.then_some(7),
        accept_drift: None,
        skill_change: None,
        base_ref: None,
        preview_approved_by: None,
        merged: false,
        comment: None,
    }
}

fn push(delivery: &str, branch: &str) -> SyncJob {
    job(delivery, JobTrigger::Push, branch, false)
}

/// A handler that records each finished job's delivery id; jobs whose
/// delivery starts with `held` wait for `release` first.
fn recording(release: Arc<Notify>) -> (JobHandler, Arc<Mutex<Vec<String>>>) {
    let done = Arc::new(Mutex::new(Vec::new()));
    let finished = Arc::clone(&done);
    let handler: JobHandler = Arc::new(move |job: SyncJob| {
        let release = Arc::clone(&release);
        let finished = Arc::clone(&finished);
        Box::pin(async move {
            if job.delivery_id.starts_with("held") {
                release.notified().await;
            }
            finished.lock().expect("finished").push(job.delivery_id);
        })
    });
    (handler, done)
}

async fn wait_for(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn lanes_separate_the_registered_ref_from_forks_and_other_branches() {
    let main = push("d1", "main");
    let lanes = [
        main.lane(),
        push("d2", "feature").lane(),
        job("d3", JobTrigger::PullRequest, "main", true).lane(),
        job("d4", JobTrigger::PullRequest, "main", false).lane(),
        job("d5", JobTrigger::Rerequest, "main", false).lane(),
    ];
    let distinct: std::collections::BTreeSet<_> = lanes.iter().collect();
    assert_eq!(distinct.len(), lanes.len(), "{lanes:?}");
    assert_eq!(
        push("d6", "main").lane(),
        main.lane(),
        "one lane per branch"
    );
    // A group id is at most 128 characters of SQS's allowed set, whatever the branch.
    let long = push("d7", &"ü/".repeat(200));
    let group = long.message_group_id();
    assert!(group.starts_with("4001-push-"), "{group}");
    assert!(group.len() <= 128 && group.bytes().all(|b| b.is_ascii_graphic()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_push_to_the_registered_ref_does_not_wait_behind_a_fork_pull_request() {
    let release = Arc::new(Notify::new());
    let (handler, done) = recording(Arc::clone(&release));
    let queue = LocalJobQueue::new(handler);
    // The fork's job is queued first and takes long (held until released).
    let fork = job("held-fork", JobTrigger::PullRequest, "main", true);
    queue.enqueue(&fork).await.expect("queued");
    queue
        .enqueue(&push("push-main", "main"))
        .await
        .expect("queued");
    wait_for("the push to finish while the fork job runs", || {
        done.lock().expect("done").contains(&"push-main".to_owned())
    })
    .await;
    release.notify_one();
    wait_for("the fork job", || done.lock().expect("done").len() == 2).await;
    assert_eq!(*done.lock().expect("done"), ["push-main", "held-fork"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lane_keeps_its_order() {
    let release = Arc::new(Notify::new());
    let (handler, done) = recording(Arc::clone(&release));
    let queue = LocalJobQueue::new(handler);
    queue
        .enqueue(&push("held-1", "main"))
        .await
        .expect("queued");
    for n in 2..=5 {
        queue
            .enqueue(&push(&format!("main-{n}"), "main"))
            .await
            .expect("queued");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        done.lock().expect("done").is_empty(),
        "nothing overtook the first job"
    );
    release.notify_one();
    wait_for("the lane", || done.lock().expect("done").len() == 5).await;
    assert_eq!(
        *done.lock().expect("done"),
        ["held-1", "main-2", "main-3", "main-4", "main-5"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_workers_are_removed_and_a_later_job_still_runs() {
    let (handler, done) = recording(Arc::new(Notify::new()));
    let queue = LocalJobQueue::with_idle(handler, Duration::from_millis(100));
    for n in 0..20 {
        let mut job = push(&format!("d-{n}"), &format!("branch-{n}"));
        job.repository_id = 5000 + n;
        queue.enqueue(&job).await.expect("queued");
    }
    assert!(queue.workers() > 0);
    wait_for("every worker to stop", || queue.workers() == 0).await;
    assert_eq!(done.lock().expect("done").len(), 20);

    queue
        .enqueue(&push("d-later", "main"))
        .await
        .expect("queued");
    wait_for("the later job", || done.lock().expect("done").len() == 21).await;
    assert_eq!(queue.workers(), 1, "a worker for the later job's lane");
}
