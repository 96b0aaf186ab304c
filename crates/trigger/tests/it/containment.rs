//! Containment of one evaluation: hostile programs and bodies that could end
//! the process are each a bounded 422, after which the same
//! process evaluates the next request; and the payload limits (size as
//! serialized, escapes counted; nesting) hold at the limit and one past it,
//! through the dispatch record and the queue message.
//!
//! These run in worker processes of this test binary (`support::limits`),
//! as every shipped binary does; the release-binary tests in `astrolift-cli`
//! and `astrolift-fn-trigger` run the same cases through `serve` and the
//! trigger function.

use astrolift_dispatch::dispatch::{DispatchMessage, DispatchQueue, MemoryDispatchQueue};
use astrolift_jq::sandbox::MAX_OUTPUT_DEPTH;
use astrolift_manifest::limits::Limits;
use astrolift_store::state::SqliteStateStore;
use astrolift_trigger::{Outcome, TriggerError, evaluate};
use serde_json::{Value, json};

use crate::dispatch::stored_binding;
use crate::support::{FixedSecrets, binding, limits, signed};

/// A 422 body and its log line carry at most this much of an error.
const SMALL_ANSWER: usize = 4096;

/// The default limits with a deadline that a debug build on a loaded
/// machine always meets: these tests are about faults and sizes, not time
/// (except the slow native's, which keeps the real deadline).
fn roomy() -> Limits {
    Limits {
        jq_time_ms: 10_000,
        ..limits()
    }
}

async fn map_with(payload: &str, body: &[u8], limits: &Limits) -> Result<Outcome, TriggerError> {
    let binding = binding(None, Some(payload));
    evaluate(
        &binding,
        "p",
        &signed(body),
        body,
        &FixedSecrets::new(),
        limits,
    )
    .await
}

async fn map(payload: &str, body: &[u8]) -> Result<Outcome, TriggerError> {
    map_with(payload, body, &roomy()).await
}

/// `program` on `body` is a small 422, and the next request is answered.
async fn assert_contained(program: &str, body: &[u8]) {
    assert_contained_with(program, body, &roomy()).await;
}

