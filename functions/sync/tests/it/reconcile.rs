//! The reconcile schedule's event (docs/reference.md §4, "astrolift reconcile"): the sync
//! function tells it from an SQS batch, queues a `reconcile` sync of a branch moved with no
//! delivery on the SQS FIFO sync queue (moto), runs it like any message, and a second pass
//! with nothing changed asks GitHub only conditionally and queues nothing.

use std::sync::Arc;

use astrolift_bot::{JobTrigger, SqsJobQueue, SyncJob};
use astrolift_fn_sync::{Invocation, RECONCILE_EVENT};
use serde_json::json;

use crate::support::{
    MAIN_SHA, OWNER, REPOSITORY, delivered, event, failures, fake_github, fifo_queue,
    function_queuing, root, sqs_event, stores,
};

/// `main`'s next commit, pushed while no delivery reached the App.
const MOVED: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

#[test]
fn the_schedule_event_is_a_reconcile_and_a_batch_is_a_batch() {
    let schedule = serde_json::from_str(RECONCILE_EVENT).expect("JSON");
    assert!(matches!(
        Invocation::parse(schedule),
        Ok(Invocation::Reconcile)
    ));
    let batch = Invocation::parse(event("sync-batch")).expect("a batch");
    assert!(matches!(batch, Invocation::Batch(b) if !b.records.is_empty()));
    assert!(Invocation::parse(json!({"astrolift": "reboot"})).is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_branch_moved_without_a_delivery_is_queued_by_the_schedule_and_applied() {
    if astrolift_store::testing::aws_endpoint("sync reconcile SQS FIFO").is_none() {
        return;
    }
    let (client, url) = fifo_queue("reconcile").await;
    let (stores, _dir) = stores().await;
    let github = fake_github().await;
    let queue = Arc::new(SqsJobQueue::new(client.clone(), url.clone()));
    let function = function_queuing(&github, &stores, Some(queue));
    // The registered ref's push applies MAIN_SHA (and records the repository id).
    let push = event("sync-batch")["Records"][0].clone();
    let response = function.handle(sqs_event(json!({ "Records": [push] })), None);
    assert_eq!(failures(&response.await), Vec::<String>::new());
    let first = function.reconcile().await.expect("a pass");
    assert_eq!(first.totals.jobs, 0, "{first:#?}");

    let examples = root().join("examples");
    github.add_repo(OWNER, "agents", "main", MOVED, examples.join("monorepo"));
    github.add_commit(OWNER, "agents", MAIN_SHA, &[]);
    github.add_commit(OWNER, "agents", MOVED, &[MAIN_SHA]);
    let moved = function.reconcile().await.expect("a pass");
    assert_eq!(moved.totals.queued, 1, "{moved:#?}");
    let queued = delivered(&client, &url).await;
    let records = queued["Records"].as_array().expect("records");
    assert_eq!(records.len(), 1, "{queued:#}");
    let body = records[0]["body"].as_str().expect("body");
    let job: SyncJob = serde_json::from_str(body).expect("a sync job");
    assert_eq!(job.trigger, JobTrigger::Reconcile);
    assert_eq!(
        (job.repository.as_str(), job.head_sha.as_str()),
        (REPOSITORY, MOVED)
    );
    let attributes = &records[0]["attributes"];
    assert_eq!(attributes["MessageGroupId"], json!(job.message_group_id()));
    // Its delivery id (SqsJobQueue's deduplication id) is one per head.
    let id = astrolift_bot::reconcile::delivery_id(REPOSITORY, "main", MOVED);
    assert_eq!(job.delivery_id, id);

    let response = function.handle(sqs_event(queued), None).await;
    assert_eq!(failures(&response), Vec::<String>::new());
    let synced = stores
        .state
        .get_synced_commit(REPOSITORY, "main")
        .await
        .expect("read")
        .expect("synced");
    assert_eq!(synced.commit, MOVED);

    let before = github.requests_to("GET", "/repos/").len();
    let again = function.reconcile().await.expect("a pass");
    let asked = github.requests_to("GET", "/repos/")[before..].to_vec();
    assert_eq!(asked.len(), again.totals.refs);
    assert!(asked.iter().all(|r| r.header("if-none-match").is_some()));
    assert_eq!(again.totals.not_modified, again.totals.refs, "{again:#?}");
    assert_eq!(again.totals.jobs, 0);
    let left = delivered(&client, &url).await;
    assert_eq!(
        left["Records"].as_array().map(Vec::len),
        Some(0),
        "{left:#}"
    );
}
