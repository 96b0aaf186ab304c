//! Shared AWS SDK set-up and error mapping for the S3 and DynamoDB stores.

use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::StoreError;

/// Loads the SDK configuration from the standard sources (environment, profile, IMDS).
/// `AWS_ENDPOINT_URL` (and the per-service variants) are honoured by `aws-config` itself.
pub(crate) async fn load_sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await
}

/// Error codes that mean "try again later".
const RETRYABLE_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "SlowDown",
    "ServiceUnavailable",
    "InternalError",
    "InternalServerError",
    "InternalFailure",
    "TransactionInProgressException",
];

/// Maps an SDK error to a [`StoreError`]. The message carries the operation, the error code
/// and the service's message; never the request (which holds the signature).
pub(crate) fn map_sdk_error<E, R>(operation: &str, err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    match &err {
        SdkError::ServiceError(service) => {
            let inner = service.err();
            let code = inner.code().unwrap_or("Unknown");
            let message = format!("{code}: {}", inner.message().unwrap_or("no message"));
            if RETRYABLE_CODES.contains(&code) {
                StoreError::Unavailable(format!("{operation}: {message}"))
            } else {
                StoreError::Backend {
                    operation: operation.to_owned(),
                    message,
                }
            }
        }
        SdkError::ConstructionFailure(_) => StoreError::Invalid(format!(
            "{operation}: could not build the request: {}",
            DisplayErrorContext(&err)
        )),
        _ => StoreError::Unavailable(format!("{operation}: {}", DisplayErrorContext(&err))),
    }
}
