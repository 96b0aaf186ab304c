//! Ingress: verify, record, fan out, dedupe, queue — against a real SQLite store.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use astrolift_bot::queue::QueueError;
use astrolift_bot::{
    EventFanOut, FanOutSummary, GithubDelivery, Ingress, JobQueue, JobTrigger, RecordingJobQueue,
};
use astrolift_forge::webhook::WebhookSecrets;
use astrolift_manifest::Limits;
use astrolift_store::BoxFuture;
use astrolift_store::StateStore;
use serde_json::json;

use crate::support::{MAIN_SHA, REPO_ID, SECRET, deliver, embedded_stores, push, repository};

/// Counts fan-outs; "dispatches" one for `issues` events, and while `busy`
/// has one binding that cannot run now (every evaluation slot taken).
#[derive(Debug, Default)]
struct CountingFanOut {
    calls: AtomicUsize,
    busy: AtomicBool,
}

impl EventFanOut for CountingFanOut {
    fn fan_out<'a>(&'a self, delivery: GithubDelivery<'a>) -> BoxFuture<'a, FanOutSummary> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let unavailable = usize::from(self.busy.load(Ordering::SeqCst));
        Box::pin(async move {
            FanOutSummary {
                dispatched: usize::from(delivery.event_name == "issues"),
                unavailable,
            }
        })
    }
}

/// Refuses every job, as an unreachable SQS would.
#[derive(Debug)]
struct BrokenQueue;

impl JobQueue for BrokenQueue {
    fn enqueue<'a>(
        &'a self,
        _job: &'a astrolift_bot::SyncJob,
    ) -> BoxFuture<'a, Result<(), QueueError>> {
        Box::pin(async { Err(QueueError::Sqs("unreachable".into())) })
    }
}

struct Harness {
    ingress: Ingress,
    jobs: Arc<RecordingJobQueue>,
    fan_out: Arc<CountingFanOut>,
    state: Arc<dyn StateStore>,
    _dir: tempfile::TempDir,
}

async fn harness() -> Harness {
    let (stores, dir) = embedded_stores().await;
    let jobs = Arc::new(RecordingJobQueue::new());
    let fan_out = Arc::new(CountingFanOut::default());
    let ingress = Ingress {
        state: stores.state.clone(),
        secrets: WebhookSecrets::new(SECRET.into(), Some("old-secret".into())).expect("secrets"),
        jobs: jobs.clone(),
        triggers: Some(fan_out.clone()),
        limits: Limits::DEFAULT,
        function: "test",
    };
    Harness {
        ingress,
        jobs,
        fan_out,
        state: stores.state,
        _dir: dir,
    }
}

