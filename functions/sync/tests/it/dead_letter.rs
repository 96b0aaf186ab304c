//! The sync queue's dead letter on moto SQS (docs/operations.md, "Drain or redrive the
//! DLQ"): a job that fails retryably is reported as a batch item failure, SQS moves it to
//! the DLQ after `maxReceiveCount` receives, `SqsDeadLetterQueue::list` (what
//! `astrolift jobs list --queue-url` prints) shows it without consuming it, and
//! `SqsDeadLetterQueue::redrive` (`jobs retry --queue-url`) sends it back to the sync
//! queue, where it applies once GitHub is back.

use std::collections::HashMap;

use astrolift_bot::sqs_dead_letter::{Redrive, SqsDeadLetterQueue};
use astrolift_fake_github::{FakeGitHub, Fault};
use astrolift_fn_sync::SyncFunction;
use astrolift_store::testing::aws_endpoint;
use serde_json::{Value, json};

use crate::dead_letter_queues::{fifo_queue_with_dead_letter, message_group, received};
use crate::support::{REPOSITORY, event, failures, fake_github, function, sqs_event, stores};

/// The template's redrive policy has 5; 2 keeps the test short, the mechanism is the same.
const MAX_RECEIVE_COUNT: usize = 2;

const TARBALL: &str = "/repos/astrolift-demo/agents/tarball";

/// Sends the sample push (`events/sync-batch.json`'s first record) as the webhook would.
async fn send_push(client: &aws_sdk_sqs::Client, url: &str) -> Value {
    let record = event("sync-batch")["Records"][0].clone();
    client
        .send_message()
        .queue_url(url)
        .message_body(record["body"].as_str().expect("a body"))
        .message_group_id(
            record["attributes"]["MessageGroupId"]
                .as_str()
                .expect("group"),
        )
        .message_deduplication_id(
            record["attributes"]["MessageDeduplicationId"]
                .as_str()
                .expect("dedup id"),
        )
        .send()
        .await
        .expect("sends");
    serde_json::from_str(record["body"].as_str().expect("a body")).expect("a job")
}

