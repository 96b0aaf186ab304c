//! The real queue: a push through the function lands on an SQS FIFO queue
//! (moto) with the repository as message group and the delivery as dedupe id.

use std::sync::Arc;

use astrolift_bot::{SqsJobQueue, SyncJob};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};

use crate::support::{answer, batch_jobs, function_with, request};

#[tokio::test(flavor = "multi_thread")]
async fn a_push_is_queued_on_the_fifo_queue_in_its_repository_group() {
    if astrolift_store::testing::aws_endpoint("webhook SQS FIFO").is_none() {
        return;
    }
    let config = astrolift_store::load_sdk_config().await;
    let client = aws_sdk_sqs::Client::new(&config);
    let name = format!("{}.fifo", astrolift_store::testing::unique_name("webhook"));
    let queue_url = client
        .create_queue()
        .queue_name(&name)
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("create the FIFO queue")
        .queue_url
        .expect("queue url");
    let queue = Arc::new(SqsJobQueue::new(client.clone(), queue_url.clone()));
    let (function, _state, _dir) = function_with(queue).await;

    let (status, body) = answer(&function.handle(request("webhook-push")).await);
    assert_eq!(status, 202, "{body}");

    let received = client
        .receive_message()
        .queue_url(&queue_url)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .max_number_of_messages(10)
        .send()
        .await
        .expect("receive");
    let messages = received.messages.unwrap_or_default();
    assert_eq!(messages.len(), 1, "{messages:#?}");
    let message = &messages[0];
    let job: SyncJob =
        serde_json::from_str(message.body.as_deref().expect("body")).expect("a sync job");
    let expected = &batch_jobs()[0];
    assert_eq!(&job, expected);
    let attributes = message.attributes.clone().unwrap_or_default();
    let attribute = |name| attributes.get(&name).map(String::as_str);
    assert_eq!(
        attribute(MessageSystemAttributeName::MessageGroupId),
        Some(expected.message_group_id().as_str())
    );
    assert_eq!(
        attribute(MessageSystemAttributeName::MessageDeduplicationId),
        Some(expected.delivery_id.as_str())
    );
}