#[tokio::test]
async fn a_push_is_queued_once_per_delivery() {
    let h = harness().await;
    let answer = deliver(&h.ingress, "push", "d-1", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!(
        (answer.status, answer.body["status"].clone()),
        (202, json!("queued"))
    );
    let jobs = h.jobs.jobs();
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(job.trigger, JobTrigger::Push);
    assert_eq!(job.repository, "octo/agents");
    assert_eq!(job.repository_id, REPO_ID);
    assert_eq!(job.head_sha, MAIN_SHA);
    assert_eq!(job.branch.as_deref(), Some("main"));
    assert_eq!(job.commit_time, Some(1_795_946_400));
    assert_eq!(job.before.as_deref(), Some("0".repeat(40).as_str()));

    let again = deliver(&h.ingress, "push", "d-1", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!(
        (again.status, again.body["status"].clone()),
        (200, json!("duplicate"))
    );
    assert_eq!(h.jobs.jobs().len(), 1, "a redelivery is not queued again");
}

#[tokio::test]
async fn the_previous_secret_is_accepted_during_rotation() {
    let h = harness().await;
    let answer = deliver(
        &h.ingress,
        "push",
        "d-rot",
        &push("main", MAIN_SHA),
        "old-secret",
    )
    .await;
    assert_eq!(answer.status, 202);
}

#[tokio::test]
async fn a_bad_signature_is_401_and_records_nothing() {
    let h = harness().await;
    let answer = deliver(&h.ingress, "push", "d-bad", &push("main", MAIN_SHA), "nope").await;
    assert_eq!(answer.status, 401);
    assert!(h.jobs.jobs().is_empty());
    assert_eq!(
        h.fan_out.calls.load(Ordering::SeqCst),
        0,
        "nothing unverified is fanned out"
    );
    // The id was not recorded: the genuine delivery is still processed.
    let answer = deliver(&h.ingress, "push", "d-bad", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!(answer.status, 202);
}

#[tokio::test]
async fn a_job_that_cannot_be_queued_leaves_the_delivery_redeliverable() {
    let h = harness().await;
    let broken = Ingress {
        jobs: Arc::new(BrokenQueue),
        ..h.ingress.clone()
    };
    let answer = deliver(&broken, "push", "d-q", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!(answer.status, 503);
    assert!(
        !answer.body.to_string().contains("unreachable"),
        "no internals in the answer"
    );
    let answer = deliver(&h.ingress, "push", "d-q", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!(answer.status, 202, "the redelivery is processed");
}

#[tokio::test]
async fn events_that_do_not_sync_are_acknowledged() {
    let h = harness().await;
    let ping = deliver(
        &h.ingress,
        "ping",
        "d-ping",
        &json!({ "zen": "Z", "hook_id": 1 }),
        SECRET,
    )
    .await;
    assert_eq!(ping.status, 200);
    let mut deleted = push("main", MAIN_SHA);
    deleted["deleted"] = json!(true);
    let answer = deliver(&h.ingress, "push", "d-del", &deleted, SECRET).await;
    assert_eq!(
        (answer.status, answer.body["status"].clone()),
        (200, json!("ignored"))
    );
    let tag = push("v1", MAIN_SHA);
    let mut tag = tag;
    tag["ref"] = json!("refs/tags/v1");
    assert_eq!(
        deliver(&h.ingress, "push", "d-tag", &tag, SECRET)
            .await
            .status,
        200
    );
    let suite = json!({ "action": "requested", "check_suite": { "id": 1, "head_sha": MAIN_SHA, "head_branch": "main" },
                         "repository": repository(), "installation": { "id": 31 } });
    let answer = deliver(&h.ingress, "check_suite", "d-suite", &suite, SECRET).await;
    assert_eq!(
        answer.status, 200,
        "check_suite.requested is covered by the push"
    );
    let star = json!({ "action": "created", "repository": repository() });
    assert_eq!(
        deliver(&h.ingress, "star", "d-star", &star, SECRET)
            .await
            .status,
        200
    );
    assert!(h.jobs.jobs().is_empty());
}

#[tokio::test]
async fn a_rerequested_suite_is_queued_as_a_check() {
    let h = harness().await;
    let suite = json!({ "action": "rerequested", "check_suite": { "id": 1, "head_sha": MAIN_SHA, "head_branch": "main" },
                         "repository": repository(), "installation": { "id": 31 } });
    let answer = deliver(&h.ingress, "check_suite", "d-re", &suite, SECRET).await;
    assert_eq!(answer.status, 202);
    assert_eq!(h.jobs.jobs()[0].trigger, JobTrigger::Rerequest);
}

#[tokio::test]
async fn github_sourced_triggers_see_every_verified_event_of_a_repository() {
    let h = harness().await;
    let issue = json!({ "action": "opened", "issue": { "number": 7 }, "repository": repository() });
    let answer = deliver(&h.ingress, "issues", "d-issue", &issue, SECRET).await;
    assert_eq!(
        (answer.status, answer.body["dispatched"].clone()),
        (202, json!(1))
    );
    assert_eq!(h.fan_out.calls.load(Ordering::SeqCst), 1);
    assert!(h.jobs.jobs().is_empty());
}

#[tokio::test]
async fn a_binding_that_cannot_run_now_fails_the_delivery_for_redelivery() {
    let h = harness().await;
    h.fan_out.busy.store(true, Ordering::SeqCst);
    let issue = json!({ "action": "opened", "issue": { "number": 7 }, "repository": repository() });
    let answer = deliver(&h.ingress, "issues", "d-busy", &issue, SECRET).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    let error = answer.body["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("1 trigger binding(s) could not run now (1 dispatched)"),
        "{error}"
    );
    assert!(error.ends_with("redeliver later"), "{error}");

    // A push whose fan-out was short: the job is queued once, the delivery
    // still fails, and its redelivery (same id) is a duplicate that runs the
    // fan-out again.
    let push = push("main", MAIN_SHA);
    let answer = deliver(&h.ingress, "push", "d-busy-push", &push, SECRET).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(h.jobs.jobs().len(), 1);
    h.fan_out.busy.store(false, Ordering::SeqCst);
    let again = deliver(&h.ingress, "push", "d-busy-push", &push, SECRET).await;
    assert_eq!(
        (again.status, again.body["status"].clone()),
        (200, json!("duplicate"))
    );
    assert_eq!(h.jobs.jobs().len(), 1);
    assert_eq!(h.fan_out.calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn installations_are_recorded_and_forgotten() {
    let h = harness().await;
    let created = json!({ "action": "created",
        "installation": { "id": 31, "account": { "login": "octo" } },
        "repositories": [{ "id": 1, "full_name": "octo/agents" }] });
    assert_eq!(
        deliver(&h.ingress, "installation", "d-i1", &created, SECRET)
            .await
            .status,
        200
    );
    let added = json!({ "action": "added",
        "installation": { "id": 31, "account": { "login": "octo" } },
        "repositories_added": [{ "id": 2, "full_name": "octo/more" }], "repositories_removed": [] });
    assert_eq!(
        deliver(
            &h.ingress,
            "installation_repositories",
            "d-i2",
            &added,
            SECRET
        )
        .await
        .status,
        200
    );
    let stored = h
        .state
        .get_installation(31)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(stored.account, "octo");
    assert_eq!(
        stored.repositories,
        vec!["octo/agents".to_owned(), "octo/more".to_owned()]
    );
    let deleted = json!({ "action": "deleted", "installation": { "id": 31 } });
    assert_eq!(
        deliver(&h.ingress, "installation", "d-i3", &deleted, SECRET)
            .await
            .status,
        200
    );
    assert!(h.state.get_installation(31).await.expect("read").is_none());
}
