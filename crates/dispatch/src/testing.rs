//! Helpers for tests of the Step Functions engine against moto (feature `testing`; never in
//! a Lambda function): moto executes state machines only once asked, and a stage's message
//! is read off its queue as the trigger function's event source would deliver it.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::execution::StageMessage;

/// What a test on moto's Step Functions works with: the SDK configuration, SQS, and a stage
/// queue, with state machines executed.
#[derive(Debug, Clone)]
pub struct MotoStages {
    pub sdk: aws_config::SdkConfig,
    pub sqs: aws_sdk_sqs::Client,
    /// The stage queue's URL.
    pub queue: String,
}

impl MotoStages {
    /// Turns on moto's execution of state machines at `endpoint` and creates the stage queue
    /// `name` there.
    pub async fn start(endpoint: &str, name: &str) -> Result<Self, String> {
        execute_state_machines(endpoint).await?;
        let sdk = astrolift_store::load_sdk_config().await;
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let queue = sqs
            .create_queue()
            .queue_name(name)
            .send()
            .await
            .map_err(|error| format!("{error:?}"))?
            .queue_url
            .ok_or("moto gave the stage queue no URL")?;
        Ok(Self { sdk, sqs, queue })
    }
}

/// Asks moto at `endpoint` to execute state machines (`POST /moto-api/config`).
pub async fn execute_state_machines(endpoint: &str) -> Result<(), String> {
    let config = json!({"stepfunctions": {"execute_state_machine": true}});
    let response = reqwest::Client::new()
        .post(format!("{endpoint}/moto-api/config"))
        .header("content-type", "application/json")
        .body(config.to_string())
        .send()
        .await
        .map_err(|error| error.to_string())?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(format!("moto answered {}", response.status()))
    }
}

/// The next stage message on `queue` within 30 s, deleted from the queue.
pub async fn next_stage_message(
    sqs: &aws_sdk_sqs::Client,
    queue: &str,
) -> Result<StageMessage, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let received = sqs
            .receive_message()
            .queue_url(queue)
            .wait_time_seconds(1)
            .send()
            .await
            .map_err(|error| format!("{error:?}"))?;
        let Some(message) = received.messages().first() else {
            continue;
        };
        sqs.delete_message()
            .queue_url(queue)
            .receipt_handle(message.receipt_handle().unwrap_or_default())
            .send()
            .await
            .map_err(|error| format!("{error:?}"))?;
        return serde_json::from_str(message.body().unwrap_or_default())
            .map_err(|error| format!("not a stage message: {error}"));
    }
    Err("no stage message within 30 s".to_owned())
}
