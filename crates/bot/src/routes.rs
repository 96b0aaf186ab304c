//! The one route table of the App's HTTP side: which path and method reach
//! [`Ingress::receive`], the trigger service's `handle` and `callback`, and
//! the health check, as an axum [`Router`] built from parts that compose with
//! [`Router::merge`]:
//!
//! - [`webhook`]: `POST /github/webhook` (`serve`); [`webhook_on_every_path`]:
//!   a POST on any path (the webhook function's URL);
//! - [`triggers`]: `POST /triggers/{trigger_id}` (docs/reference.md §10) and
//!   `POST /callbacks/{task_id}` (§8), each with or without a trailing slash;
//! - [`healthz`]: `GET /healthz`;
//! - [`no_such_route`]: the fallback, 404 `{"error": "no such route"}`.
//!
//! Every answer becomes a response through [`Answer::into_response`], the one
//! mapping of statuses, JSON bodies and `Retry-After`. A POST route's other
//! methods are answered 405 with `Allow: POST` (`{"error": "GitHub webhooks are
//! POSTed"}` on the webhook route, `{"error": "use POST"}` on the others); a
//! trigger or task id is one non-empty path segment of at most [`MAX_ID`] bytes,
//! or the path is no route (404), whatever the method.
//!
//! How a body is read is the caller's ([`ReadBody`]): the functions hand the
//! whole body that Lambda delivered to ingress and the trigger service, which
//! enforce their own limits ([`WholeBody`]); `serve` reads against its body
//! budget and read timeout. The body is taken as axum's [`Body`], never
//! through axum's `Bytes` extractor, so axum's default body limit plays no
//! part and every size refusal is ingress's, the service's or the reader's.
//!
//! This is routing, not a server: nothing here listens or speaks a protocol.
//! `serve` runs the router in hyper's connection loop, the functions through
//! `lambda_http::run`.

use std::future::Future;
use std::sync::Arc;

use astrolift_forge::webhook::WebhookRequest;
use astrolift_trigger::TriggerService;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, Uri, header};
use axum::response::Response;
use axum::routing::{any, get};
use serde_json::json;

use crate::ingress::{Answer, Ingress};

/// Bytes of a trigger or task id: longer ids are not ours (ours are `trg_`
/// and 24 hex digits, and GUIDs).
pub const MAX_ID: usize = 128;

/// The trigger route's prefix; the rest of the path is the trigger id.
const TRIGGER_PREFIX: &str = "/triggers/";
/// The callback route's prefix; the rest of the path is the task id.
const CALLBACK_PREFIX: &str = "/callbacks/";

/// The route a body is read for: each has its own limit (`Limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyOf {
    Webhook,
    Trigger,
    Callback,
}

/// How a route reads its request body, once its path and method are known.
pub trait ReadBody: Clone + Send + Sync + 'static {
    /// What must live as long as the body is held (`serve`: its charge
    /// against the body budget).
    type Held: Send;

    /// The whole body, or the response that refuses it.
    fn read(
        &self,
        body: Body,
        headers: &HeaderMap,
        of: BodyOf,
    ) -> impl Future<Output = Result<(Bytes, Self::Held), Response>> + Send;
}

/// The body as delivered, whole and unbounded here: on Lambda it is already
/// in memory, and ingress and the trigger service refuse what is too large.
/// The bytes are taken over, not copied.
#[derive(Debug, Clone, Copy, Default)]
pub struct WholeBody;

impl ReadBody for WholeBody {
    type Held = ();

    async fn read(
        &self,
        body: Body,
        _headers: &HeaderMap,
        _of: BodyOf,
    ) -> Result<(Bytes, ()), Response> {
        match axum::body::to_bytes(body, usize::MAX).await {
            Ok(bytes) => Ok((bytes, ())),
            Err(_) => Err(Answer::error(400, "unsupported body").into_response()),
        }
    }
}

#[derive(Debug, Clone)]
struct WebhookRoute<R> {
    ingress: Arc<Ingress>,
    reader: R,
}

/// `POST /github/webhook` → [`Ingress::receive`].
pub fn webhook<R: ReadBody>(ingress: Arc<Ingress>, reader: R) -> Router {
    Router::new()
        .route("/github/webhook", any(receive::<R>))
        .with_state(WebhookRoute { ingress, reader })
}

/// A POST on any path → [`Ingress::receive`], with [`WholeBody`]: the webhook
/// function, whose URL GitHub posts to (its root or any path under it). It
/// has its own fallback, so it is not merged with [`no_such_route`].
pub fn webhook_on_every_path(ingress: Arc<Ingress>) -> Router {
    Router::new()
        .fallback(receive::<WholeBody>)
        .with_state(WebhookRoute {
            ingress,
            reader: WholeBody,
        })
}

