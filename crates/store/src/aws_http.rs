//! The AWS SDK's HTTP client: hyper 1 over rustls, HTTP/1.1 only, as the GitHub client
//! (`astrolift_forge`) connects.
//!
//! Written here rather than taken from the SDK (`default-https-client`) because the SDK's
//! client links HTTP/2 (`h2`, 0.45 MB) whether or not a service speaks it, and S3,
//! DynamoDB, SQS and Secrets Manager all answer over HTTP/1.1: without it the `sync`
//! function fits its 16 MB target (BENCHMARKS.md, issue 26). What it keeps of the SDK's
//! client: a connection pool per timeout setting, the system's root certificates loaded
//! on first use, `http://` endpoints (a local `AWS_ENDPOINT_URL`), the connect and read
//! timeouts the SDK asks for, and the error classes its retries read (a connection that
//! failed or broke is `io`, a timeout is `timeout`: both retried).

use std::collections::HashMap;
use std::error::Error;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::rt::TokioExecutor;

/// The client every SDK configuration of ours is loaded with (`aws::load_sdk_config`).
pub fn sdk_http_client() -> SharedHttpClient {
    SharedHttpClient::new(Http1Client::default())
}

/// One pooled connector per pair of timeouts the SDK asks for (in practice one).
#[derive(Debug, Default)]
struct Http1Client {
    connectors: Mutex<HashMap<Timeouts, SharedHttpConnector>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Timeouts {
    connect: Option<Duration>,
    read: Option<Duration>,
}

impl HttpClient for Http1Client {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let timeouts = Timeouts {
            connect: settings.connect_timeout(),
            read: settings.read_timeout(),
        };
        let mut connectors = self
            .connectors
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        connectors
            .entry(timeouts)
            .or_insert_with(|| SharedHttpConnector::new(Http1Connector::new(timeouts)))
            .clone()
    }
}

/// A hyper client whose TLS configuration (the system's roots) is built on its first call.
#[derive(Debug, Clone)]
struct Http1Connector {
    state: Arc<ConnectorState>,
}

#[derive(Debug)]
struct ConnectorState {
    timeouts: Timeouts,
    client: tokio::sync::OnceCell<Result<PooledClient, String>>,
}

type PooledClient = Client<HttpsConnector<TcpConnector>, SdkBody>;

impl Http1Connector {
    fn new(timeouts: Timeouts) -> Self {
        Http1Connector {
            state: Arc::new(ConnectorState {
                timeouts,
                client: tokio::sync::OnceCell::new(),
            }),
        }
    }
}

impl ConnectorState {
    async fn client(&self) -> Result<PooledClient, ConnectorError> {
        let built = self
            .client
            .get_or_init(|| async { build_client(self.timeouts.connect) })
            .await;
        built
            .clone()
            .map_err(|message| ConnectorError::other(message.into(), None))
    }

    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, ConnectorError> {
        let client = self.client().await?;
        let request = request
            .try_into_http1x()
            .map_err(|error| ConnectorError::user(error.into()))?;
        let answer = client.request(request);
        let answered = match self.timeouts.read {
            Some(limit) => tokio::time::timeout(limit, answer)
                .await
                .map_err(|elapsed| ConnectorError::timeout(elapsed.into()))?,
            None => answer.await,
        };
        let response = answered.map_err(classify)?;
        HttpResponse::try_from(response.map(SdkBody::from_body_1_x))
            .map_err(|error| ConnectorError::other(error.into(), None))
    }
}

fn build_client(connect_timeout: Option<Duration>) -> Result<PooledClient, String> {
    let mut tcp = TcpConnector::new();
    tcp.enforce_http(false);
    // A request's last segment goes out at once rather than after the previous one's
    // acknowledgement (Nagle), as the SDK's own client and reqwest set it.
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(connect_timeout);
    let tls = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|error| format!("cannot load the system's root certificates: {error}"))?
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    Ok(Client::builder(TokioExecutor::new()).build(tls))
}

impl HttpConnector for Http1Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let state = Arc::clone(&self.state);
        HttpConnectorFuture::new(async move { state.send(request).await })
    }
}

/// The SDK's retries read the class: a connection that could not be made or broke
/// before the answer is `io` (retried), anything else `other` (not retried).
fn classify(error: hyper_util::client::legacy::Error) -> ConnectorError {
    let broken = error.is_connect() || io_in_chain(&error);
    if broken {
        ConnectorError::io(error.into())
    } else {
        ConnectorError::other(error.into(), None)
    }
}

fn io_in_chain(error: &(dyn Error + 'static)) -> bool {
    let mut cause = error.source();
    while let Some(inner) = cause {
        if inner.is::<std::io::Error>() {
            return true;
        }
        if let Some(hyper) = inner.downcast_ref::<hyper::Error>()
            && (hyper.is_incomplete_message() || hyper.is_closed() || hyper.is_canceled())
        {
            return true;
        }
        cause = inner.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use aws_smithy_runtime_api::client::http::HttpConnector;
    use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
    use aws_smithy_types::body::SdkBody;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::{Http1Connector, Timeouts};

    fn get(url: &str) -> HttpRequest {
        let request = http::Request::builder()
            .uri(url)
            .body(SdkBody::empty())
            .expect("a request");
        HttpRequest::try_from(request).expect("an SDK request")
    }

    fn connector(read: Option<Duration>) -> Http1Connector {
        Http1Connector::new(Timeouts {
            connect: Some(Duration::from_secs(2)),
            read,
        })
    }

    #[tokio::test]
    async fn an_answer_comes_back_with_its_status_and_body() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}/", listener.local_addr().expect("an address"));
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("a connection");
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request).await;
            let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
            socket
                .write_all(answer)
                .await
                .expect("the answer is written");
        });
        let response = connector(None).call(get(&url)).await.expect("an answer");
        assert_eq!(response.status().as_u16(), 200);
        let body = aws_smithy_types::byte_stream::ByteStream::new(response.into_body())
            .collect()
            .await
            .expect("the body reads");
        assert_eq!(body.into_bytes().as_ref(), b"ok");
    }

    #[tokio::test]
    async fn a_refused_connection_is_io_which_the_sdk_retries() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}/", listener.local_addr().expect("an address"));
        drop(listener);
        let error = connector(None)
            .call(get(&url))
            .await
            .expect_err("nothing listens");
        assert!(error.is_io(), "{error:?}");
    }

    #[tokio::test]
    async fn no_answer_within_the_read_timeout_is_a_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}/", listener.local_addr().expect("an address"));
        let silent = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.expect("a connection");
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(socket);
        });
        let error = connector(Some(Duration::from_millis(200)))
            .call(get(&url))
            .await
            .expect_err("no answer");
        assert!(error.is_timeout(), "{error:?}");
        silent.abort();
    }
}
