//! The GitHub REST client: `octocrab` with forge's layers, auth and typed errors.
//!
//! octocrab carries every request: its request building, base URI (kept
//! under GitHub Enterprise's `/api/v3`), bearer auth, JSON decoding and
//! error mapping, on its hyper-1 client with rustls. Forge adds what octocrab
//! does not do, each as a thin part around it, in a module of its own that
//! says why octocrab's part is not used: the retry layer ([`super::layers`]),
//! the installation-token cache ([`super::app`]: an injected clock, the
//! 5-minute margin and one refresh in flight, where octocrab's cache reads the
//! wall clock, refreshes 30 s before expiry and lets concurrent callers race),
//! the tarball redirect followed by hand with a size bound ([`super::tarball`]),
//! and lean request and answer types where octocrab's models require fields we
//! never read or lose GitHub Enterprise's base path ([`super::checks`],
//! [`super::pulls`]).

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use http::{HeaderValue, Method, StatusCode, Uri, header};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use octocrab::service::middleware::base_uri::BaseUriLayer;
use octocrab::service::middleware::extra_headers::ExtraHeadersLayer;
use octocrab::{AuthState, FromResponse, OctoBody, Octocrab, OctocrabBuilder};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use url::Url;

use super::app::{AppCredentials, Clock, CredentialsError, InstallationToken, SystemClock};
use super::app::{RepositoryInstallations, TokenCache, epoch_seconds};
use super::layers::{AttemptTimedOut, BoxError, RateLimitExceeded, RetryLayer};
use super::retry::RetryPolicy;

/// The public GitHub API.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// The REST API version we speak.
pub const API_VERSION: &str = "2022-11-28";
/// The largest repository tarball downloaded (compressed bytes).
pub const DEFAULT_MAX_TARBALL_BYTES: u64 = 1024 * 1024 * 1024;

/// Where and how to talk to GitHub.
#[derive(Clone)]
pub struct GitHubConfig {
    /// `GITHUB_API_URL`; GitHub Enterprise is `https://HOST/api/v3`.
    pub api_url: Url,
    pub user_agent: String,
    pub retry: RetryPolicy,
    /// Bound on one attempt of an API request (on a tarball, on the answer's
    /// head only: its body streams).
    pub request_timeout: Duration,
    /// A tarball download is refused or cut past this many bytes.
    pub max_tarball_bytes: u64,
    pub clock: Arc<dyn Clock>,
}

impl fmt::Debug for GitHubConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitHubConfig")
            .field("api_url", &self.api_url.as_str())
            .field("user_agent", &self.user_agent)
            .field("retry", &self.retry)
            .field("request_timeout", &self.request_timeout)
            .field("max_tarball_bytes", &self.max_tarball_bytes)
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
            max_tarball_bytes: DEFAULT_MAX_TARBALL_BYTES,
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
        source: BoxError,
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
    Client(#[source] BoxError),
    #[error("the tarball reader task failed: {0}")]
    ReaderTask(String),
    #[error("the tarball of {path} is larger than {limit} bytes")]
    TarballTooLarge { path: String, limit: u64 },
}

impl GitHubError {
    /// GitHub refused the call as not permitted (a 403 that is not a rate limit): for an
    /// installation, a permission it has not granted (`Resource not accessible by
    /// integration`, e.g. a commit without `contents: write`), or a read-only (archived)
    /// repository.
    pub fn is_forbidden(&self) -> bool {
        matches!(self, GitHubError::Status { status, .. } if *status == StatusCode::FORBIDDEN)
    }

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

/// The methods forge sends through octocrab's typed JSON calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonMethod {
    Get,
    Post,
    Patch,
}

impl JsonMethod {
    pub(crate) fn method(self) -> Method {
        match self {
            JsonMethod::Get => Method::GET,
            JsonMethod::Post => Method::POST,
            JsonMethod::Patch => Method::PATCH,
        }
    }
}

/// The GitHub App: credentials, octocrab clients and token cache. Cheap to clone.
#[derive(Debug, Clone)]
pub struct GitHubApp {
    inner: Arc<Inner>,
}

