//! A FIFO sync queue and its FIFO dead-letter queue on moto, shaped like the template's
//! `SyncQueue` and `SyncDeadLetterQueue`: shared by the CLI's and the sync function's tests
//! (each includes this file with `#[path]`).

use astrolift_store::testing::unique_name;
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName, QueueAttributeName};
use serde_json::json;

/// Creates a FIFO DLQ, then a FIFO queue whose redrive policy sends it a message after
/// `max_receive_count` receives: (queue URL, DLQ URL).
pub async fn fifo_queue_with_dead_letter(
    client: &aws_sdk_sqs::Client,
    prefix: &str,
    max_receive_count: usize,
) -> (String, String) {
    let name = unique_name(prefix);
    let fifo = |name: String| {
        client
            .create_queue()
            .queue_name(name)
            .attributes(QueueAttributeName::FifoQueue, "true")
    };
    let dlq = fifo(format!("{name}-dlq.fifo"))
        .send()
        .await
        .expect("creates the DLQ");
    let dlq = dlq.queue_url().expect("a DLQ url").to_owned();
    let attributes = client
        .get_queue_attributes()
        .queue_url(&dlq)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("the DLQ's attributes");
    let arn = attributes
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .expect("an ARN");
    let policy = json!({"deadLetterTargetArn": arn, "maxReceiveCount": max_receive_count});
    let queue = fifo(format!("{name}.fifo"))
        .attributes(QueueAttributeName::RedrivePolicy, policy.to_string())
        .send()
        .await
        .expect("creates the queue");
    (queue.queue_url().expect("a url").to_owned(), dlq)
}

/// One ReceiveMessage of up to 10 messages at `url`, with their system attributes.
pub async fn received(client: &aws_sdk_sqs::Client, url: &str) -> Vec<Message> {
    let received = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .expect("receives");
    received.messages().to_vec()
}

/// A received message's `MessageGroupId` (empty on a standard queue).
pub fn message_group(message: &Message) -> String {
    message
        .attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
        .cloned()
        .unwrap_or_default()
}
