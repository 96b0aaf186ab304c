//! [`TriggerResponse`]: the HTTP-shaped answer of the trigger service and of
//! the callback route.

use serde_json::Value;

use crate::error::RETRY_AFTER_SECONDS;

/// An HTTP-shaped answer: a status and a JSON object (`{}` for 204).
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerResponse {
    pub status: u16,
    pub body: Value,
}

impl TriggerResponse {
    /// The `Retry-After` header's value, seconds: every 503 (busy, or a
    /// store or Secrets Manager that may come back) asks the caller to retry.
    pub fn retry_after(&self) -> Option<u64> {
        (self.status == 503).then_some(RETRY_AFTER_SECONDS)
    }
}
