//! The tower layer forge puts under `octocrab`: retries, per-attempt
//! deadlines and bounded error bodies.
//!
//! octocrab's own retry layer (`RetryConfig::HandleRateLimits`) waits for
//! `retry-after` and `x-ratelimit-reset`, but retries 5xx immediately (no
//! backoff), has no budget for the total wait (a Lambda would sleep through
//! an hourly reset), cannot see GitHub's "secondary rate limit" message (it
//! never reads the body) and uses the wall clock. So its `retry` feature is
//! off and this layer applies [`RetryPolicy`] instead, between octocrab's
//! request building (auth, base URI, headers) and the hyper connection pool:
//!
//! - each attempt has a deadline (`request_timeout`) covering the answer's
//!   head and, unless the request is [`Streaming`], its whole body;
//! - a failed answer's body is read (at most 64 KiB) so the policy sees
//!   GitHub's message, then handed on to octocrab, which maps it to its
//!   `GitHubError`;
//! - a rate limit that asks for more than the budget ends in
//!   [`RateLimitExceeded`], an error octocrab passes through as a service
//!   error and forge turns into `GitHubError::RateLimited`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use octocrab::OctoBody;
use serde::Deserialize;
use tower::{Layer, Service, ServiceExt};

use super::app::Clock;
use super::retry::{Decision, Outcome, RetryPolicy, random_jitter};

/// The error type of the stack under octocrab.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Error bodies are read up to this size; GitHub's are a few hundred bytes.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;
/// Successful JSON answers are read up to this size (a check run echoes its
/// output: at most two 64 KiB texts and 50 annotations).
pub(crate) const MAX_JSON_BODY: usize = 16 * 1024 * 1024;

/// A request extension: the answer's body is a download, handed on as a
/// stream and not bounded by the per-attempt deadline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Streaming;

/// A rate limit asked for a wait longer than the retry budget.
#[derive(Debug)]
pub struct RateLimitExceeded {
    pub status: StatusCode,
    pub message: String,
    pub wait: Duration,
}

impl fmt::Display for RateLimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limited ({}), retry in {}s",
            self.message,
            self.wait.as_secs()
        )
    }
}

impl std::error::Error for RateLimitExceeded {}

/// No answer (or no whole body) within the per-attempt deadline.
#[derive(Debug)]
pub struct AttemptTimedOut(pub Duration);

impl fmt::Display for AttemptTimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no answer within {} ms", self.0.as_millis())
    }
}

impl std::error::Error for AttemptTimedOut {}

/// Adds [`Retrying`] around a service.
#[derive(Clone)]
pub(crate) struct RetryLayer {
    pub policy: RetryPolicy,
    pub request_timeout: Duration,
    pub clock: Arc<dyn Clock>,
}

impl<S> Layer<S> for RetryLayer {
    type Service = Retrying<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Retrying {
            inner,
            settings: self.clone(),
        }
    }
}

/// The retry service; see the module docs.
#[derive(Clone)]
pub(crate) struct Retrying<S> {
    inner: S,
    settings: RetryLayer,
}

type Answer = Response<BoxBody<Bytes, BoxError>>;

impl<S, B> Service<Request<OctoBody>> for Retrying<S>
where
    S: Service<Request<OctoBody>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + Sync + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Answer;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness is awaited per attempt on a clone of the inner service.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<OctoBody>) -> Self::Future {
        let inner = self.inner.clone();
        let settings = self.settings.clone();
        Box::pin(send_with_retries(inner, settings, request))
    }
}

/// One request, attempted as the policy says.
async fn send_with_retries<S, B>(
    inner: S,
    settings: RetryLayer,
    request: Request<OctoBody>,
) -> Result<Answer, BoxError>
where
    S: Service<Request<OctoBody>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + Sync + 'static,
    B::Error: Into<BoxError>,
{
    let (parts, body) = request.into_parts();
    let streaming = parts.extensions.get::<Streaming>().is_some();
    // octocrab's JSON and empty bodies are buffered, so they replay; any
    // other body is sent once.
    let mut template = Some(body);
    let mut waited = Duration::ZERO;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let Some(body) = next_body(&mut template) else {
            return Err("the request body cannot be replayed".into());
        };
        let request = Request::from_parts(parts.clone(), body);
        let attempt_result = attempt_once(inner.clone(), request, &settings, streaming).await;
        let failure = match attempt_result {
            Ok(Attempt::Done(answer)) => return Ok(answer),
            Ok(Attempt::Failed(answer)) => Failure::Answer(answer),
            Err(error) => Failure::Transport(error),
        };
        let now = settings.clock.now();
        let decision = if template.is_none() {
            Decision::Stop
        } else {
            settings
                .policy
                .decide(attempt, waited, failure.outcome(), now, random_jitter())
        };
        match decision {
            Decision::RetryAfter(wait) => {
                tracing::info!(method = %parts.method, path = parts.uri.path(), attempt, wait_ms = wait.as_millis() as u64, "retrying GitHub request");
                tokio::time::sleep(wait).await;
                waited += wait;
            }
            Decision::RateLimitedTooLong(wait) => return Err(failure.into_rate_limited(wait)),
            Decision::Stop => return failure.into_result(),
        }
    }
}