struct Inner {
    /// The parts of the octocrab clients, checked when the App is built.
    transport: Transport,
    /// API calls: octocrab with the base URI, the API headers and the retry
    /// layer. Built on first use: octocrab spawns its request buffer's
    /// worker, which needs the Tokio runtime that every call runs in.
    api: OnceLock<Octocrab>,
    /// Download URLs (absolute, possibly on another host): the same stack
    /// without the base URI and never with octocrab's own auth.
    downloads: OnceLock<Octocrab>,
    config: GitHubConfig,
    /// `None` for a client that only acts with a token handed in
    /// ([`Installation::with_token`]).
    credentials: Option<AppCredentials>,
    tokens: TokenCache,
    repository_installations: RepositoryInstallations,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitHubApp")
            .field("config", &self.config)
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

impl GitHubApp {
    pub fn new(config: GitHubConfig, credentials: AppCredentials) -> Result<Self, GitHubError> {
        Self::build(config, Some(credentials))
    }

    fn build(
        config: GitHubConfig,
        credentials: Option<AppCredentials>,
    ) -> Result<Self, GitHubError> {
        let inner = Inner {
            transport: Transport::new(&config)?,
            api: OnceLock::new(),
            downloads: OnceLock::new(),
            config,
            credentials,
            tokens: TokenCache::default(),
            repository_installations: RepositoryInstallations::default(),
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    fn api(&self) -> Result<&Octocrab, GitHubError> {
        let inner = &self.inner;
        if let Some(api) = inner.api.get() {
            return Ok(api);
        }
        let api = inner
            .transport
            .octocrab(Some(inner.transport.base_uri.clone()))?;
        Ok(inner.api.get_or_init(|| api))
    }

    fn downloads(&self) -> Result<&Octocrab, GitHubError> {
        let inner = &self.inner;
        if let Some(downloads) = inner.downloads.get() {
            return Ok(downloads);
        }
        let downloads = inner.transport.octocrab(None)?;
        Ok(inner.downloads.get_or_init(|| downloads))
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
            handed_in: None,
        }
    }

    /// The absolute API URL for these path segments (each percent-encoded),
    /// kept under the base path so GitHub Enterprise's `/api/v3` stays.
    pub(crate) fn api_url(&self, segments: &[&str]) -> Url {
        let mut url = self.inner.config.api_url.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// A cached installation token, refreshed 5 minutes before it expires;
    /// concurrent callers for one installation wait for one refresh.
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

    /// The installations found for repositories, and the configured clock's now.
    pub(super) fn repository_installations(&self) -> (&RepositoryInstallations, SystemTime) {
        (
            &self.inner.repository_installations,
            self.inner.config.clock.now(),
        )
    }

    /// The App JWT, signed now (by the configured clock).
    pub(crate) fn app_jwt(&self) -> Result<SecretString, GitHubError> {
        let credentials = self
            .inner
            .credentials
            .as_ref()
            .ok_or(CredentialsError::Missing("GITHUB_APP_ID"))?;
        Ok(credentials.jwt(self.inner.config.clock.now())?)
    }

    /// `POST /app/installations/{id}/access_tokens` with the App JWT.
    async fn fetch_installation_token(
        &self,
        installation_id: u64,
    ) -> Result<InstallationToken, GitHubError> {
        let id = installation_id.to_string();
        let segments = ["app", "installations", id.as_str(), "access_tokens"];
        let jwt = self.app_jwt()?;
        let answer: TokenAnswer = self
            .send_json(&jwt, JsonMethod::Post, &segments, None::<&()>)
            .await?;
        let path = self.api_url(&segments).path().to_owned();
        let expires_at = answer
            .expires_at
            .parse::<jiff::Timestamp>()
            .map_err(|_| protocol(&Method::POST, &path, "`expires_at` is not an RFC 3339 time"))?;
        Ok(InstallationToken {
            token: SecretString::from(answer.token),
            expires_at: std::time::SystemTime::from(expires_at),
        })
    }

    /// One JSON call through octocrab as `bearer`: `segments` form the
    /// route under the base URI, `body` is sent as JSON.
    pub(crate) async fn send_json<T, B>(
        &self,
        bearer: &SecretString,
        method: JsonMethod,
        segments: &[&str],
        body: Option<&B>,
    ) -> Result<T, GitHubError>
    where
        T: FromResponse + Send + 'static,
        B: Serialize + ?Sized + Sync,
    {
        self.send(bearer, method, &self.api_url(segments), body)
            .await
    }

    /// One call through octocrab as `bearer` to `url`, an API URL (its
    /// query kept; its origin is the API's, as [`GitHubApp::api_url`] and
    /// [`GitHubApp::same_api`] make sure). The answer is JSON, or a
    /// [`octocrab::Page`] of JSON with the `Link` header read.
    pub(crate) async fn send<T, B>(
        &self,
        bearer: &SecretString,
        method: JsonMethod,
        url: &Url,
        body: Option<&B>,
    ) -> Result<T, GitHubError>
    where
        T: FromResponse + Send + 'static,
        B: Serialize + ?Sized + Sync,
    {
        let path = url.path().to_owned();
        let route = relative_route(url);
        let crab = self.as_bearer(bearer, &method.method(), &path)?;
        let answer = match method {
            // No query parameters beyond the URL's: `body` is a request body, and GETs send none.
            JsonMethod::Get => crab.get(route, None::<&()>).await,
            JsonMethod::Post => crab.post(route, body).await,
            JsonMethod::Patch => crab.patch(route, body).await,
        };
        answer.map_err(|error| from_octocrab(&method.method(), &path, error))
    }

    /// `url` (a `Link` header's next page, say) when it is on the API's
    /// origin and under its base path: only then may it carry our token.
    pub(crate) fn same_api(&self, url: &Url) -> bool {
        let api = &self.inner.config.api_url;
        url.origin() == api.origin() && url.path().starts_with(api.path().trim_end_matches('/'))
    }

    /// A streamed `GET` of `url` (absolute), with `bearer` only when `url`
    /// is on the API's origin. Answers below 400 are returned as they are
    /// (3xx included: the caller follows redirects).
    pub(crate) async fn get_stream(
        &self,
        url: &Url,
        bearer: &SecretString,
    ) -> Result<http::Response<StreamBody>, GitHubError> {
        self.get_raw(url, bearer, http::HeaderMap::new(), true)
            .await
    }

    /// A `GET` of `url` (absolute) with `headers` added, answered as it is below 400 (a
    /// `304 Not Modified` included), with `bearer` only when `url` is on the API's origin.
    /// `streaming`: the body is a download, not bounded by the per-attempt deadline.
    pub(crate) async fn get_raw(
        &self,
        url: &Url,
        bearer: &SecretString,
        headers: http::HeaderMap,
        streaming: bool,
    ) -> Result<http::Response<StreamBody>, GitHubError> {
        let path = url.path().to_owned();
        let same_origin = url.origin() == self.inner.config.api_url.origin();
        let mut request =
            http::Request::get(url.as_str()).header("x-github-api-version", API_VERSION);
        if streaming {
            request = request.extension(super::layers::Streaming);
        }
        if let Some(request_headers) = request.headers_mut() {
            request_headers.extend(headers);
        }
        if same_origin {
            request = request.header(header::AUTHORIZATION, bearer_header(bearer, &path)?);
        }
        let request = request
            .body(OctoBody::empty())
            .map_err(|_| protocol(&Method::GET, &path, "not a valid request URL"))?;
        // The download client: no base URI to rewrite the absolute URL, and
        // AuthState::None, so the only credentials are the ones set above.
        let response = self
            .downloads()?
            .execute(request)
            .await
            .map_err(|error| from_octocrab(&Method::GET, &path, error))?;
        if response.status().as_u16() < 400 {
            return Ok(response);
        }
        match octocrab::map_github_error(response).await {
            Err(error) => Err(from_octocrab(&Method::GET, &path, error)),
            Ok(response) => Err(protocol(
                &Method::GET,
                &path,
                &format!("unexpected status {}", response.status()),
            )),
        }
    }

    /// octocrab authenticating as `bearer` (a JWT or an installation token).
    fn as_bearer(
        &self,
        bearer: &SecretString,
        method: &Method,
        path: &str,
    ) -> Result<Octocrab, GitHubError> {
        self.api()?
            .user_access_token(bearer.expose_secret().to_owned())
            .map_err(|_| protocol(method, path, "the token is not a valid header value"))
    }

    /// Drops the cached token of an installation (GitHub refused it).
    pub(crate) async fn forget_token(&self, installation_id: u64) {
        *self.inner.tokens.slot(installation_id).lock().await = None;
    }
}

/// A streamed answer's body, as octocrab hands it out.
pub(crate) type StreamBody = http_body_util::combinators::BoxBody<bytes::Bytes, octocrab::Error>;

/// What the octocrab clients are built from: octocrab on a hyper-1 client
/// (rustls on aws-lc-rs, native roots, HTTP/1) with forge's retry layer.
struct Transport {
    /// Built on the first request, not with the App: a webhook is answered before any
    /// GitHub call, so reading and parsing the system's root certificates stays off
    /// `serve`'s start and its first answer.
    connector: OnceLock<HttpsConnector<HttpConnector>>,
    base_uri: Uri,
    retry: RetryLayer,
    headers: Arc<Vec<(http::HeaderName, HeaderValue)>>,
}

impl Transport {
    /// The base URL and the user agent, checked now; the root certificates
    /// are read on the first request ([`Transport::connector`]).
    fn new(config: &GitHubConfig) -> Result<Self, GitHubError> {
        let base_uri: Uri = config
            .api_url
            .as_str()
            .parse()
            .map_err(|_| GitHubError::BadApiUrl(config.api_url.to_string()))?;
        let user_agent = HeaderValue::from_str(&config.user_agent)
            .map_err(|error| GitHubError::Client(Box::new(error)))?;
        let headers = vec![
            (
                header::ACCEPT,
                HeaderValue::from_static("application/vnd.github+json"),
            ),
            (header::USER_AGENT, user_agent),
        ];
        Ok(Self {
            connector: OnceLock::new(),
            base_uri,
            retry: RetryLayer {
                policy: config.retry,
                request_timeout: config.request_timeout,
                clock: config.clock.clone(),
            },
            headers: Arc::new(headers),
        })
    }

    /// The HTTPS connector over the system's root certificates, built once.
    fn connector(&self) -> Result<HttpsConnector<HttpConnector>, GitHubError> {
        if let Some(connector) = self.connector.get() {
            return Ok(connector.clone());
        }
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|error| GitHubError::Client(Box::new(error)))?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(self.connector.get_or_init(|| connector).clone())
    }

    /// An octocrab client under `base_uri` when given, without auth of its own.
    fn octocrab(&self, base_uri: Option<Uri>) -> Result<Octocrab, GitHubError> {
        let client: Client<_, OctoBody> =
            Client::builder(TokioExecutor::new()).build(self.connector()?);
        let stack = OctocrabBuilder::new_empty()
            .with_service(client)
            .with_layer(&self.retry)
            .with_layer(&ExtraHeadersLayer::new(self.headers.clone()));
        let built = match base_uri {
            Some(base_uri) => stack
                .with_layer(&BaseUriLayer::new(base_uri))
                .with_auth(AuthState::None)
                .build(),
            None => stack.with_auth(AuthState::None).build(),
        };
        match built {
            Ok(octocrab) => Ok(octocrab),
            Err(never) => match never {},
        }
    }
}

/// The path and query of an API URL, which octocrab puts under its base URI.
fn relative_route(url: &Url) -> String {
    let base = url.path();
    match url.query() {
        Some(query) => format!("{base}?{query}"),
        None => base.to_owned(),
    }
}

fn bearer_header(bearer: &SecretString, path: &str) -> Result<HeaderValue, GitHubError> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", bearer.expose_secret()))
        .map_err(|_| protocol(&Method::GET, path, "the token is not a valid header value"))?;
    value.set_sensitive(true);
    Ok(value)
}

/// Our error for what octocrab (or a layer under it) reported. URLs are
/// reduced to their path; a rate limit past the budget and a transport
/// failure are found in the error's source chain.
fn from_octocrab(method: &Method, path: &str, error: octocrab::Error) -> GitHubError {
    if let octocrab::Error::GitHub { source, .. } = &error {
        return GitHubError::Status {
            method: method.clone(),
            path: path.to_owned(),
            status: source.status_code,
            message: github_message(&source.message, source.errors.as_deref()),
        };
    }
    if let Some(limit) = find_source::<RateLimitExceeded>(&error) {
        return GitHubError::RateLimited {
            method: method.clone(),
            path: path.to_owned(),
            status: limit.status,
            message: limit.message.clone(),
            wait: limit.wait,
        };
    }
    match error {
        octocrab::Error::Json { source, .. } => {
            protocol(method, path, &format!("invalid JSON: {source}"))
        }
        octocrab::Error::Serde { source, .. } => {
            protocol(method, path, &format!("invalid JSON: {source}"))
        }
        other => GitHubError::Transport {
            method: method.clone(),
            path: path.to_owned(),
            source: transport_source(other),
        },
    }
}

/// The innermost useful cause: our timeout, or octocrab's error as is.
fn transport_source(error: octocrab::Error) -> BoxError {
    if let Some(timeout) = find_source::<AttemptTimedOut>(&error) {
        return Box::new(AttemptTimedOut(timeout.0));
    }
    Box::new(error)
}

fn find_source<'a, E: std::error::Error + 'static>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a E> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(found) = error.downcast_ref::<E>() {
            return Some(found);
        }
        current = error.source();
    }
    None
}