/// One poll of the event source mapping: receive a batch, hand it to the function, delete
/// what it did not report, make the reported records visible again. The number of
/// records received, and the reported ones.
async fn poll(
    sync: &SyncFunction,
    client: &aws_sdk_sqs::Client,
    url: &str,
) -> (usize, Vec<String>) {
    let mut receipts = HashMap::new();
    let records: Vec<Value> = received(client, url)
        .await
        .iter()
        .map(|m| {
            let id = m.message_id().expect("an id").to_owned();
            receipts.insert(
                id.clone(),
                m.receipt_handle().expect("a receipt").to_owned(),
            );
            let group = message_group(m);
            json!({"messageId": id, "body": m.body(), "attributes": {"MessageGroupId": group}})
        })
        .collect();
    let count = records.len();
    if count == 0 {
        return (0, Vec::new());
    }
    let response = sync
        .handle(sqs_event(json!({ "Records": records })), None)
        .await;
    let reported = failures(&response);
    for (id, receipt) in receipts {
        let call = if reported.contains(&id) {
            client
                .change_message_visibility()
                .queue_url(url)
                .receipt_handle(receipt)
                .visibility_timeout(0)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        } else {
            client
                .delete_message()
                .queue_url(url)
                .receipt_handle(receipt)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        call.expect("acknowledges or releases");
    }
    (count, reported)
}

/// Polls until the job failed `MAX_RECEIVE_COUNT` times and SQS moved it to the DLQ.
async fn fail_until_dead_lettered(sync: &SyncFunction, client: &aws_sdk_sqs::Client, url: &str) {
    for receive in 1..=MAX_RECEIVE_COUNT {
        let (count, reported) = poll(sync, client, url).await;
        assert_eq!(count, 1, "receive {receive} delivered the job");
        assert_eq!(reported.len(), 1, "receive {receive}: a batch item failure");
    }
    assert_eq!(poll(sync, client, url).await.0, 0, "moved to the DLQ");
}

/// The sample push, sent to a fresh queue and dead-lettered while GitHub is down.
struct DeadLettered {
    stores: astrolift_sync::Stores,
    _dir: tempfile::TempDir,
    github: FakeGitHub,
    sync: SyncFunction,
    client: aws_sdk_sqs::Client,
    source: String,
    dlq: SqsDeadLetterQueue,
    job: Value,
}

async fn dead_lettered() -> DeadLettered {
    let (stores, dir) = stores().await;
    let github = fake_github().await;
    let sync = function(&github, &stores);
    let client = aws_sdk_sqs::Client::new(&astrolift_store::load_sdk_config().await);
    let (source, dlq) = fifo_queue_with_dead_letter(&client, "sync-dlq", MAX_RECEIVE_COUNT).await;
    let job = send_push(&client, &source).await;
    github.inject(Fault::server_error(10_000).on("GET", TARBALL));
    fail_until_dead_lettered(&sync, &client, &source).await;
    let dlq = SqsDeadLetterQueue::new(client.clone(), dlq);
    DeadLettered {
        stores,
        _dir: dir,
        github,
        sync,
        client,
        source,
        dlq,
        job,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_failing_retryably_is_dead_lettered_listed_and_applies_once_redriven() {
    if aws_endpoint("a_job_failing_retryably_is_dead_lettered_listed_and_applies_once_redriven")
        .is_none()
    {
        return;
    }
    let DeadLettered {
        stores,
        _dir,
        github,
        sync,
        client,
        source,
        dlq,
        job,
    } = dead_lettered().await;
    let runs = github.check_runs();
    assert!(
        runs.iter()
            .all(|r| r.conclusion.as_deref() == Some("failure")),
        "each failed attempt completed its run as failure: {runs:#?}"
    );

    let listed = dlq.list().await.expect("lists");
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let letter = &listed[0];
    let listed_job = letter.job.as_ref().expect("a sync job");
    assert_eq!(
        listed_job.delivery_id,
        job["delivery_id"].as_str().expect("id")
    );
    assert_eq!(listed_job.repository, REPOSITORY);
    assert!(
        letter.receive_count >= u32::try_from(MAX_RECEIVE_COUNT).expect("small"),
        "{letter:?}"
    );
    assert_eq!(
        dlq.list().await.expect("lists again").len(),
        1,
        "listing consumed nothing"
    );

    github.clear_faults();
    let sent = dlq.redrive(&Redrive::All, None).await.expect("redrives");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].message_id, letter.message_id);
    assert!(
        dlq.list().await.expect("lists").is_empty(),
        "the DLQ is empty"
    );

    let (count, reported) = poll(&sync, &client, &source).await;
    assert_eq!((count, reported), (1, Vec::new()), "the redriven job ran");
    let agents = stores.state.list_agents(REPOSITORY).await.expect("agents");
    assert!(!agents.is_empty(), "the push applied after the redrive");
}

#[tokio::test(flavor = "multi_thread")]
async fn one_dead_letter_is_redriven_by_its_message_id_and_an_unknown_id_is_refused() {
    if aws_endpoint("one_dead_letter_is_redriven_by_its_message_id_and_an_unknown_id_is_refused")
        .is_none()
    {
        return;
    }
    let DeadLettered {
        _dir,
        github,
        sync,
        client,
        source,
        dlq,
        ..
    } = dead_lettered().await;
    let unknown = dlq
        .redrive(&Redrive::Message("no-such-message".into()), None)
        .await
        .expect_err("no such message");
    assert!(
        unknown.to_string().contains("no message no-such-message"),
        "{unknown}"
    );
    let listed = dlq.list().await.expect("lists");
    assert_eq!(listed.len(), 1, "a refused retry leaves the DLQ as it was");

    github.clear_faults();
    let id = listed[0].message_id.clone();
    let sent = dlq
        .redrive(&Redrive::Message(id.clone()), Some(&source))
        .await
        .expect("redrives the message");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].message_id, id);
    assert_eq!(poll(&sync, &client, &source).await, (1, Vec::new()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listing_or_redrive_reads_at_most_its_limit() {
    if aws_endpoint("a_listing_or_redrive_reads_at_most_its_limit").is_none() {
        return;
    }
    let client = aws_sdk_sqs::Client::new(&astrolift_store::load_sdk_config().await);
    let (source, dlq_url) = fifo_queue_with_dead_letter(&client, "dlq-limit", 5).await;
    let body = event("sync-batch")["Records"][0]["body"].clone();
    for _ in 0..5 {
        client
            .send_message()
            .queue_url(&dlq_url)
            .message_body(body.as_str().expect("a body"))
            .message_group_id("812345678-push-0d6e4079e36703eb")
            .message_deduplication_id(astrolift_store::testing::unique_name("limit"))
            .send()
            .await
            .expect("sends");
    }
    let dlq = SqsDeadLetterQueue::new(client.clone(), &dlq_url);
    assert_eq!(dlq.list().await.expect("lists").len(), 5);
    let at_limit = dlq.clone().with_limit(5);
    assert_eq!(at_limit.list().await.expect("lists").len(), 5);
    let past_limit = dlq.clone().with_limit(4);
    assert_eq!(past_limit.list().await.expect("lists").len(), 4);
    let sent = past_limit
        .redrive(&Redrive::All, None)
        .await
        .expect("redrives");
    assert_eq!(sent.len(), 4);
    assert_eq!(dlq.list().await.expect("lists").len(), 1, "one left behind");
    assert_eq!(received(&client, &source).await.len(), 4);
}
