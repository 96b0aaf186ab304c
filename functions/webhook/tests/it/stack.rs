//! One webhook end to end against a deployed stack's resources:
//! run by `scripts/smoke-webhook.sh` from the deploy smoke test, with the
//! names of the table, queue and secret that CloudFormation (moto) created.
//! The function is built exactly as on Lambda (`WebhookFunction::from_env`:
//! DynamoDB state, the webhook secret from Secrets Manager, the SQS FIFO
//! queue), then handles the signed push of `events/`.

use astrolift_bot::SyncJob;
use astrolift_bot::config::Environment;
use astrolift_fn_webhook::WebhookFunction;

use crate::support::request;

#[tokio::test]
async fn a_signed_push_reaches_the_stacks_fifo_queue() {
    let Some(queue_url) = smoke_queue_url() else {
        return;
    };
    let function = WebhookFunction::from_env(&Environment::new())
        .await
        .expect("the cold start succeeds on the stack's resources");
    let response = function.handle(request("webhook-push")).await;
    assert_eq!(response.status().as_u16(), 202);
    let again = function.handle(request("webhook-push")).await;
    assert_eq!(
        again.status().as_u16(),
        200,
        "the stack's table dedupes the redelivery"
    );

    let config = astrolift_store::load_sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let received = sqs
        .receive_message()
        .queue_url(&queue_url)
        .max_number_of_messages(10)
        .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
        .send()
        .await
        .expect("receive");
    let messages = received.messages();
    assert_eq!(messages.len(), 1, "one job for one delivery");
    let job: SyncJob =
        serde_json::from_str(messages[0].body().unwrap_or_default()).expect("a sync job");
    let group = messages[0]
        .attributes()
        .and_then(|a| a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId))
        .cloned();
    assert_eq!(group, Some(job.message_group_id()));
}

/// The stack's sync queue, which scripts/smoke-webhook.sh exports. Without it the test
/// skips with a note, or fails when `ASTROLIFT_REQUIRE_AWS=1` (as every AWS test does:
/// scripts/test.sh runs the workspace with `--skip stack::` and this test from the deploy
/// smoke test, so a smoke run that lost the variable fails instead of passing empty).
fn smoke_queue_url() -> Option<String> {
    match std::env::var("SMOKE_SYNC_QUEUE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("ASTROLIFT_REQUIRE_AWS").as_deref() == Ok("1") => panic!(
            "ASTROLIFT_REQUIRE_AWS=1 but SMOKE_SYNC_QUEUE_URL is not set: run this test \
             through scripts/deploy-smoke.sh (scripts/smoke-webhook.sh sets it)"
        ),
        _ => {
            eprintln!(
                "note: skipping: SMOKE_SYNC_QUEUE_URL is not set (scripts/smoke-webhook.sh sets it)"
            );
            None
        }
    }
}