async fn receive<R: ReadBody>(
    State(route): State<WebhookRoute<R>>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if method != Method::POST {
        return method_not_allowed("GitHub webhooks are POSTed");
    }
    // What the reader holds lives until the delivery is answered.
    let (body, _held) = match route.reader.read(body, &headers, BodyOf::Webhook).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let request = WebhookRequest {
        headers: &headers,
        body,
        // Neither front end hands over a base64 body: `lambda_http` decodes it.
        is_base64_encoded: false,
    };
    route.ingress.receive(request).await.into_response()
}

#[derive(Debug)]
struct TriggerRoutes<R> {
    service: Arc<TriggerService>,
    /// The `Function` dimension of the dispatch metrics.
    function: &'static str,
    reader: R,
}

// Not derived: a derive would ask `TriggerService: Clone` of the `Arc`.
impl<R: Clone> Clone for TriggerRoutes<R> {
    fn clone(&self) -> Self {
        Self {
            service: Arc::clone(&self.service),
            function: self.function,
            reader: self.reader.clone(),
        }
    }
}

/// `POST /triggers/{trigger_id}` → [`crate::triggers::handle`] and
/// `POST /callbacks/{task_id}` → [`TriggerService::callback`]; `function` is
/// the metrics' `Function` dimension.
pub fn triggers<R: ReadBody>(
    service: Arc<TriggerService>,
    function: &'static str,
    reader: R,
) -> Router {
    Router::new()
        .route("/triggers/{trigger_id}", any(trigger::<R>))
        .route("/triggers/{trigger_id}/", any(trigger::<R>))
        .route("/callbacks/{task_id}", any(callback::<R>))
        .route("/callbacks/{task_id}/", any(callback::<R>))
        .with_state(TriggerRoutes {
            service,
            function,
            reader,
        })
}

/// The trigger id of `/triggers/{trigger_id}`: one non-empty segment of at
/// most [`MAX_ID`] bytes, a trailing slash allowed.
pub fn trigger_id_of(path: &str) -> Option<&str> {
    segment_after(path, TRIGGER_PREFIX)
}

/// The task id of `/callbacks/{task_id}`: one non-empty segment of at most
/// [`MAX_ID`] bytes, a trailing slash allowed.
pub fn task_id_of(path: &str) -> Option<&str> {
    segment_after(path, CALLBACK_PREFIX)
}

fn segment_after<'p>(path: &'p str, prefix: &str) -> Option<&'p str> {
    let id = path.strip_prefix(prefix)?;
    let id = id.strip_suffix('/').unwrap_or(id);
    (!id.is_empty() && id.len() <= MAX_ID && !id.contains('/')).then_some(id)
}

async fn trigger<R: ReadBody>(
    State(routes): State<TriggerRoutes<R>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let read = id_and_body(
        &routes.reader,
        &method,
        uri.path(),
        trigger_id_of,
        &headers,
        body,
        BodyOf::Trigger,
    );
    let (trigger_id, body, _held) = match read.await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    crate::triggers::handle(
        &routes.service,
        routes.function,
        trigger_id,
        &headers,
        &body,
    )
    .await
    .into_response()
}

async fn callback<R: ReadBody>(
    State(routes): State<TriggerRoutes<R>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let read = id_and_body(
        &routes.reader,
        &method,
        uri.path(),
        task_id_of,
        &headers,
        body,
        BodyOf::Callback,
    );
    let (task_id, body, _held) = match read.await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    routes
        .service
        .callback(task_id, &headers, &body)
        .await
        .into_response()
}

/// The id a trigger or callback route's path names (`id_of`), and its body: the id as it stands in
/// the path (not percent-decoded), checked before the method (404, then 405), then the
/// body as `reader` reads it for `of`.
async fn id_and_body<'p, R: ReadBody>(
    reader: &R,
    method: &Method,
    path: &'p str,
    id_of: fn(&str) -> Option<&str>,
    headers: &HeaderMap,
    body: Body,
    of: BodyOf,
) -> Result<(&'p str, Bytes, R::Held), Response> {
    let Some(id) = id_of(path) else {
        return Err(not_found());
    };
    if method != Method::POST {
        return Err(method_not_allowed("use POST"));
    }
    let (body, held) = reader.read(body, headers, of).await?;
    Ok((id, body, held))
}

/// `GET /healthz`: 200 `{"status": "ok"}`.
pub fn healthz() -> Router {
    Router::new().route("/healthz", get(health))
}

async fn health() -> Response {
    Answer::new(200, json!({ "status": "ok" })).into_response()
}

/// The fallback for every path no other part routes: 404
/// `{"error": "no such route"}`. Merged last, once (a router has one fallback).
pub fn no_such_route() -> Router {
    Router::new().fallback(not_found_handler)
}

async fn not_found_handler() -> Response {
    not_found()
}

fn not_found() -> Response {
    Answer::error(404, "no such route").into_response()
}

/// 405 with `Allow: POST`.
fn method_not_allowed(message: &str) -> Response {
    let mut response = Answer::error(405, message).into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}
