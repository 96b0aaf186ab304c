//! `astrolift jobs list|retry --queue-url` on a moto SQS dead-letter queue
//! (docs/reference.md §3; docs/operations.md, "Drain or redrive the DLQ"): listing shows
//! each message's job and consumes none; a retry sends one message, or all, back to the
//! queue whose redrive policy names the DLQ, in its message group; an unknown message id
//! is refused with exit 2; an unreachable endpoint reads as the error summary's two lines.

use astrolift_store::testing::{aws_endpoint, unique_name};
use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::{Value, json};

use crate::dead_letter_queues::{fifo_queue_with_dead_letter, message_group, received};
use crate::errors::{astrolift_with_only_aws_env, closed_endpoint};
use crate::support::{astrolift, json};

const GROUP: &str = "812345678-push-0d6e4079e36703eb";

fn job(delivery: &str) -> String {
    json!({
        "version": 1, "delivery_id": delivery, "trigger": "push", "installation_id": 1,
        "repository": "octo/agents", "repository_id": 812345678,
        "head_sha": "3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a", "branch": "main", "fork": false,
        "commit_time": null, "default_branch": "main", "pull_request": null
    })
    .to_string()
}

async fn client() -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(&astrolift_store::load_sdk_config().await)
}

/// A FIFO queue whose redrive policy names a FIFO DLQ holding two jobs and a body that is
/// not one: (source URL, DLQ URL).
async fn dead_letters(client: &aws_sdk_sqs::Client) -> (String, String) {
    let (source, dlq) = fifo_queue_with_dead_letter(client, "cli-dlq", 5).await;
    for (dedup, body) in [
        ("d-1", job("d-1")),
        ("d-2", job("d-2")),
        ("d-bad", "not json".to_owned()),
    ] {
        client
            .send_message()
            .queue_url(&dlq)
            .message_group_id(GROUP)
            .message_deduplication_id(dedup)
            .message_body(body)
            .send()
            .await
            .expect("sends");
    }
    (source, dlq)
}

fn list(dlq: &str) -> Vec<Value> {
    let run = astrolift(["jobs", "list", "--queue-url", dlq, "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    json(&run.stdout).as_array().expect("an array").clone()
}

/// What the source queue holds: (group, body) of each message.
async fn source_messages(client: &aws_sdk_sqs::Client, url: &str) -> Vec<(String, String)> {
    received(client, url)
        .await
        .iter()
        .map(|m| (message_group(m), m.body().unwrap_or_default().to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn jobs_list_and_retry_read_and_redrive_the_dead_letter_queue() {
    if aws_endpoint("jobs_list_and_retry_read_and_redrive_the_dead_letter_queue").is_none() {
        return;
    }
    let client = client().await;
    let (source, dlq) = dead_letters(&client).await;

    let listed = list(&dlq);
    assert_eq!(listed.len(), 3, "{listed:#?}");
    assert_eq!(listed[0]["job"]["delivery_id"], "d-1");
    assert_eq!(listed[0]["message_group_id"], GROUP);
    assert!(listed[0]["receive_count"].as_u64().is_some_and(|n| n >= 1));
    assert!(listed[0].get("error").is_none(), "{:#?}", listed[0]);
    assert_eq!(listed[2]["job"], Value::Null);
    assert!(
        listed[2]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not JSON"))
    );
    assert_eq!(list(&dlq).len(), 3, "listing consumed nothing");

    let human = astrolift(["jobs", "list", "--queue-url", &dlq]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    let first = listed[0]["message_id"].as_str().expect("an id");
    assert!(
        human
            .stdout
            .lines()
            .next()
            .is_some_and(|line| line.starts_with(first)
                && line.contains("push octo/agents@main 3f2a9c1e5b7d  delivery d-1")),
        "{}",
        human.stdout
    );
    assert!(human.stdout.ends_with("3 messages\n"), "{}", human.stdout);

    let unknown = astrolift(["jobs", "retry", "--queue-url", &dlq, "no-such-message"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("no message no-such-message"),
        "{}",
        unknown.stderr
    );

    let one = astrolift(["jobs", "retry", "--queue-url", &dlq, first]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert_eq!(one.stdout, format!("queued message {first} again\n"));
    assert_eq!(
        source_messages(&client, &source).await,
        vec![(GROUP.to_owned(), job("d-1"))]
    );
    assert_eq!(list(&dlq).len(), 2);

    let all = astrolift(["jobs", "retry", "--queue-url", &dlq, "--all-failed"]);
    assert_eq!(all.code, 0, "{}", all.stderr);
    assert!(
        all.stdout.ends_with("2 failed messages queued again\n"),
        "{}",
        all.stdout
    );
    assert!(list(&dlq).is_empty(), "the DLQ is empty");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_letter_queue_without_a_source_needs_to_queue_url() {
    if aws_endpoint("a_dead_letter_queue_without_a_source_needs_to_queue_url").is_none() {
        return;
    }
    let client = client().await;
    let (_, dlq) = dead_letters(&client).await;
    let lonely = client
        .create_queue()
        .queue_name(format!("{}.fifo", unique_name("cli-lonely")))
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("queue");
    let lonely = lonely.queue_url().expect("url");
    let refused = astrolift(["jobs", "retry", "--queue-url", lonely, "--all-failed"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("--to-queue-url"),
        "{}",
        refused.stderr
    );

    let to = astrolift([
        "jobs",
        "retry",
        "--queue-url",
        &dlq,
        "--all-failed",
        "--to-queue-url",
        lonely,
    ]);
    assert_eq!(to.code, 0, "{}", to.stderr);
    assert_eq!(source_messages(&client, lonely).await.len(), 3);
}

#[test]
fn an_unreachable_queue_is_the_error_summary_with_its_hint() {
    let endpoint = closed_endpoint();
    let env = [
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
    ];
    let args = ["jobs", "list", "--queue-url", "http://127.0.0.1:9/q.fifo"];
    let run = astrolift_with_only_aws_env(&args, &env);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert!(
        lines[0].starts_with("error: SQS ReceiveMessage"),
        "{}",
        run.stderr
    );
    assert!(lines[0].contains("cannot connect to AWS"), "{}", run.stderr);
    assert!(
        lines[1].starts_with("hint: ") && lines[1].contains(&endpoint),
        "{}",
        run.stderr
    );
}