async fn assert_contained_with(program: &str, body: &[u8], limits: &Limits) {
    let error = map_with(program, body, limits).await.expect_err(program);
    assert_eq!(error.status(), 422, "{program}: {error}");
    let message = error.to_string();
    assert!(
        message.len() <= SMALL_ANSWER,
        "{program}: {} bytes",
        message.len()
    );
    let next = map("{key: .issue.key}", br#"{"issue":{"key":"A-1"}}"#).await;
    assert_eq!(
        next.expect("the next request"),
        Outcome::Dispatch {
            payload: Some(json!({"key": "A-1"}))
        },
        "after {program}"
    );
}

const EMPTY: &[u8] = b"{}";

#[tokio::test]
async fn parser_recursion_in_fromjson_is_contained() {
    assert_contained(r#"{k: (("[" * 3000000) | fromjson)}"#, EMPTY).await;
}

#[tokio::test]
async fn capacity_overflow_is_contained() {
    assert_contained(r#"{k: ("ab" * 4611686018427387904)}"#, EMPTY).await;
}

#[tokio::test]
async fn allocation_failure_is_contained() {
    assert_contained(r#"{k: ("x" * 100000000000) | length}"#, EMPTY).await;
}

#[tokio::test]
async fn serializer_recursion_on_a_deep_value_is_contained() {
    assert_contained(
        "reduce range(30000) as $i (0; [[[[[[[[[[[[[[[[[[[[.]]]]]]]]]]]]]]]]]]]]) | tojson",
        EMPTY,
    )
    .await;
}

#[tokio::test]
async fn a_harmless_fromjson_on_a_deep_body_is_contained() {
    let body = json!({"issue": {"body": "[".repeat(200_000)}}).to_string();
    assert_contained("{k: (.issue.body | fromjson?)}", body.as_bytes()).await;
}

#[tokio::test]
async fn a_slow_native_is_stopped_at_the_deadline() {
    let zeros = vec![0; 100_000];
    let body = json!({"a": zeros}).to_string();
    let program = "{k: (.a | indices(.[0:50000]))}";
    let error = map_with(program, body.as_bytes(), &limits())
        .await
        .expect_err("too slow");
    assert!(
        error.to_string().contains("ran longer than 100 ms"),
        "{error}"
    );
    assert_contained_with(program, body.as_bytes(), &limits()).await;
}

#[tokio::test]
async fn a_huge_error_message_is_cut_with_a_note() {
    let error = map(r#"error("x" * 20000000)"#, EMPTY)
        .await
        .expect_err("error(...) fails");
    assert_eq!(error.status(), 422);
    let message = error.to_string();
    assert!(message.len() <= SMALL_ANSWER, "{} bytes", message.len());
    assert!(message.contains("truncated"), "{message}");
}

/// `{k: <n quotes><m letters>}`: serialized, `{"k":"` + `\"` × n + `a` × m + `"}`.
const SIZED: &str = r#"{k: (("\"" * .n) + ("a" * .m))}"#;

fn serialized_size(n: u64, m: u64) -> u64 {
    8 + 2 * n + m
}

#[tokio::test]
async fn output_size_counts_escapes_at_the_limit_and_one_past() {
    let limit = roomy().jq_output;
    let n = (limit - 8) / 2;
    let m = limit - serialized_size(n, 0);
    assert_eq!(serialized_size(n, m), limit);
    let exact = json!({"n": n, "m": m}).to_string();
    let accepted = map(SIZED, exact.as_bytes())
        .await
        .expect("exactly the limit");
    let Outcome::Dispatch {
        payload: Some(payload),
    } = accepted
    else {
        panic!("a payload: {accepted:?}")
    };
    assert_eq!(payload.to_string().len() as u64, limit);
    assert_stored_and_queued_intact(&payload).await;

    let over = json!({"n": n, "m": m + 1}).to_string();
    let error = map(SIZED, over.as_bytes())
        .await
        .expect_err("one byte over");
    assert_eq!(error.status(), 422);
    assert!(error.to_string().contains("larger than"), "{error}");
    // Counted raw (without the escapes), this output is about half the limit.
    assert!(n + m + 8 < limit);
}

/// A payload nesting `levels` deep: the object, then `levels - 1` arrays.
fn nested(levels: usize) -> String {
    format!("{{k: (reduce range({}) as $i (1; [.]))}}", levels - 1)
}

#[tokio::test]
async fn output_nesting_at_the_limit_and_one_past() {
    let accepted = map(&nested(MAX_OUTPUT_DEPTH), EMPTY)
        .await
        .expect("the deepest payload");
    let Outcome::Dispatch {
        payload: Some(payload),
    } = accepted
    else {
        panic!("a payload: {accepted:?}")
    };
    assert_stored_and_queued_intact(&payload).await;

    let error = map(&nested(MAX_OUTPUT_DEPTH + 1), EMPTY)
        .await
        .expect_err("one level deeper");
    assert_eq!(error.status(), 422);
    assert!(error.to_string().contains("nests deeper"), "{error}");
}

/// The payload is recorded, becomes the queue message, and the message's
/// JSON (what a consumer reads) parses back to the same payload.
async fn assert_stored_and_queued_intact(payload: &Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("opens");
    let recorded = crate::dispatch::record_binding(
        &state,
        &stored_binding(),
        "snap-1",
        Some(payload),
        "t-1:key:k",
        1,
    )
    .await;
    let stored = astrolift_store::state::DispatchStore::get_dispatch(&state, "t-1:key:k")
        .await
        .expect("reads")
        .expect("exists");
    assert_eq!(stored.payload, Some(payload.to_string()));
    let message = DispatchMessage::of(&recorded.dispatch).expect("the payload parses back");
    let queue = MemoryDispatchQueue::new();
    queue.publish(&message).await.expect("publishes");
    let text = serde_json::to_string(&queue.messages()[0]).expect("serializes");
    let consumed: DispatchMessage = serde_json::from_str(&text).expect("a consumer parses it");
    assert_eq!(consumed.payload.as_ref(), Some(payload));
}
