//! Streaming download of a commit's tarball, bounded in size.
//!
//! `GET /repos/{owner}/{repo}/tarball/{ref}` answers 302 to a download URL
//! (codeload.github.com, or `/_codeload` on GitHub Enterprise). The redirect
//! is followed here, not by a redirect layer: the `Authorization` header goes
//! only to the API's own origin, never to another host (the download URL
//! carries its own short-lived token); octocrab's auth rule (any URL without
//! a host, or `api.github.com`) is not that rule under GitHub Enterprise.
//! The body is never held in memory: it is handed out as an `AsyncRead`, or
//! bridged into a blocking reader ([`TarballDownload::read_blocking`]) for
//! `astrolift_package::SourceTarball::read`, which spools what it keeps. A
//! `Content-Length` past [`GitHubConfig::max_tarball_bytes`] is refused
//! before reading, and a body that grows past it fails as it crosses it.
//!
//! [`GitHubConfig::max_tarball_bytes`]: super::GitHubConfig::max_tarball_bytes

use std::io::{self, Read};

use futures_util::{StreamExt, TryStreamExt};
use http::{Method, header};
use http_body_util::BodyExt;
use tokio::io::AsyncRead;
use tokio_util::io::{StreamReader, SyncIoBridge};

use super::client::{GitHubError, Installation, RepoPath, StreamBody, protocol};

/// A tarball whose body has not been read yet.
#[derive(Debug)]
pub struct TarballDownload {
    response: http::Response<StreamBody>,
    limit: u64,
}

impl TarballDownload {
    /// `Content-Length`, when the server sent one.
    pub fn content_length(&self) -> Option<u64> {
        content_length(&self.response)
    }

    /// The body as an async byte stream. A network error mid-body, or a body
    /// past the size bound, surfaces as an `io::Error` (without the URL,
    /// which may hold a token).
    pub fn into_async_read(self) -> impl AsyncRead + Send + Unpin + 'static {
        let limit = self.limit;
        let mut seen: u64 = 0;
        let body = self
            .response
            .into_body()
            .into_data_stream()
            .map_err(|error| io::Error::other(error.to_string()))
            .map(move |chunk| {
                let chunk = chunk?;
                seen = seen.saturating_add(chunk.len() as u64);
                if seen > limit {
                    return Err(io::Error::other(format!(
                        "the tarball is larger than {limit} bytes"
                    )));
                }
                Ok(chunk)
            });
        StreamReader::new(Box::pin(body))
    }

    /// Runs `read` on a blocking thread with the body as a blocking `Read`
    /// (`SyncIoBridge` inside `spawn_blocking`: bytes flow through as the
    /// reader asks, nothing is buffered beyond one chunk). For example
    /// `download.read_blocking(move |r| SourceTarball::read(r, &limits))`.
    pub async fn read_blocking<T, F>(self, read: F) -> Result<T, GitHubError>
    where
        F: FnOnce(&mut dyn Read) -> T + Send + 'static,
        T: Send + 'static,
    {
        let mut reader = SyncIoBridge::new(self.into_async_read());
        tokio::task::spawn_blocking(move || read(&mut reader))
            .await
            .map_err(|error| GitHubError::ReaderTask(error.to_string()))
    }
}

impl Installation {
    /// Starts the download of `git_ref` (a commit sha, or a ref such as
    /// `refs/heads/main`) and returns once the body begins.
    pub async fn tarball(
        &self,
        repo: &RepoPath,
        git_ref: &str,
    ) -> Result<TarballDownload, GitHubError> {
        let mut segments = vec!["repos", repo.owner.as_str(), repo.name.as_str(), "tarball"];
        segments.extend(git_ref.split('/').filter(|s| !s.is_empty()));
        let api_url = self.app.api_url(&segments);
        let token = self.token().await?;
        let response = self.app.get_stream(&api_url, &token).await?;
        if !response.status().is_redirection() {
            return self.bounded(response, &api_url);
        }
        let download_url = redirect_target(&api_url, &response)?;
        let response = self.app.get_stream(&download_url, &token).await?;
        if !response.status().is_success() {
            let reason = format!("the download URL answered {}", response.status());
            return Err(protocol(&Method::GET, download_url.path(), &reason));
        }
        self.bounded(response, &download_url)
    }

    /// The download, refused now when its announced length is past the bound.
    fn bounded(
        &self,
        response: http::Response<StreamBody>,
        url: &url::Url,
    ) -> Result<TarballDownload, GitHubError> {
        let limit = self.app.config().max_tarball_bytes;
        if content_length(&response).is_some_and(|length| length > limit) {
            return Err(GitHubError::TarballTooLarge {
                path: url.path().to_owned(),
                limit,
            });
        }
        Ok(TarballDownload { response, limit })
    }
}

/// The redirect's `Location`, resolved against the request URL; only http(s).
fn redirect_target(
    api_url: &url::Url,
    redirect: &http::Response<StreamBody>,
) -> Result<url::Url, GitHubError> {
    let location = redirect
        .headers()
        .get(header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| {
            protocol(
                &Method::GET,
                api_url.path(),
                "a redirect without a Location",
            )
        })?;
    api_url
        .join(location)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .ok_or_else(|| {
            protocol(
                &Method::GET,
                api_url.path(),
                "the redirect Location is not an http(s) URL",
            )
        })
}

fn content_length(response: &http::Response<StreamBody>) -> Option<u64> {
    response
        .headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}
