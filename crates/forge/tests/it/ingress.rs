use astrolift_forge::webhook::{Event, IngressError, WebhookRequest, WebhookSecrets, accept, sign};
use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue};

const SECRET: &str = "test-webhook-secret";
const LIMIT: u64 = 25 * 1024 * 1024;

fn secrets() -> WebhookSecrets {
    WebhookSecrets::new(SECRET.into(), None).expect("non-empty")
}

fn headers(event: &str, signature: Option<String>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    // Mixed case on purpose: names are case-insensitive.
    headers.insert(
        "X-GitHub-Event",
        HeaderValue::from_str(event).expect("ascii"),
    );
    headers.insert(
        "x-github-delivery",
        HeaderValue::from_static("72d3162e-cc78-11e3-81ab-4c9367dc0958"),
    );
    if let Some(signature) = signature {
        headers.insert(
            "X-Hub-Signature-256",
            HeaderValue::from_str(&signature).expect("ascii"),
        );
    }
    headers
}

fn deliver(event: &str, body: &[u8]) -> Result<Event, IngressError> {
    let headers = headers(event, Some(sign(body, SECRET)));
    let request = WebhookRequest {
        headers: &headers,
        body: Bytes::copy_from_slice(body),
        is_base64_encoded: false,
    };
    accept(request, &secrets(), LIMIT).map(|a| a.event)
}

const PUSH: &str = r#"{"ref":"refs/heads/main","before":"0000000000000000000000000000000000000000",
 "after":"6113728f27ae82c7b1a177c8d03f9e96e0adf246","deleted":false,"forced":false,"created":true,
 "repository":{"id":35129377,"name":"public-repo","full_name":"baxterthehacker/public-repo","private":false,
 "owner":{"login":"baxterthehacker"},"default_branch":"main","fork":false,"topics":[]},
 "installation":{"id":2311213,"node_id":"MDIz"},"sender":{"login":"baxterthehacker"},"head_commit":null,"commits":[]}"#;

#[test]
fn a_signed_push_is_accepted_and_wants_a_sync() {
    let event = deliver("push", PUSH.as_bytes()).expect("accepted");
    let Event::Push(push) = &event else {
        panic!("expected a push, got {event:?}")
    };
    assert_eq!(push.repository.full_name, "baxterthehacker/public-repo");
    assert_eq!(push.installation.as_ref().map(|i| i.id), Some(2311213));
    assert!(event.wants_sync());
}

#[test]
fn a_branch_deletion_is_acknowledged_without_a_sync() {
    let body = PUSH.replace(r#""deleted":false"#, r#""deleted":true"#);
    let event = deliver("push", body.as_bytes()).expect("accepted");
    assert!(!event.wants_sync());
}

#[test]
fn unknown_events_and_actions_are_ignored_not_errors() {
    let event = deliver("star", br#"{"action":"created","starred_at":null}"#).expect("accepted");
    assert_eq!(
        event,
        Event::Ignored {
            event: "star".into(),
            action: Some("created".into())
        }
    );
    let labeled = deliver("pull_request", br#"{"action":"labeled","number":1}"#).expect("accepted");
    assert!(matches!(labeled, Event::Ignored { .. }));
    assert!(!labeled.wants_sync());
}

#[test]
fn statuses_for_bad_requests() {
    let body = PUSH.as_bytes();
    let unsigned = headers("push", None);
    let bad = headers("push", Some(sign(body, "wrong")));
    let request = |headers| WebhookRequest {
        headers,
        body: Bytes::from_static(body),
        is_base64_encoded: false,
    };
    let status = |r: Result<_, IngressError>| r.map(|_| 200).unwrap_or_else(|e| e.status());
    assert_eq!(status(accept(request(&unsigned), &secrets(), LIMIT)), 401);
    assert_eq!(status(accept(request(&bad), &secrets(), LIMIT)), 401);
    assert_eq!(status(accept(request(&bad), &secrets(), 10)), 413);
    let garbage = b"not json";
    let signed = headers("push", Some(sign(garbage, SECRET)));
    let request = WebhookRequest {
        headers: &signed,
        body: Bytes::from_static(garbage),
        is_base64_encoded: false,
    };
    assert_eq!(status(accept(request, &secrets(), LIMIT)), 400);
}

#[test]
fn base64_bodies_are_decoded_before_verification() {
    let encoded = base64::engine::general_purpose::STANDARD.encode(PUSH);
    let headers = headers("push", Some(sign(PUSH.as_bytes(), SECRET)));
    let request = WebhookRequest {
        headers: &headers,
        body: Bytes::from(encoded),
        is_base64_encoded: true,
    };
    let accepted = accept(request, &secrets(), LIMIT).expect("accepted");
    assert_eq!(accepted.body, PUSH.as_bytes());
}

#[test]
fn a_plain_body_reaches_the_accepted_delivery_without_a_copy() {
    let body = Bytes::from_static(PUSH.as_bytes());
    let headers = headers("push", Some(sign(&body, SECRET)));
    let request = WebhookRequest {
        headers: &headers,
        body: body.clone(),
        is_base64_encoded: false,
    };
    let accepted = accept(request, &secrets(), LIMIT).expect("accepted");
    assert_eq!(
        accepted.body.as_ptr(),
        body.as_ptr(),
        "the same bytes, shared"
    );
    assert_eq!(accepted.delivery_id, "72d3162e-cc78-11e3-81ab-4c9367dc0958");
}

#[test]
fn the_body_limit_holds_at_the_limit_and_refuses_one_byte_more() {
    let at_limit = vec![b' '; 64];
    let over = vec![b' '; 65];
    let headers_at = headers("ping", Some(sign(&at_limit, SECRET)));
    let headers_over = headers("ping", Some(sign(&over, SECRET)));
    let at = WebhookRequest {
        headers: &headers_at,
        body: Bytes::from(at_limit),
        is_base64_encoded: false,
    };
    let past = WebhookRequest {
        headers: &headers_over,
        body: Bytes::from(over),
        is_base64_encoded: false,
    };
    // At the limit the body is read (and is not JSON: 400); one byte more is 413.
    assert_eq!(
        accept(at, &secrets(), 64).map(|_| ()).unwrap_err().status(),
        400
    );
    assert_eq!(
        accept(past, &secrets(), 64)
            .map(|_| ())
            .unwrap_err()
            .status(),
        413
    );
}
