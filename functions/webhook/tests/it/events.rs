//! Every sample event through `handle`, as the Lambda runtime delivers it.

use astrolift_store::state::DeliveryOutcome;
use serde_json::json;

use crate::support::{answer, batch_jobs, event_text, harness, request, webhook_events};

#[tokio::test]
async fn every_webhook_event_gets_its_expected_status() {
    let events = webhook_events();
    assert!(events.len() >= 5, "too few sample events: {events:?}");
    for (name, expected) in events {
        let h = harness().await;
        let response = h.function.handle(request(&name)).await;
        let (status, body) = answer(&response);
        assert_eq!(status, expected, "{name}: {body}");
        let queued = h.jobs.jobs().len();
        assert_eq!(queued, usize::from(status == 202), "{name}: {queued} jobs");
    }
}

#[tokio::test]
async fn the_base64_push_queues_the_job_of_the_sync_batch() {
    let h = harness().await;
    let (status, body) = answer(&h.function.handle(request("webhook-push")).await);
    assert_eq!((status, body), (202, json!({ "status": "queued" })));
    let (status, _) = answer(
        &h.function
            .handle(request("webhook-pull-request-opened"))
            .await,
    );
    assert_eq!(status, 202);
    // The sync function's sample batch is exactly what these two deliveries queue.
    assert_eq!(h.jobs.jobs(), batch_jobs());
}

#[tokio::test]
async fn a_redelivered_push_is_a_duplicate_and_queues_nothing() {
    let h = harness().await;
    let (first, _) = answer(&h.function.handle(request("webhook-push")).await);
    let (second, body) = answer(&h.function.handle(request("webhook-push")).await);
    assert_eq!(first, 202);
    assert_eq!((second, body), (200, json!({ "status": "duplicate" })));
    assert_eq!(h.jobs.jobs().len(), 1);
}

#[tokio::test]
async fn a_bad_signature_records_nothing() {
    let h = harness().await;
    let (status, body) = answer(&h.function.handle(request("webhook-bad-signature")).await);
    assert_eq!(status, 401, "{body}");
    assert!(h.jobs.jobs().is_empty());
    let event: serde_json::Value =
        serde_json::from_str(&event_text("webhook-bad-signature")).expect("json");
    let delivery = event["headers"]["x-github-delivery"].as_str().expect("id");
    let outcome = h
        .state
        .record_delivery(delivery, 1, std::time::Duration::from_secs(60))
        .await
        .expect("state");
    assert_eq!(
        outcome,
        DeliveryOutcome::New,
        "the refused delivery was recorded"
    );
}

#[tokio::test]
async fn a_get_is_refused_with_405() {
    let h = harness().await;
    let text = event_text("webhook-ping").replace("\"POST\"", "\"GET\"");
    let request = lambda_http::request::from_str(&text).expect("event");
    let response = h.function.handle(request).await;
    assert_eq!(
        response
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok()),
        Some("POST")
    );
    assert_eq!(answer(&response).0, 405);
}

/// The binary refuses to start without its queue, and says why.
#[test]
fn a_cold_start_without_the_sync_queue_fails_clearly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_webhook"))
        .env_remove("ASTROLIFT_SYNC_QUEUE_URL")
        .env_remove("GITHUB_WEBHOOK_SECRET_ID")
        .env("GITHUB_WEBHOOK_SECRET", "cold-start-secret")
        .env(
            "ASTROLIFT_STATE",
            format!("sqlite:{}", dir.path().join("state.db").display()),
        )
        .env(
            "ASTROLIFT_BLOBS",
            format!("file:{}", dir.path().join("blobs").display()),
        )
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        .output()
        .expect("the webhook binary runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("ASTROLIFT_SYNC_QUEUE_URL is not set"),
        "{stderr}"
    );
    assert!(!stderr.contains("cold-start-secret"), "{stderr}");
}

#[tokio::test]
async fn a_command_comment_queues_one_comment_job_and_a_bots_queues_none() {
    let h = harness().await;
    let (status, _) = answer(
        &h.function
            .handle(request("webhook-issue-comment-command"))
            .await,
    );
    assert_eq!(status, 202);
    let jobs = h.jobs.jobs();
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(job.trigger, astrolift_bot::JobTrigger::Comment);
    assert_eq!(job.pull_request, Some(42));
    assert_eq!(
        job.lane(),
        "pull-request",
        "after the syncs of the pull request"
    );
    let comment = job.comment.as_ref().expect("the comment's commands");
    assert_eq!(
        (comment.comment_id, comment.sender.as_str()),
        (3001, "octocat")
    );
    assert_eq!(comment.lines, ["/astrolift dispatch triage --input '{}'"]);

    let h = harness().await;
    let (status, body) = answer(
        &h.function
            .handle(request("webhook-issue-comment-bot"))
            .await,
    );
    assert_eq!(
        (status, &body["status"]),
        (200, &json!("ignored")),
        "{body}"
    );
    assert!(h.jobs.jobs().is_empty());
}
