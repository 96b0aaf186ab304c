//! Request recording and fault injection, in front of every route.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use crate::auth::epoch;
use crate::{Shared, github_error};

/// Request bodies above this are refused (GitHub's API limit is lower).
const MAX_BODY: usize = 32 * 1024 * 1024;

/// What an injected fault does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// Answer this status with GitHub's error body (500, 502, ...).
    Status(u16),
    /// 403 with `retry-after` and the secondary-rate-limit message.
    SecondaryRateLimit { retry_after_secs: u64 },
    /// 429 Too Many Requests with `retry-after`.
    TooManyRequests { retry_after_secs: u64 },
    /// 403 with `x-ratelimit-remaining: 0` and a reset this far ahead.
    PrimaryRateLimit { reset_in_secs: u64 },
    /// Wait this long, then answer normally.
    Delay(Duration),
}

/// A fault applied to the next `times` requests that match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    pub times: usize,
    /// Only requests with this method (any when `None`).
    pub method: Option<String>,
    /// Only paths starting with this (any when `None`).
    pub path_prefix: Option<String>,
}

impl Fault {
    pub fn new(kind: FaultKind, times: usize) -> Self {
        Self {
            kind,
            times,
            method: None,
            path_prefix: None,
        }
    }

    /// `times` × 500 Internal Server Error.
    pub fn server_error(times: usize) -> Self {
        Self::new(FaultKind::Status(500), times)
    }

    /// `times` × 502 Bad Gateway.
    pub fn bad_gateway(times: usize) -> Self {
        Self::new(FaultKind::Status(502), times)
    }

    /// One secondary rate limit (403, `retry-after: 1`).
    pub fn secondary_rate_limit() -> Self {
        Self::new(
            FaultKind::SecondaryRateLimit {
                retry_after_secs: 1,
            },
            1,
        )
    }

    /// One 429 Too Many Requests asking to wait `retry_after_secs` (`retry-after`).
    pub fn too_many_requests(retry_after_secs: u64) -> Self {
        Self::new(FaultKind::TooManyRequests { retry_after_secs }, 1)
    }

    /// One primary rate limit resetting `reset_in_secs` from now.
    pub fn primary_rate_limit(reset_in_secs: u64) -> Self {
        Self::new(FaultKind::PrimaryRateLimit { reset_in_secs }, 1)
    }

    /// `times` slow answers.
    pub fn delay(by: Duration, times: usize) -> Self {
        Self::new(FaultKind::Delay(by), times)
    }

    /// Only for `method` requests to paths starting with `path_prefix`.
    pub fn on(mut self, method: &str, path_prefix: &str) -> Self {
        self.method = Some(method.to_owned());
        self.path_prefix = Some(path_prefix.to_owned());
        self
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        self.times > 0
            && self.method.as_deref().is_none_or(|m| m == method)
            && self
                .path_prefix
                .as_deref()
                .is_none_or(|p| path.starts_with(p))
    }
}

/// One request as the fake received it. The `authorization` header's value
/// is replaced by its scheme and `[redacted]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the fake received it: how far apart two requests were (a retry's wait).
    pub received_at: std::time::Instant,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

pub(crate) async fn record_and_inject(
    AxumState(state): AxumState<Shared>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return github_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Payload too large",
            "https://docs.github.com/rest",
        );
    };
    let method = parts.method.to_string();
    let path = parts.uri.path().to_owned();
    let fault = {
        let mut state = state.lock();
        state.requests.push(RecordedRequest {
            method: method.clone(),
            path: path.clone(),
            query: parts.uri.query().map(str::to_owned),
            headers: redacted(&parts.headers),
            body: bytes.to_vec(),
            received_at: std::time::Instant::now(),
        });
        if state
            .down_until
            .is_some_and(|until| std::time::Instant::now() < until)
        {
            Some(FaultKind::Status(503))
        } else {
            take_fault(&mut state.faults, &method, &path)
        }
    };
    if let Some(kind) = fault
        && let Some(response) = fault_response(&kind, &state).await
    {
        return response;
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn take_fault(faults: &mut [Fault], method: &str, path: &str) -> Option<FaultKind> {
    let fault = faults.iter_mut().find(|f| f.matches(method, path))?;
    fault.times -= 1;
    Some(fault.kind.clone())
}

/// The fault's answer, or `None` to go on (after a delay).
async fn fault_response(kind: &FaultKind, state: &Shared) -> Option<Response> {
    match kind {
        FaultKind::Status(code) => {
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let message = status.canonical_reason().unwrap_or("Server Error");
            Some(github_error(
                status,
                message,
                "https://docs.github.com/rest",
            ))
        }
        FaultKind::SecondaryRateLimit { retry_after_secs } => Some(asking_to_wait(
            StatusCode::FORBIDDEN,
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
            "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
            *retry_after_secs,
        )),
        FaultKind::TooManyRequests { retry_after_secs } => Some(asking_to_wait(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests",
            "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
            *retry_after_secs,
        )),
        FaultKind::PrimaryRateLimit { reset_in_secs } => {
            let reset = epoch(state.lock().now()) + reset_in_secs;
            let mut response = github_error(
                StatusCode::FORBIDDEN,
                "API rate limit exceeded for installation ID 1.",
                "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
            );
            let headers = response.headers_mut();
            insert(headers, "x-ratelimit-limit", "5000".to_owned());
            insert(headers, "x-ratelimit-remaining", "0".to_owned());
            insert(headers, "x-ratelimit-used", "5000".to_owned());
            insert(headers, "x-ratelimit-reset", reset.to_string());
            Some(response)
        }
        FaultKind::Delay(by) => {
            tokio::time::sleep(*by).await;
            None
        }
    }
}

/// GitHub's error answer with `retry-after: retry_after_secs`.
fn asking_to_wait(
    status: StatusCode,
    message: &str,
    documentation_url: &str,
    retry_after_secs: u64,
) -> Response {
    let mut response = github_error(status, message, documentation_url);
    insert(
        response.headers_mut(),
        "retry-after",
        retry_after_secs.to_string(),
    );
    response
}

fn insert(headers: &mut HeaderMap, name: &'static str, value: String) {
    if let Ok(value) = HeaderValue::from_str(&value) {
        headers.insert(name, value);
    }
}

fn redacted(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let value = if name == "authorization" {
                let scheme = value
                    .to_str()
                    .ok()
                    .and_then(|v| v.split(' ').next())
                    .unwrap_or("");
                format!("{scheme} [redacted]")
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            (name.as_str().to_owned(), value)
        })
        .collect()
}
