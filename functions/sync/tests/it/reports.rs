//! A terminal result relayed from the trigger function to the sync function
//! (docs/reference.md §10): the trigger function's reporter on the stack,
//! `SqsReportRelay`, queues a report job naming the task on a moto SQS FIFO
//! queue; the sync function, fed that record, reads the dispatch's target and
//! the task's result from the state store and posts the comment with the
//! App's key. The same task relayed twice is one message; a job naming no
//! task, or a task still running, is acknowledged and posts nothing.

use astrolift_bot::report::SqsReportRelay;
use astrolift_dispatch::report::{ResultReporter, TerminalResult};
use astrolift_store::state::tasks::report_task;
use astrolift_store::state::{Dispatch, DispatchStatus, ReportTarget, TaskReport, TaskStatus};
use astrolift_store::testing::{aws_endpoint, unique_name};
use astrolift_sync::Stores;
use serde_json::json;

use crate::support::{
    INSTALLATION, REPOSITORY, delivered, failures, fake_github, fifo_queue, function, sqs_event,
    stores,
};

const NOW: i64 = 1_767_225_600;

fn target() -> ReportTarget {
    ReportTarget {
        kind: "comment".into(),
        repository: REPOSITORY.into(),
        installation_id: INSTALLATION,
        number: 42,
        head_sha: None,
    }
}

/// A dispatch asking for a comment on issue or pull request number 42; its task's id.
async fn dispatch(stores: &Stores, name: &str) -> String {
    let task_id = unique_name(name);
    let record = Dispatch {
        id: format!("d-{task_id}"),
        idempotency_key: format!("k-{task_id}"),
        trigger_id: "trg_0123456789abcdef01234567".into(),
        repository: REPOSITORY.into(),
        manifest_path: "agents/triage/astrolift.toml".into(),
        snapshot_hash: "0".repeat(64),
        payload: None,
        created_at: NOW,
        status: DispatchStatus::Dispatched,
        sender: Some("octocat".into()),
        trusted: true,
        task_id: task_id.clone(),
        env_spec: None,
        message: None,
        report: Some(target()),
    };
    stores
        .state
        .record_dispatch(&record)
        .await
        .expect("records the dispatch and its task");
    task_id
}

async fn finish(stores: &Stores, task_id: &str) {
    let report = TaskReport {
        status: TaskStatus::Succeeded,
        result: Some(json!({"labels": ["p1"]}).to_string()),
    };
    report_task(stores.state.tasks(), task_id, &report, NOW + 5)
        .await
        .expect("the terminal status is recorded");
}

fn terminal(task_id: &str) -> TerminalResult {
    TerminalResult {
        agent: "triage".into(),
        dispatch_id: format!("d-{task_id}"),
        task_id: task_id.to_owned(),
        status: TaskStatus::Succeeded,
        result: None,
    }
}

/// A FIFO queue on moto and the relay onto it.
async fn relay() -> (aws_sdk_sqs::Client, String, SqsReportRelay) {
    let (client, url) = fifo_queue("report").await;
    let relay = SqsReportRelay::new(client.clone(), url.clone());
    (client, url, relay)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_relayed_report_is_posted_by_the_sync_function_once() {
    if aws_endpoint("a_relayed_report_is_posted_by_the_sync_function_once").is_none() {
        return;
    }
    let (stores, _dir) = stores().await;
    let github = fake_github().await;
    let task_id = dispatch(&stores, "t-done").await;
    finish(&stores, &task_id).await;
    let (client, url, relay) = relay().await;
    for _ in 0..2 {
        relay
            .report(&target(), &terminal(&task_id))
            .await
            .expect("queued");
    }

    let event = delivered(&client, &url).await;
    let records = event["Records"].as_array().expect("records");
    assert_eq!(records.len(), 1, "relayed twice, queued once: {event}");
    let body: serde_json::Value =
        serde_json::from_str(records[0]["body"].as_str().expect("a body")).expect("JSON");
    assert_eq!(
        body,
        json!({"version": 1, "kind": "report", "task_id": task_id})
    );

    let response = function(&github, &stores)
        .handle(sqs_event(event), None)
        .await;
    assert_eq!(failures(&response), Vec::<String>::new());
    let comments = github.comments();
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert_eq!(
        (comments[0].repo.as_str(), comments[0].number),
        ("agents", 42)
    );
    assert!(
        comments[0].body.contains("**succeeded**"),
        "{}",
        comments[0].body
    );
    assert!(
        comments[0].body.contains("\"p1\""),
        "the recorded result: {}",
        comments[0].body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_report_job_for_no_task_or_a_running_one_posts_nothing() {
    let (stores, _dir) = stores().await;
    let github = fake_github().await;
    let running = dispatch(&stores, "t-running").await;
    let job = |task_id: &str| json!({"version": 1, "kind": "report", "task_id": task_id});
    let event = json!({"Records": [
        {"messageId": "m-1", "body": job("no-such-task").to_string(),
         "attributes": {"MessageGroupId": "report-1"}},
        {"messageId": "m-2", "body": job(&running).to_string(),
         "attributes": {"MessageGroupId": "report-2"}},
        {"messageId": "m-3", "body": json!({"kind": "reboot"}).to_string(),
         "attributes": {"MessageGroupId": "report-3"}},
    ]});
    let response = function(&github, &stores)
        .handle(sqs_event(event), None)
        .await;
    assert_eq!(failures(&response), Vec::<String>::new(), "never retried");
    assert!(github.comments().is_empty());
}
