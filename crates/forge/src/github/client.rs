//! The GitHub REST client: base URL, headers, auth, retries, typed errors.
//!
//! Built on `reqwest` rather than `octocrab`. We need, on every call, the raw
//! status and headers (our retry policy reads `retry-after` and the
//! `x-ratelimit-*` headers; octocrab's retry layer retries 5xx only and
//! ignores them), our own installation-token cache with an injected clock,
//! the tarball redirect followed by hand so the `Authorization` header never
//! goes to another host, and the body as a stream. Through octocrab that is
//! its raw `_get`/`_post` for every call plus its layers to switch off, so a
//! plain HTTP client with a few typed helpers is smaller and clearer.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use url::Url;

use super::app::{AppCredentials, Clock, CredentialsError, InstallationToken, SystemClock};
use super::app::{TokenCache, epoch_seconds};
use super::retry::{Decision, Outcome, RetryPolicy, random_jitter};

/// The public GitHub API.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// The REST API version we speak.
pub const API_VERSION: &str = "2022-11-28";
/// Error bodies are read up to this size; GitHub's are a few hundred bytes.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Where and how to talk to GitHub.
#[derive(Clone)]
pub struct GitHubConfig {
    /// `GITHUB_API_URL`; GitHub Enterprise is `https://HOST/api/v3`.
    pub api_url: Url,
    pub user_agent: String,
    pub retry: RetryPolicy,
    /// Bound on one API request (not on streaming a tarball's body).
    pub request_timeout: Duration,
    pub clock: Arc<dyn Clock>,
}

impl fmt::Debug for GitHubConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitHubConfig")
            .field("api_url", &self.api_url.as_str())
            .field("user_agent", &self.user_agent)
            .field("retry", &self.retry)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

impl GitHubConfig {
    /// The defaults, for `api_url`.
    pub fn new(api_url: &str) -> Result<Self, GitHubError> {
        let api_url = Url::parse(api_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.has_host())
            .ok_or_else(|| GitHubError::BadApiUrl(api_url.to_owned()))?;
        Ok(Self {
            api_url,
            user_agent: format!("astrolift-forge-bot/{}", env!("CARGO_PKG_VERSION")),
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_secs(30),
            clock: Arc::new(SystemClock),
        })
    }

    /// `GITHUB_API_URL`, or the public API when unset.
    pub fn from_env() -> Result<Self, GitHubError> {
        let url = std::env::var("GITHUB_API_URL")
            .ok()
            .filter(|url| !url.trim().is_empty());
        Self::new(url.as_deref().unwrap_or(DEFAULT_API_URL))
    }
}

/// A failed GitHub call. Never carries a token, a JWT or a key: URLs are
/// reduced to their path (a download URL's query may hold a token).
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    /// A final answer: a 4xx other than a rate limit, or a 5xx after retries.
    #[error("GitHub answered {status} to {method} {path}: {message}")]
    Status {
        method: Method,
        path: String,
        status: StatusCode,
        message: String,
    },
    /// A rate limit that asks for a wait longer than the retry budget.
    #[error("GitHub rate limit on {method} {path} ({message}): retry in {}s", wait.as_secs())]
    RateLimited {
        method: Method,
        path: String,
        status: StatusCode,
        message: String,
        wait: Duration,
    },
    #[error("cannot reach GitHub for {method} {path}: {source}")]
    Transport {
        method: Method,
        path: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("unexpected answer from GitHub to {method} {path}: {reason}")]
    Protocol {
        method: Method,
        path: String,
        reason: String,
    },
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    #[error("invalid repository `{0}`: expected `owner/name`")]
    BadRepository(String),
    #[error("invalid GITHUB_API_URL `{0}`: expected an http(s) URL")]
    BadApiUrl(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("the tarball reader task failed: {0}")]
    ReaderTask(String),
}

impl GitHubError {
    /// The HTTP status GitHub answered, if it answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            GitHubError::Status { status, .. } | GitHubError::RateLimited { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }
}

/// A repository as the REST paths name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepoPath {
    pub owner: String,
    pub name: String,
}

