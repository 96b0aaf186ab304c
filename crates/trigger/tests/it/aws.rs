//! Secrets Manager and SQS against moto (`eval "$(scripts/moto.sh start 0)"`).
//! Skipped with a note when AWS_ENDPOINT_URL is unset; failing then when
//! ASTROLIFT_REQUIRE_AWS=1.

use std::time::Duration;

use astrolift_dispatch::dispatch::{DispatchMessage, DispatchQueue, SqsDispatchQueue};
use astrolift_store::testing::{aws_endpoint, unique_name};
use astrolift_trigger::{AwsSecretResolver, SecretResolver};
use secrecy::ExposeSecret;

async fn aws_config(test: &str) -> Option<aws_config::SdkConfig> {
    aws_endpoint(test)?;
    Some(astrolift_store::load_sdk_config().await)
}

#[tokio::test]
async fn secrets_manager_values_are_read_and_cached() {
    let Some(config) = aws_config("secrets_manager_values_are_read_and_cached").await else {
        return;
    };
    let client = aws_sdk_secretsmanager::Client::new(&config);
    let prefix = format!("{}/", unique_name("astrolift"));
    let name = "agents/jira-hook";
    let scoped = format!("{prefix}p-1/{name}");
    client
        .create_secret()
        .name(&scoped)
        .secret_string("v1-value")
        .send()
        .await
        .expect("creates");
    let resolver =
        AwsSecretResolver::new(client.clone(), Duration::from_secs(300)).with_prefix(&prefix);
    let reference = format!("secret://{name}");
    let value = resolver.resolve("p-1", &reference).await.expect("resolves");
    assert_eq!(value.expose_secret(), "v1-value");
    client
        .put_secret_value()
        .secret_id(&scoped)
        .secret_string("v2-value")
        .send()
        .await
        .expect("rotates");
    let cached = resolver.resolve("p-1", &reference).await.expect("cached");
    assert_eq!(
        cached.expose_secret(),
        "v1-value",
        "served from the cache within the TTL"
    );
    let fresh = AwsSecretResolver::new(client, Duration::ZERO).with_prefix(&prefix);
    assert_eq!(
        fresh
            .resolve("p-1", &reference)
            .await
            .expect("fresh")
            .expose_secret(),
        "v2-value"
    );
    let error = fresh
        .resolve("p-1", "secret://does/not-exist")
        .await
        .expect_err("missing");
    assert!(
        !error.is_unavailable(),
        "a missing secret is a configuration error: {error}"
    );
    assert_eq!(
        astrolift_trigger::TriggerError::from(error.clone()).status(),
        500
    );
    assert!(
        error.to_string().contains("secret://does/not-exist"),
        "{error}"
    );
}

#[tokio::test]
async fn dispatch_messages_reach_the_sqs_queue() {
    let Some(config) = aws_config("dispatch_messages_reach_the_sqs_queue").await else {
        return;
    };
    let queue = SqsDispatchQueue::create(
        aws_sdk_sqs::Client::new(&config),
        &unique_name("dispatches"),
    )
    .await
    .expect("creates");
    let dir = tempfile::tempdir().expect("tempdir");
    let state = astrolift_store::state::SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("opens");
    let recorded = crate::dispatch::record_binding(
        &state,
        &crate::dispatch::stored_binding(),
        "snap-1",
        None,
        "t-1:key:sqs",
        1,
    )
    .await;
    let message = DispatchMessage::of(&recorded.dispatch).expect("message");
    queue.publish(&message).await.expect("publishes");
    let bodies = queue.receive(1).await.expect("receives");
    assert_eq!(bodies, vec![message]);
}
