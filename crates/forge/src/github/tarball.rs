//! Streaming download of a commit's tarball.
//!
//! `GET /repos/{owner}/{repo}/tarball/{ref}` answers 302 to a download URL
//! (codeload.github.com, or `/_codeload` on GitHub Enterprise). We follow it
//! by hand: the `Authorization` header goes only to the API's own origin,
//! never to another host (the download URL carries its own short-lived token).
//! The body is never held in memory: it is handed out as an `AsyncRead`, or
//! bridged into a blocking reader ([`TarballDownload::read_blocking`]) for
//! `astrolift_package::SourceTarball::read`, which spools what it keeps.

use std::io::{self, Read};

use futures_util::TryStreamExt;
use http::{Method, header};
use tokio::io::AsyncRead;
use tokio_util::io::{StreamReader, SyncIoBridge};
use url::Url;

use super::client::{ApiRequest, Auth, GitHubError, Installation, RepoPath, protocol};

/// A tarball whose body has not been read yet.
#[derive(Debug)]
pub struct TarballDownload {
    response: reqwest::Response,
}

impl TarballDownload {
    /// `Content-Length`, when the server sent one.
    pub fn content_length(&self) -> Option<u64> {
        self.response.content_length()
    }

    /// The body as an async byte stream. A network error mid-body surfaces
    /// as an `io::Error` (without the URL, which may hold a token).
    pub fn into_async_read(self) -> impl AsyncRead + Send + Unpin + 'static {
        let body = self
            .response
            .bytes_stream()
            .map_err(|error| io::Error::other(error.without_url()));
        StreamReader::new(body)
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
        let api = self.request(Method::GET, self.app.api_url(&segments), None);
        let api = ApiRequest {
            streaming: true,
            ..api
        };
        let response = self.app.send(&api).await?;
        if !response.status().is_redirection() {
            return Ok(TarballDownload { response });
        }
        let download = self.download_request(&api, &response)?;
        let response = self.app.send(&download).await?;
        if !response.status().is_success() {
            let reason = format!("the download URL answered {}", response.status());
            return Err(protocol(&download.method, download.url.path(), &reason));
        }
        Ok(TarballDownload { response })
    }

    /// The request for the redirect's `Location`, authenticated only when it
    /// stays on the API's origin.
    fn download_request(
        &self,
        api: &ApiRequest,
        redirect: &reqwest::Response,
    ) -> Result<ApiRequest, GitHubError> {
        let location = redirect
            .headers()
            .get(header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .ok_or_else(|| {
                protocol(&api.method, api.url.path(), "a redirect without a Location")
            })?;
        let url = api
            .url
            .join(location)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or_else(|| {
                protocol(
                    &api.method,
                    api.url.path(),
                    "the redirect Location is not an http(s) URL",
                )
            })?;
        let auth = if same_origin(&url, &api.url) {
            Auth::Installation(self.id)
        } else {
            Auth::Anonymous
        };
        Ok(ApiRequest {
            method: Method::GET,
            url,
            body: None,
            auth,
            streaming: true,
        })
    }
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.origin() == b.origin()
}