/// GitHub's `message`, plus the validation `errors` (which say which field
/// a 422 is about), at most 1,000 characters of them.
fn github_message(message: &str, errors: Option<&[serde_json::Value]>) -> String {
    let message = if message.is_empty() { "error" } else { message };
    match errors {
        Some(errors) if !errors.is_empty() => {
            let errors = serde_json::Value::Array(errors.to_vec()).to_string();
            format!("{message} {}", truncate_chars(&errors, 1000))
        }
        _ => message.to_owned(),
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    token: String,
    expires_at: String,
}

fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((index, _)) => &text[..index],
        None => text,
    }
}

pub(crate) fn protocol(method: &Method, path: &str, reason: &str) -> GitHubError {
    GitHubError::Protocol {
        method: method.clone(),
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}

/// The App acting as one installation: tarballs, check runs, pull requests.
///
/// Or a session with a token handed in ([`Installation::with_token`]): a
/// workflow's `GITHUB_TOKEN` is itself an installation token (of the GitHub
/// Actions app), so every call here works the same with it.
#[derive(Debug, Clone)]
pub struct Installation {
    pub(crate) app: GitHubApp,
    pub(crate) id: u64,
    /// The token handed in, used instead of the App's cached one.
    handed_in: Option<SecretString>,
}

impl Installation {
    /// A session acting with `token` (e.g. `GITHUB_TOKEN` in GitHub
    /// Actions), without App credentials. Its [`id`](Self::id) is 0.
    pub fn with_token(config: GitHubConfig, token: SecretString) -> Result<Self, GitHubError> {
        Ok(Self {
            app: GitHubApp::build(config, None)?,
            id: 0,
            handed_in: Some(token),
        })
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// The installation token (cached), or the token handed in.
    pub async fn token(&self) -> Result<SecretString, GitHubError> {
        match &self.handed_in {
            Some(token) => Ok(token.clone()),
            None => self.app.installation_token(self.id).await,
        }
    }

    /// One JSON call as this installation. A 401 means the token was revoked
    /// (or the installation suspended): it is dropped, so the next call
    /// fetches a new one.
    pub(crate) async fn send_json<T, B>(
        &self,
        method: JsonMethod,
        segments: &[&str],
        body: Option<&B>,
    ) -> Result<T, GitHubError>
    where
        T: FromResponse + Send + 'static,
        B: Serialize + ?Sized + Sync,
    {
        self.send(method, &self.app.api_url(segments), body).await
    }

    /// [`Installation::send_json`] to an API URL (see [`GitHubApp::send`]).
    pub(crate) async fn send<T, B>(
        &self,
        method: JsonMethod,
        url: &Url,
        body: Option<&B>,
    ) -> Result<T, GitHubError>
    where
        T: FromResponse + Send + 'static,
        B: Serialize + ?Sized + Sync,
    {
        let token = self.token().await?;
        let answer = self.app.send(&token, method, url, body).await;
        if let Err(error) = &answer
            && error.status() == Some(StatusCode::UNAUTHORIZED)
            && self.handed_in.is_none()
        {
            self.app.forget_token(self.id).await;
        }
        answer
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
