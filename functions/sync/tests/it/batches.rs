//! Batches through `handle`: success, GitHub down, bad bodies, errors that a
//! retry would repeat, and the FIFO order of one repository's records.

use astrolift_fake_github::Fault;
use serde_json::{Value, json};

use crate::support::{
    INSTALLATION, MAIN_SHA, PR_SHA, REPOSITORY, event, failures, fake_github, function,
    message_ids, sqs_event, stores,
};

const TARBALL: &str = "/repos/astrolift-demo/agents/tarball";

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_that_succeeds_reports_no_failures() {
    let (stores, _dir) = stores().await;
    let github = fake_github().await;
    let response = function(&github, &stores)
        .handle(sqs_event(event("sync-batch")), None)
        .await;
    assert_eq!(failures(&response), Vec::<String>::new());
    let runs = github.check_runs();
    assert_eq!(runs.len(), 2, "{runs:#?}");
    assert!(runs.iter().all(|r| r.status == "completed"), "{runs:#?}");
    assert_eq!(runs[0].head_sha, MAIN_SHA);
    assert_eq!(runs[1].head_sha, PR_SHA);
    let agents = stores.state.list_agents(REPOSITORY).await.expect("agents");
    assert!(!agents.is_empty(), "the push to main applied");
    // The response is what Lambda reads.
    let wire = serde_json::to_value(&response).expect("json");
    assert_eq!(wire, json!({ "batchItemFailures": [] }));
}

#[tokio::test(flavor = "multi_thread")]
async fn github_down_reports_the_record_and_holds_the_rest_of_its_group() {
    let (stores, _dir) = stores().await;
    let github = fake_github().await;
    github.inject(Fault::server_error(100).on("GET", TARBALL));
    let first = event("sync-batch")["Records"][0].clone();
    let batch = json!({ "Records": [first.clone(), next_push_in_its_lane(&first)] });
    let response = function(&github, &stores)
        .handle(sqs_event(batch.clone()), None)
        .await;
    // The first push failed (retryable); the next push of the same branch, in
    // the same FIFO group, must not overtake it: both go back to the queue.
    assert_eq!(failures(&response), message_ids(&batch));
    let runs = github.check_runs();
    assert_eq!(runs.len(), 1, "the held job did not run: {runs:#?}");
    assert_eq!(runs[0].status, "completed");
    assert_eq!(runs[0].conclusion.as_deref(), Some("failure"));
    let wire = serde_json::to_value(&response).expect("json");
    assert_eq!(
        wire["batchItemFailures"][0]["itemIdentifier"],
        batch["Records"][0]["messageId"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_body_is_acknowledged_not_retried() {
    let (stores, _dir) = stores().await;
    let github = fake_github().await;
    let mut batch = event("sync-bad-body");
    // A bad body does not hold back the good job after it in its group.
    let good = event("sync-batch")["Records"][0].clone();
    records(&mut batch).push(good);
    let response = function(&github, &stores)
        .handle(sqs_event(batch), None)
        .await;
    assert_eq!(failures(&response), Vec::<String>::new());
    assert_eq!(github.check_runs().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_a_retry_would_repeat_is_acknowledged() {
    let (stores, _dir) = stores().await;
    let github = fake_github().await;
    let mut batch = event("sync-batch");
    // An installation GitHub does not know: 404 on the token, every time.
    set_job(&mut records(&mut batch)[0], |job| {
        job["installation_id"] = json!(INSTALLATION + 1);
    });
    let response = function(&github, &stores)
        .handle(sqs_event(batch.clone()), None)
        .await;
    assert_eq!(failures(&response), Vec::<String>::new());
    assert_eq!(github.check_runs().len(), 1, "the second job still ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn other_repositories_run_while_one_group_is_held() {
    let (stores, _dir) = stores().await;
    let github = fake_github().await;
    github.inject(Fault::server_error(100).on("GET", TARBALL));
    let sample = event("sync-batch");
    let first = sample["Records"][0].clone();
    let second = next_push_in_its_lane(&first);
    let mut other = first.clone();
    other["messageId"] = json!("0f6c2b1a-5d3e-4c7b-9a8f-0000000000b1");
    let lane = first["attributes"]["MessageGroupId"]
        .as_str()
        .and_then(|group| group.split_once('-'))
        .map(|(_, lane)| lane.to_owned())
        .expect("a group of the form <repository id>-<lane>");
    other["attributes"]["MessageGroupId"] = json!(format!("7770001-{lane}"));
    set_job(&mut other, |job| {
        job["repository"] = json!("astrolift-demo/other");
        job["repository_id"] = json!(7_770_001);
        job["delivery_id"] = json!("other-delivery");
    });
    let batch = json!({ "Records": [first, other, second] });
    let response = function(&github, &stores)
        .handle(sqs_event(batch.clone()), None)
        .await;
    let ids = message_ids(&batch);
    assert_eq!(failures(&response), vec![ids[0].clone(), ids[2].clone()]);
    let runs = github.check_runs();
    assert_eq!(runs.len(), 2, "{runs:#?}");
    assert_eq!(runs[0].conclusion.as_deref(), Some("failure"));
    assert_eq!(runs[1].status, "completed");
    assert_ne!(runs[1].conclusion.as_deref(), Some("failure"), "{runs:#?}");
}

/// Another delivery of a push to the same branch: the same FIFO group as `push`.
fn next_push_in_its_lane(push: &Value) -> Value {
    let mut next = push.clone();
    next["messageId"] = json!("0f6c2b1a-5d3e-4c7b-9a8f-0000000000a2");
    next["attributes"]["MessageDeduplicationId"] = json!("next-push-delivery");
    set_job(&mut next, |job| {
        job["delivery_id"] = json!("next-push-delivery");
        job["before"] = job["head_sha"].clone();
        job["head_sha"] = json!(PR_SHA);
    });
    next
}

fn records(batch: &mut Value) -> &mut Vec<Value> {
    batch["Records"].as_array_mut().expect("Records")
}

/// Edits the job in `record`'s body.
fn set_job(record: &mut Value, edit: impl FnOnce(&mut Value)) {
    let mut job: Value =
        serde_json::from_str(record["body"].as_str().expect("body")).expect("a job");
    edit(&mut job);
    record["body"] = json!(job.to_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn records_are_not_started_too_close_to_the_deadline() {
    let (stores, _dir) = stores().await;
    let github = fake_github().await;
    let batch = event("sync-batch");
    let soon = std::time::SystemTime::now() + std::time::Duration::from_secs(30);
    let response = function(&github, &stores)
        .handle(sqs_event(batch.clone()), Some(soon))
        .await;
    assert_eq!(failures(&response), message_ids(&batch));
    assert!(github.check_runs().is_empty());
}
