//! [`TriggerError`] and its HTTP status (docs/reference.md §10), and
//! [`VerifyError`], its 401 cause.

use astrolift_jq::sandbox::SandboxError;

use astrolift_dispatch::answer::RETRY_AFTER_SECONDS;

use crate::secrets::SecretError;

/// Why a trigger request was not dispatched. [`TriggerError::status`] is the
/// HTTP answer; messages never contain a secret or a signature. `Display`
/// is for logs (it may name a header, a `secret://` reference or an
/// environment variable); an HTTP body carries [`TriggerError::public_message`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TriggerError {
    /// 401: missing, malformed or wrong signature or token.
    #[error("unauthorized: {0}")]
    Unauthorized(#[from] VerifyError),
    /// 404: no binding with that id (for callers that look bindings up).
    #[error("unknown trigger `{0}`")]
    UnknownTrigger(String),
    /// 413: the body is over the trigger body limit.
    #[error("the body is {size} bytes, over the {limit}-byte limit")]
    TooLarge { size: u64, limit: u64 },
    /// 400: the body is not JSON.
    #[error("the body is not valid JSON: {0}")]
    BadJson(String),
    /// 400: the `Idempotency-Key` (or `X-GitHub-Delivery`) is over the
    /// limit or not visible ASCII.
    #[error("the idempotency key {0}")]
    BadIdempotencyKey(String),
    /// 422: the filter or the mapping failed, ran away, or gave the wrong type.
    #[error("{stage} failed: {reason}")]
    MappingFailed { stage: Stage, reason: String },
    /// 500: the binding's secret could not be resolved (not the caller's
    /// fault); 503 when the secret store is unavailable.
    #[error("cannot verify: {0}")]
    Secret(#[from] SecretError),
    /// 503: every jq evaluation slot of this process is taken; retry.
    #[error("too many trigger evaluations are running; retry in {RETRY_AFTER_SECONDS} s")]
    Busy,
    /// 500: the binding cannot be evaluated (its program does not compile).
    #[error("invalid binding: {0}")]
    InvalidBinding(String),
}

/// Which program failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Filter,
    Payload,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stage::Filter => "filter",
            Stage::Payload => "payload mapping",
        })
    }
}

impl TriggerError {
    /// The HTTP status: 401, 404, 413, 400, 422, 500 for our own failures,
    /// 503 when the secret store is unavailable or every evaluation slot is
    /// taken (retry).
    pub fn status(&self) -> u16 {
        match self {
            TriggerError::Unauthorized(_) => 401,
            TriggerError::UnknownTrigger(_) => 404,
            TriggerError::TooLarge { .. } => 413,
            TriggerError::BadJson(_) | TriggerError::BadIdempotencyKey(_) => 400,
            TriggerError::MappingFailed { .. } => 422,
            TriggerError::Secret(error) if error.is_unavailable() => 503,
            TriggerError::Busy => 503,
            TriggerError::Secret(_) | TriggerError::InvalidBinding(_) => 500,
        }
    }

    /// The message for an HTTP body: never a header name, a `secret://`
    /// reference or an environment variable (the log line has those).
    /// Body-shaped errors (size, JSON, the binding's own jq errors) are told
    /// as they are: they describe what the caller sent.
    pub fn public_message(&self) -> String {
        match self {
            TriggerError::Unauthorized(_) => {
                "unauthorized: missing, malformed, stale or wrong signature or token".to_owned()
            }
            TriggerError::Secret(error) if error.is_unavailable() => {
                "the secret store is unavailable; retry later".to_owned()
            }
            TriggerError::Secret(_) => {
                "the trigger's secret is not available (a configuration error)".to_owned()
            }
            TriggerError::InvalidBinding(_) => {
                "the trigger binding cannot be evaluated (a configuration error)".to_owned()
            }
            other => other.to_string(),
        }
    }

    pub(crate) fn sandbox(stage: Stage, error: SandboxError) -> Self {
        TriggerError::MappingFailed {
            stage,
            reason: error.to_string(),
        }
    }
}

/// Why a request was refused; never names the secret or expected value.
/// The message names the header, so it goes to logs; HTTP bodies say
/// only "unauthorized" ([`TriggerError::public_message`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing {0} header")]
    Missing(String),
    #[error("malformed {header} header: {expected}")]
    Malformed { header: String, expected: String },
    #[error("{0} does not match")]
    Mismatch(String),
    #[error(
        "the {header} timestamp is {skew} seconds from now, over the {tolerance}-second tolerance"
    )]
    Stale {
        header: String,
        skew: u64,
        tolerance: u64,
    },
}
