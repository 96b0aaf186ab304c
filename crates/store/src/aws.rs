//! Shared AWS SDK set-up and error mapping for the S3 and DynamoDB stores.

use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::StoreError;

/// Loads the SDK configuration from the standard sources (environment, profile, IMDS),
/// with the SDK's own HTTP client, for every AWS client of the workspace.
/// `AWS_ENDPOINT_URL` (and the per-service variants) are honoured by `aws-config` itself.
pub async fn load_sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await
}

/// The services' names, as error messages give them.
pub(crate) const S3: &str = "S3";
pub(crate) const DYNAMODB: &str = "DynamoDB";

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

/// Error codes that mean the credentials were refused or not allowed.
const DENIED_CODES: &[&str] = &[
    "AccessDenied",
    "AccessDeniedException",
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidSignatureException",
    "ExpiredToken",
    "ExpiredTokenException",
];

/// Why an AWS call failed, in words a person can act on. The store's error messages
/// carry [`AwsCause::words`], so a caller can give the matching [`AwsCause::hint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwsCause {
    /// No connection to the endpoint.
    Connect,
    /// The call timed out.
    Timeout,
    /// No credentials were found.
    NoCredentials,
    /// No region is set.
    NoRegion,
    /// The service refused the credentials or the action.
    AccessDenied,
    /// The service asked us to slow down.
    Throttled,
}

impl AwsCause {
    const ALL: [AwsCause; 6] = [
        AwsCause::Connect,
        AwsCause::Timeout,
        AwsCause::NoCredentials,
        AwsCause::NoRegion,
        AwsCause::AccessDenied,
        AwsCause::Throttled,
    ];

    /// The cause in words, as the store's messages say it.
    pub fn words(self) -> &'static str {
        match self {
            AwsCause::Connect => "cannot connect to AWS",
            AwsCause::Timeout => "AWS did not answer in time",
            AwsCause::NoCredentials => "no AWS credentials found",
            AwsCause::NoRegion => "no AWS region set",
            AwsCause::AccessDenied => "AWS refused the credentials",
            AwsCause::Throttled => "AWS throttled the request",
        }
    }

    /// What to do next.
    pub fn hint(self) -> &'static str {
        match self {
            AwsCause::Connect | AwsCause::Timeout => {
                "check the network, AWS_REGION, and AWS_ENDPOINT_URL when using a local endpoint"
            }
            AwsCause::NoCredentials => {
                "set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            }
            AwsCause::NoRegion => "set AWS_REGION (for example AWS_REGION=eu-west-1)",
            AwsCause::AccessDenied => {
                "check that the credentials are current and allowed this action on this resource"
            }
            AwsCause::Throttled => "retry later",
        }
    }

    /// The cause a store error message names, if any.
    pub fn in_message(message: &str) -> Option<AwsCause> {
        AwsCause::ALL
            .into_iter()
            .find(|cause| message.contains(cause.words()))
    }
}

