//! `Answer::into_response`: the one mapping of an answer to HTTP, which
//! `serve` (axum) and the functions (`lambda_http`) share.

use astrolift_dispatch::{Answer, RETRY_AFTER_SECONDS};
use serde_json::json;

fn header(response: &http::Response<String>, name: http::HeaderName) -> Option<&str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

#[test]
fn a_json_answer_keeps_its_status_and_body() {
    let response: http::Response<String> =
        Answer::new(202, json!({"status": "queued"})).into_response();
    assert_eq!(response.status(), 202);
    assert_eq!(response.body(), r#"{"status":"queued"}"#);
    assert_eq!(
        header(&response, http::header::CONTENT_TYPE),
        Some("application/json")
    );
    assert_eq!(header(&response, http::header::RETRY_AFTER), None);
}

#[test]
fn no_content_has_no_body_and_no_content_type() {
    let response: http::Response<String> = Answer::new(204, json!({})).into_response();
    assert_eq!(response.status(), 204);
    assert!(response.body().is_empty());
    assert_eq!(header(&response, http::header::CONTENT_TYPE), None);
}

#[test]
fn every_503_asks_for_a_retry() {
    let response: http::Response<String> = Answer::error(503, "busy").into_response();
    assert_eq!(response.status(), 503);
    let seconds = RETRY_AFTER_SECONDS.to_string();
    assert_eq!(
        header(&response, http::header::RETRY_AFTER),
        Some(seconds.as_str())
    );
    assert_eq!(response.body(), r#"{"error":"busy"}"#);
}

#[test]
fn a_status_http_does_not_know_is_a_500() {
    let response: http::Response<String> = Answer::new(1000, json!({})).into_response();
    assert_eq!(response.status(), 500);
}