/// The body for the next attempt: a copy while the template replays, else
/// the template itself (once).
fn next_body(template: &mut Option<OctoBody>) -> Option<OctoBody> {
    let copy = template.as_ref().and_then(|body| {
        body.try_clone()
            .or_else(|| body.is_end_stream().then(OctoBody::empty))
    });
    match copy {
        Some(copy) => Some(copy),
        None => template.take(),
    }
}

enum Attempt {
    /// An answer below 400 (3xx included: the caller follows redirects).
    Done(Answer),
    Failed(FailedAnswer),
}

/// One attempt within its deadline.
async fn attempt_once<S, B>(
    inner: S,
    request: Request<OctoBody>,
    settings: &RetryLayer,
    streaming: bool,
) -> Result<Attempt, BoxError>
where
    S: Service<Request<OctoBody>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + Sync + 'static,
    B::Error: Into<BoxError>,
{
    let deadline = settings.request_timeout;
    let attempt = async move {
        let response = inner.oneshot(request).await.map_err(Into::into)?;
        let (parts, body) = response.into_parts();
        if parts.status.as_u16() >= 400 {
            let body = read_bounded(body, MAX_ERROR_BODY).await?;
            return Ok::<_, BoxError>(Attempt::Failed(FailedAnswer::new(parts, body)));
        }
        let body = if streaming {
            return Ok(Attempt::Done(Response::from_parts(
                parts,
                body.map_err(Into::into).boxed(),
            )));
        } else {
            read_bounded(body, MAX_JSON_BODY).await?
        };
        Ok::<_, BoxError>(Attempt::Done(Response::from_parts(parts, full(body))))
    };
    tokio::time::timeout(deadline, attempt)
        .await
        .unwrap_or_else(|_| Err(Box::new(AttemptTimedOut(deadline)) as BoxError))
}

/// The body's bytes, or an error past `limit` (a failed answer is cut
/// there instead: its start is all the policy and the message need).
async fn read_bounded<B>(body: B, limit: usize) -> Result<Bytes, BoxError>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() && limit == MAX_ERROR_BODY => {
            Ok(Bytes::from_static(b""))
        }
        Err(error) => Err(error),
    }
}

fn full(bytes: Bytes) -> BoxBody<Bytes, BoxError> {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}

/// GitHub's error body: `{"message": "...", "errors": [...]}`.
#[derive(Debug, Default, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: String,
}

/// A failed answer, read, kept until the policy decides.
struct FailedAnswer {
    parts: http::response::Parts,
    body: Bytes,
    message: String,
}

impl FailedAnswer {
    fn new(parts: http::response::Parts, body: Bytes) -> Self {
        let parsed: ErrorBody = serde_json::from_slice(&body).unwrap_or_default();
        let message = if parsed.message.is_empty() {
            parts
                .status
                .canonical_reason()
                .unwrap_or("error")
                .to_owned()
        } else {
            parsed.message
        };
        Self {
            parts,
            body,
            message,
        }
    }

    fn headers(&self) -> &HeaderMap {
        &self.parts.headers
    }
}

enum Failure {
    Answer(FailedAnswer),
    Transport(BoxError),
}

impl Failure {
    fn outcome(&self) -> Outcome<'_> {
        match self {
            Failure::Transport(_) => Outcome::Transport,
            Failure::Answer(answer) => Outcome::Status {
                status: answer.parts.status,
                headers: answer.headers(),
                secondary: answer
                    .message
                    .to_ascii_lowercase()
                    .contains("secondary rate limit"),
            },
        }
    }

    /// The final answer, handed to octocrab as GitHub sent it.
    fn into_result(self) -> Result<Answer, BoxError> {
        match self {
            Failure::Transport(error) => Err(error),
            Failure::Answer(answer) => Ok(Response::from_parts(answer.parts, full(answer.body))),
        }
    }

    fn into_rate_limited(self, wait: Duration) -> BoxError {
        match self {
            Failure::Transport(error) => error,
            Failure::Answer(answer) => Box::new(RateLimitExceeded {
                status: answer.parts.status,
                message: answer.message,
                wait,
            }),
        }
    }
}