/// Maps an SDK error to a [`StoreError`] of one short line ([`describe_sdk_error`]'s):
/// retryable codes and calls the service never answered are
/// [`StoreError::Unavailable`], a request that could not be built
/// [`StoreError::Invalid`], other answers [`StoreError::Backend`].
pub(crate) fn map_sdk_error<E, R>(service: &str, operation: &str, err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + 'static,
{
    log_sdk_error(service, operation, &err);
    let operation = format!("{service} {operation}");
    if let SdkError::ServiceError(service) = &err {
        let (code, message) = service_message(service.err());
        return if RETRYABLE_CODES.contains(&code) {
            StoreError::Unavailable(format!("{operation}: {message}"))
        } else {
            StoreError::Backend { operation, message }
        };
    }
    let (cause, message) = unanswered_message(&operation, &err);
    match err {
        SdkError::ConstructionFailure(_) if cause.is_none() => StoreError::Invalid(message),
        _ => StoreError::Unavailable(message),
    }
}

/// One short line for an SDK error of any AWS service: the service, the operation, the
/// cause in words ([`AwsCause`]) and the service's code and message or the innermost
/// cause. Never the request (which holds the signature), nor the SDK's debug dump, which
/// is logged at `debug` level.
pub fn describe_sdk_error<E, R>(service: &str, operation: &str, err: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + 'static,
{
    log_sdk_error(service, operation, err);
    let operation = format!("{service} {operation}");
    match err {
        SdkError::ServiceError(service) => {
            format!("{operation} failed: {}", service_message(service.err()).1)
        }
        _ => unanswered_message(&operation, err).1,
    }
}

fn log_sdk_error<E, R>(service: &str, operation: &str, err: &SdkError<E, R>)
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    tracing::debug!(service, operation, error = %DisplayErrorContext(err), "AWS call failed");
}

/// A service's answer: its code, and `code: message` with the cause in words first when
/// the code says the credentials were refused or the request throttled.
fn service_message<E: ProvideErrorMetadata>(inner: &E) -> (&str, String) {
    let code = inner.code().unwrap_or("Unknown");
    let message = format!("{code}: {}", inner.message().unwrap_or("no message"));
    let throttled = code.contains("Throttl") || code.contains("Exceeded") || code == "SlowDown";
    let cause = if DENIED_CODES.contains(&code) {
        Some(AwsCause::AccessDenied)
    } else if throttled && RETRYABLE_CODES.contains(&code) {
        Some(AwsCause::Throttled)
    } else {
        None
    };
    match cause {
        Some(cause) => (code, format!("{}: {message}", cause.words())),
        None => (code, message),
    }
}

/// A call the service never answered: its cause, when known, and its line.
fn unanswered_message<E, R>(operation: &str, err: &SdkError<E, R>) -> (Option<AwsCause>, String)
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug + 'static,
{
    let cause = unanswered_cause(err);
    // Which providers were tried, or where the region may come from, is the debug log's.
    let message = match cause {
        Some(cause @ (AwsCause::NoCredentials | AwsCause::NoRegion)) => {
            format!("{operation}: {}", cause.words())
        }
        Some(cause) => format!("{operation}: {}: {}", cause.words(), innermost(err)),
        None => format!("{operation}: {}", innermost(err)),
    };
    (cause, message)
}

/// Why a call the service never answered failed, where the SDK's error says.
fn unanswered_cause<E, R>(err: &SdkError<E, R>) -> Option<AwsCause>
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug + 'static,
{
    let text = chain_text(err).to_ascii_lowercase();
    if text.contains("credential") {
        return Some(AwsCause::NoCredentials);
    }
    if text.contains("region") {
        return Some(AwsCause::NoRegion);
    }
    match err {
        SdkError::TimeoutError(_) => Some(AwsCause::Timeout),
        SdkError::DispatchFailure(failure) if failure.is_timeout() => Some(AwsCause::Timeout),
        SdkError::DispatchFailure(failure) if failure.is_io() => Some(AwsCause::Connect),
        _ => None,
    }
}

/// Every message of the error's chain, joined.
fn chain_text(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The first line of the innermost message of the error's chain: the most specific one
/// (`Connection refused (os error 111)` rather than `dispatch failure`).
fn innermost(err: &(dyn std::error::Error + 'static)) -> String {
    let mut last = err;
    while let Some(cause) = last.source() {
        last = cause;
    }
    let text = last.to_string();
    text.lines().next().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::error::{ConnectorError, SdkError};
    use aws_sdk_dynamodb::operation::query::QueryError;

    use super::*;

    type Error = SdkError<QueryError>;

    #[test]
    fn a_refused_connection_is_one_line_in_words() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let err = Error::dispatch_failure(ConnectorError::io(Box::new(refused)));
        let message = map_sdk_error(DYNAMODB, "Query", err).to_string();
        assert_eq!(
            message,
            "store unavailable (retryable): DynamoDB Query: cannot connect to AWS: connection refused"
        );
        assert_eq!(AwsCause::in_message(&message), Some(AwsCause::Connect));
    }

    #[test]
    fn missing_credentials_and_region_are_named_without_the_providers_tried() {
        let credentials = "no credentials found in chain. Attempted:\n  Environment: not set";
        let err = Error::dispatch_failure(ConnectorError::other(credentials.into(), None));
        let message = map_sdk_error(DYNAMODB, "Query", err).to_string();
        assert!(
            message.ends_with("DynamoDB Query: no AWS credentials found"),
            "{message}"
        );

        let err = Error::construction_failure("Invalid Configuration: Missing Region");
        let message = map_sdk_error(S3, "PutObject", err).to_string();
        assert!(
            message.ends_with("S3 PutObject: no AWS region set"),
            "{message}"
        );
        assert_eq!(AwsCause::in_message(&message), Some(AwsCause::NoRegion));
    }

    #[test]
    fn a_timeout_is_named() {
        let err = Error::timeout_error("operation timeout (all attempts) exceeded");
        let message = map_sdk_error(DYNAMODB, "GetItem", err).to_string();
        assert_eq!(
            AwsCause::in_message(&message),
            Some(AwsCause::Timeout),
            "{message}"
        );
    }
}