impl RepoPath {
    /// Parses `owner/name` (a webhook's `repository.full_name`).
    pub fn parse(full_name: &str) -> Result<Self, GitHubError> {
        let bad = || GitHubError::BadRepository(full_name.to_owned());
        let (owner, name) = full_name.split_once('/').ok_or_else(bad)?;
        if !is_path_segment(owner) || !is_path_segment(name) {
            return Err(bad());
        }
        Ok(Self {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }
}

impl fmt::Display for RepoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// GitHub owner and repository names: ASCII letters, digits, `-`, `_`, `.`.
fn is_path_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// How a request authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// The App JWT (token exchange).
    App,
    /// An installation token.
    Installation(u64),
    /// None (a download URL on another host).
    Anonymous,
}

/// One request, replayable across retries.
#[derive(Debug)]
pub(crate) struct ApiRequest {
    pub method: Method,
    pub url: Url,
    pub body: Option<serde_json::Value>,
    pub auth: Auth,
    /// Streaming downloads are not bounded by `request_timeout`.
    pub streaming: bool,
}

/// The GitHub App: credentials, HTTP client and token cache. Cheap to clone.
#[derive(Debug, Clone)]
pub struct GitHubApp {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    config: GitHubConfig,
    credentials: AppCredentials,
    tokens: TokenCache,
}

impl GitHubApp {
    pub fn new(config: GitHubConfig, credentials: AppCredentials) -> Result<Self, GitHubError> {
        let http = reqwest::Client::builder()
            .user_agent(config.user_agent.clone())
            .default_headers(default_headers())
            // Redirects are followed by hand (tarball.rs) to drop auth across hosts.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .build()
            .map_err(GitHubError::Client)?;
        let inner = Inner {
            http,
            config,
            credentials,
            tokens: TokenCache::default(),
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// `GITHUB_API_URL`, `GITHUB_APP_ID` and the private key from the environment.
    pub fn from_env() -> Result<Self, GitHubError> {
        Self::new(GitHubConfig::from_env()?, AppCredentials::from_env()?)
    }

    pub fn config(&self) -> &GitHubConfig {
        &self.inner.config
    }

    /// A handle acting as one installation of the App.
    pub fn installation(&self, installation_id: u64) -> Installation {
        Installation {
            app: self.clone(),
            id: installation_id,
        }
    }

    /// The API URL for these path segments (each percent-encoded), kept
    /// under the base path so GitHub Enterprise's `/api/v3` stays.
    pub(crate) fn api_url(&self, segments: &[&str]) -> Url {
        let mut url = self.inner.config.api_url.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// A cached installation token, refreshed 5 minutes before it expires.
    pub async fn installation_token(
        &self,
        installation_id: u64,
    ) -> Result<SecretString, GitHubError> {
        let slot = self.inner.tokens.slot(installation_id);
        let mut cached = slot.lock().await;
        let now = self.inner.config.clock.now();
        if let Some(token) = cached.as_ref().filter(|token| token.is_fresh(now)) {
            return Ok(token.token.clone());
        }
        let fresh = self.fetch_installation_token(installation_id).await?;
        tracing::debug!(
            installation_id,
            expires_at = epoch_seconds(fresh.expires_at),
            "new installation token"
        );
        let token = fresh.token.clone();
        *cached = Some(fresh);
        Ok(token)
    }

    async fn fetch_installation_token(
        &self,
        installation_id: u64,
    ) -> Result<InstallationToken, GitHubError> {
        let id = installation_id.to_string();
        let url = self.api_url(&["app", "installations", &id, "access_tokens"]);
        let request = ApiRequest {
            method: Method::POST,
            url,
            body: None,
            auth: Auth::App,
            streaming: false,
        };
        let path = request.url.path().to_owned();
        let answer: TokenAnswer = self.send_json(&request).await?;
        let expires_at = answer
            .expires_at
            .parse::<jiff::Timestamp>()
            .map_err(|_| protocol(&Method::POST, &path, "`expires_at` is not an RFC 3339 time"))?;
        let expires_at = std::time::SystemTime::from(expires_at);
        Ok(InstallationToken {
            token: SecretString::from(answer.token),
            expires_at,
        })
    }

    /// Sends `request` and decodes a JSON answer.
    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        request: &ApiRequest,
    ) -> Result<T, GitHubError> {
        let response = self.send(request).await?;
        let bytes = response.bytes().await.map_err(|e| transport(request, e))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            protocol(
                &request.method,
                request.url.path(),
                &format!("invalid JSON: {e}"),
            )
        })
    }

