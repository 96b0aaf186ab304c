//! [`Answer`]: the one HTTP-shaped answer of the runtime side: the trigger
//! service, the callback route and the App's webhook ingress all answer with
//! it, and each HTTP front end turns it into a response the same way.

use std::fmt;

use serde_json::{Value, json};

/// Seconds a 503 asks the caller to wait before retrying (`Retry-After`):
/// every 503 (busy, or a store or Secrets Manager that may come back).
pub const RETRY_AFTER_SECONDS: u64 = 1;

/// An HTTP-shaped answer: a status and a JSON object (`{}` for 204).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Answer {
    pub fn new(status: u16, body: Value) -> Self {
        Self { status, body }
    }

    /// `{"error": message}` with `status`.
    pub fn error(status: u16, message: impl fmt::Display) -> Self {
        Self::new(status, json!({ "error": message.to_string() }))
    }

    /// The `Retry-After` header's value, seconds: every 503 asks the caller
    /// to retry.
    pub fn retry_after(&self) -> Option<u64> {
        (self.status == 503).then_some(RETRY_AFTER_SECONDS)
    }

    /// The one mapping of an answer to HTTP, for every front end (the
    /// handlers of the one router, `astrolift_bot::routes`, that `serve` and
    /// the functions run): the status (an unknown one is a 500), a JSON body
    /// with its content type, no body for 204, and [`Self::retry_after`] as
    /// `Retry-After`.
    pub fn into_response<B: From<String> + Default>(self) -> http::Response<B> {
        let status = http::StatusCode::from_u16(self.status)
            .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
        if status == http::StatusCode::NO_CONTENT {
            let mut response = http::Response::new(B::default());
            *response.status_mut() = status;
            return response;
        }
        let retry_after = self.retry_after();
        let mut response = http::Response::new(B::from(self.body.to_string()));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        if let Some(seconds) = retry_after {
            headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        response
    }
}
