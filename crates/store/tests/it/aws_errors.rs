//! AWS failures become typed errors without secrets.

use astrolift_store::state::DynamoStateStore;
use astrolift_store::state::RegistrationStore;
use astrolift_store::{BlobKey, BlobOptions, BlobStore, S3BlobStore, StoreError};

const SECRET: &str = "do-not-print-this-secret";

fn unreachable_s3() -> aws_sdk_s3::Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .endpoint_url("http://127.0.0.1:1")
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "AKIDEXAMPLE",
            SECRET,
            None,
            None,
            "test",
        ))
        .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

fn assert_no_secret(err: &StoreError) {
    let text = format!("{err} {err:?}");
    for secret in [SECRET, "Signature=", "X-Amz-Signature", "Credential="] {
        assert!(!text.contains(secret), "error leaks {secret:?}: {text}");
    }
}

#[tokio::test]
async fn unreachable_endpoint_is_retryable() {
    let store = S3BlobStore::new(unreachable_s3(), "bucket", "", BlobOptions::default()).unwrap();
    let key = BlobKey::package(&"e".repeat(64)).unwrap();
    let err = store
        .put_if_absent(&key, b"x".to_vec().into(), "application/gzip")
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert_eq!(
        astrolift_store::AwsCause::in_message(&err.to_string()),
        Some(astrolift_store::AwsCause::Connect),
        "{err}"
    );
    assert_no_secret(&err);
}

#[tokio::test]
async fn missing_bucket_and_table_are_backend_errors() {
    if crate::support::aws_endpoint("missing_bucket_and_table_are_backend_errors").is_none() {
        return;
    }
    let bucket = crate::support::unique_name("absent");
    let store = S3BlobStore::from_env(&bucket, "", BlobOptions::default())
        .await
        .unwrap();
    let key = BlobKey::package(&"f".repeat(64)).unwrap();
    let err = store.get(&key).await.unwrap_err();
    assert!(matches!(err, StoreError::Backend { .. }), "{err:?}");
    assert_no_secret(&err);

    let table = DynamoStateStore::from_env(&crate::support::unique_name("absent"))
        .await
        .unwrap();
    let err = table.list_registrations().await.unwrap_err();
    assert!(matches!(err, StoreError::Backend { .. }), "{err:?}");
    assert!(
        err.to_string().contains("ResourceNotFoundException"),
        "{err}"
    );
    assert_no_secret(&err);
}