    /// Sends `request`, retrying as the policy says. Answers below 400 are
    /// returned (3xx included: the caller follows redirects).
    pub(crate) async fn send(
        &self,
        request: &ApiRequest,
    ) -> Result<reqwest::Response, GitHubError> {
        let policy = self.inner.config.retry;
        let mut waited = Duration::ZERO;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let failure = match self.send_once(request).await? {
                Ok(response) if response.status().as_u16() < 400 => return Ok(response),
                Ok(response) => Failure::Answer(read_failure(response).await),
                Err(error) => Failure::Transport(error),
            };
            let outcome = failure.outcome();
            let now = self.inner.config.clock.now();
            match policy.decide(attempt, waited, outcome, now, random_jitter()) {
                Decision::RetryAfter(wait) => {
                    tracing::info!(method = %request.method, path = request.url.path(), attempt, wait_ms = wait.as_millis() as u64, "retrying GitHub request");
                    tokio::time::sleep(wait).await;
                    waited += wait;
                }
                Decision::RateLimitedTooLong(wait) => {
                    return Err(failure.into_rate_limited(request, wait));
                }
                Decision::Stop => {
                    self.forget_rejected_token(request, &failure).await;
                    return Err(failure.into_error(request));
                }
            }
        }
    }

    /// A 401 to an installation token means it was revoked (or the
    /// installation suspended): drop it so the next call fetches a new one.
    async fn forget_rejected_token(&self, request: &ApiRequest, failure: &Failure) {
        let (Auth::Installation(id), Failure::Answer(answer)) = (request.auth, failure) else {
            return;
        };
        if answer.status == StatusCode::UNAUTHORIZED {
            *self.inner.tokens.slot(id).lock().await = None;
        }
    }

    /// One attempt: `Err` only for errors no retry can fix (credentials).
    async fn send_once(
        &self,
        request: &ApiRequest,
    ) -> Result<Result<reqwest::Response, reqwest::Error>, GitHubError> {
        let mut builder = self
            .inner
            .http
            .request(request.method.clone(), request.url.clone());
        if let Some(authorization) = self.authorization(request).await? {
            builder = builder.header(header::AUTHORIZATION, authorization);
        }
        if let Some(body) = &request.body {
            builder = builder
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        if !request.streaming {
            builder = builder.timeout(self.inner.config.request_timeout);
        }
        Ok(builder.send().await.map_err(reqwest::Error::without_url))
    }

    async fn authorization(
        &self,
        request: &ApiRequest,
    ) -> Result<Option<HeaderValue>, GitHubError> {
        let secret = match request.auth {
            Auth::Anonymous => return Ok(None),
            Auth::App => self.inner.credentials.jwt(self.inner.config.clock.now())?,
            // Boxed: fetching a token sends a request, which is this function's caller.
            Auth::Installation(id) => Box::pin(self.installation_token(id)).await?,
        };
        let mut value = HeaderValue::from_str(&format!("Bearer {}", secret.expose_secret()))
            .map_err(|_| {
                protocol(
                    &request.method,
                    request.url.path(),
                    "the token is not a valid header value",
                )
            })?;
        value.set_sensitive(true);
        Ok(Some(value))
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    token: String,
    expires_at: String,
}

/// GitHub's error body: `{"message": "...", "documentation_url": "..."}`.
#[derive(Debug, Default, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: String,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
}

/// A failed attempt, kept until the policy decides.
enum Failure {
    Answer(FailedAnswer),
    Transport(reqwest::Error),
}

struct FailedAnswer {
    status: StatusCode,
    headers: HeaderMap,
    message: String,
}

impl Failure {
    fn outcome(&self) -> Outcome<'_> {
        match self {
            Failure::Transport(_) => Outcome::Transport,
            Failure::Answer(answer) => Outcome::Status {
                status: answer.status,
                headers: &answer.headers,
                secondary: answer
                    .message
                    .to_ascii_lowercase()
                    .contains("secondary rate limit"),
            },
        }
    }

    fn into_error(self, request: &ApiRequest) -> GitHubError {
        match self {
            Failure::Transport(source) => transport(request, source),
            Failure::Answer(answer) => GitHubError::Status {
                method: request.method.clone(),
                path: request.url.path().to_owned(),
                status: answer.status,
                message: answer.message,
            },
        }
    }

    fn into_rate_limited(self, request: &ApiRequest, wait: Duration) -> GitHubError {
        match self {
            Failure::Transport(source) => transport(request, source),
            Failure::Answer(answer) => GitHubError::RateLimited {
                method: request.method.clone(),
                path: request.url.path().to_owned(),
                status: answer.status,
                message: answer.message,
                wait,
            },
        }
    }
}

/// Reads a failed answer's status, headers and GitHub's `message` (plus the
/// validation `errors`, which say which field a 422 is about).
async fn read_failure(mut response: reqwest::Response) -> FailedAnswer {
    let status = response.status();
    let headers = response.headers().clone();
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_ERROR_BODY {
            break;
        }
    }
    let parsed: ErrorBody = serde_json::from_slice(&body).unwrap_or_default();
    let mut message = parsed.message;
    if message.is_empty() {
        message = status.canonical_reason().unwrap_or("error").to_owned();
    }
    if !parsed.errors.is_empty() {
        let errors = serde_json::Value::Array(parsed.errors).to_string();
        message = format!("{message} {}", truncate_chars(&errors, 1000));
    }
    FailedAnswer {
        status,
        headers,
        message,
    }
}

fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((index, _)) => &text[..index],
        None => text,
    }
}

fn default_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::ACCEPT,
        HeaderValue::from_static("application/vnd.github+json"),
    );
    headers.insert(
        "x-github-api-version",
        HeaderValue::from_static(API_VERSION),
    );
    headers
}

pub(crate) fn transport(request: &ApiRequest, source: reqwest::Error) -> GitHubError {
    GitHubError::Transport {
        method: request.method.clone(),
        path: request.url.path().to_owned(),
        source: source.without_url(),
    }
}

pub(crate) fn protocol(method: &Method, path: &str, reason: &str) -> GitHubError {
    GitHubError::Protocol {
        method: method.clone(),
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}

/// The App acting as one installation: tarballs and check runs.
#[derive(Debug, Clone)]
pub struct Installation {
    pub(crate) app: GitHubApp,
    pub(crate) id: u64,
}

impl Installation {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The installation token (cached).
    pub async fn token(&self) -> Result<SecretString, GitHubError> {
        self.app.installation_token(self.id).await
    }

    /// A request as this installation, with a JSON body.
    pub(crate) fn request(
        &self,
        method: Method,
        url: Url,
        body: Option<serde_json::Value>,
    ) -> ApiRequest {
        ApiRequest {
            method,
            url,
            body,
            auth: Auth::Installation(self.id),
            streaming: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_KEY: &str =
        include_str!("../../../../tests/fake-github/keys/test-app-private-key.pem");

    fn app(api_url: &str) -> GitHubApp {
        let config = GitHubConfig::new(api_url).unwrap_or_else(|e| panic!("{e}"));
        let credentials = AppCredentials::new(1, SecretString::from(TEST_KEY.to_owned()))
            .unwrap_or_else(|e| panic!("{e}"));
        GitHubApp::new(config, credentials).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn paths_stay_under_an_enterprise_base_path_and_are_encoded() {
        let app = app("https://ghe.example.com/api/v3/");
        let url = app.api_url(&["repos", "o", "r", "tarball", "feature#1 x"]);
        assert_eq!(
            url.as_str(),
            "https://ghe.example.com/api/v3/repos/o/r/tarball/feature%231%20x"
        );
        let public = GitHubApp::api_url(
            &self::app(DEFAULT_API_URL),
            &["app", "installations", "7", "access_tokens"],
        );
        assert_eq!(
            public.as_str(),
            "https://api.github.com/app/installations/7/access_tokens"
        );
    }

    #[test]
    fn only_http_base_urls_are_accepted() {
        for bad in ["ftp://x", "not a url", "file:///tmp"] {
            assert!(
                matches!(GitHubConfig::new(bad), Err(GitHubError::BadApiUrl(_))),
                "{bad}"
            );
        }
    }
}
