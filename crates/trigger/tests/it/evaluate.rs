//! Filter and mapping semantics, body limits, bad JSON, missing fields.

use astrolift_trigger::{Outcome, evaluate};
use serde_json::json;

use crate::support::{FixedSecrets, PROJECT, binding, fixture, limits, signed};

const FILTER: &str = r#".issue.fields.priority.name == "High""#;
const PAYLOAD: &str = r#"{mode: "triage", issue: .issue.key, title: .issue.fields.summary}"#;

async fn run(
    filter: Option<&str>,
    payload: Option<&str>,
    body: &[u8],
) -> Result<Outcome, astrolift_trigger::TriggerError> {
    evaluate(
        &binding(filter, payload),
        PROJECT,
        &signed(body),
        body,
        &FixedSecrets::new(),
        &limits(),
    )
    .await
}

#[tokio::test]
async fn filter_true_dispatches_the_mapped_payload() {
    let outcome = run(
        Some(FILTER),
        Some(PAYLOAD),
        &fixture("generic/jira_high.json"),
    )
    .await;
    assert_eq!(
        outcome.expect("dispatch"),
        Outcome::Dispatch {
            payload: Some(
                json!({"mode": "triage", "issue": "OPS-17", "title": "Checkout is down"})
            )
        }
    );
}

#[tokio::test]
async fn filter_false_or_empty_is_filtered() {
    let low = fixture("generic/jira_low.json");
    assert_eq!(
        run(Some(FILTER), Some(PAYLOAD), &low).await.expect("204"),
        Outcome::Filtered
    );
    assert_eq!(
        run(Some("empty"), Some(PAYLOAD), &low).await.expect("204"),
        Outcome::Filtered
    );
    assert_eq!(
        run(Some("select(false)"), None, &low).await.expect("204"),
        Outcome::Filtered
    );
}

#[tokio::test]
async fn filter_must_yield_one_boolean() {
    let body = fixture("generic/jira_high.json");
    for filter in [".issue.key", "true, true", "null", "1"] {
        let error = run(Some(filter), None, &body).await.expect_err(filter);
        assert_eq!(error.status(), 422, "{filter}: {error}");
        assert!(error.to_string().starts_with("filter failed"), "{error}");
    }
}

#[tokio::test]
async fn the_three_empty_payloads_and_no_mapping() {
    let body = fixture("generic/jira_high.json");
    for mapping in [Some("null"), Some("{}"), Some("empty"), None] {
        let outcome = run(None, mapping, &body).await.expect("dispatch");
        assert_eq!(outcome, Outcome::Dispatch { payload: None }, "{mapping:?}");
    }
}

#[tokio::test]
async fn a_mapping_of_another_type_is_a_422_with_a_type_message() {
    let body = fixture("generic/jira_high.json");
    for (mapping, expect) in [
        (".issue.key", "not a string"),
        ("[1]", "not an array"),
        ("1", "not a number"),
        ("{a: 1}, {b: 2}", "yields more than 1 value"),
    ] {
        let error = run(None, Some(mapping), &body).await.expect_err(mapping);
        assert_eq!(error.status(), 422);
        assert!(error.to_string().contains(expect), "{mapping}: {error}");
    }
}

#[tokio::test]
async fn a_jq_error_is_a_422_carrying_the_jq_message() {
    let body = fixture("generic/jira_high.json");
    let error = run(None, Some(r#"{n: (.issue.key | tonumber)}"#), &body)
        .await
        .expect_err("error");
    assert_eq!(error.status(), 422);
    assert!(error.to_string().contains("jq error"), "{error}");
}

/// A field missing from the body is `null` in jq; `// error(...)` makes it
/// required (422 with the message), `// empty` turns it into the empty payload
/// or, in a filter, into "filtered out".
#[tokio::test]
async fn missing_fields_are_null_and_can_be_required() {
    let body = br#"{"issue":{}}"#;
    let lenient = run(None, Some("{issue: .issue.key}"), body)
        .await
        .expect("null field");
    assert_eq!(
        lenient,
        Outcome::Dispatch {
            payload: Some(json!({"issue": null}))
        }
    );

    let required = r#"{issue: (.issue.key // error("issue.key is required"))}"#;
    let error = run(None, Some(required), body).await.expect_err("required");
    assert_eq!(error.status(), 422);
    assert!(
        error.to_string().contains("issue.key is required"),
        "{error}"
    );

    let skip = run(None, Some("{issue: (.issue.key // empty)}"), body)
        .await
        .expect("empty");
    assert_eq!(skip, Outcome::Dispatch { payload: None });
    let filtered = run(Some(".issue.key // empty | . != null"), None, body)
        .await
        .expect("filtered");
    assert_eq!(filtered, Outcome::Filtered);
}

#[tokio::test]
async fn body_limit_is_checked_before_parsing() {
    let limit = limits().trigger_body as usize;
    // Exactly 1 MiB of valid JSON is accepted.
    let mut exact = br#"{"pad":""#.to_vec();
    exact.resize(limit - 2, b'x');
    exact.extend_from_slice(br#""}"#);
    assert_eq!(exact.len(), limit);
    let outcome = run(None, Some("{n: (.pad | length)}"), &exact)
        .await
        .expect("accepted");
    assert_eq!(
        outcome,
        Outcome::Dispatch {
            payload: Some(json!({"n": limit - 10}))
        }
    );
    // One byte more is a 413, even though it is not JSON at all.
    let mut over = vec![b'x'; limit + 1];
    over[0] = b'{';
    let error = run(None, Some("."), &over).await.expect_err("too large");
    assert_eq!(error.status(), 413);
}

#[tokio::test]
async fn bad_json_is_a_400() {
    for body in [&b"{not json"[..], b"", b"{\"a\":1} trailing"] {
        let error = run(None, Some("."), body).await.expect_err("bad json");
        assert_eq!(error.status(), 400, "{error}");
    }
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let error = run(None, Some("."), deep.as_bytes())
        .await
        .expect_err("too deep");
    assert_eq!(error.status(), 400, "{error}");
}

/// The size comes before the signature: an unsigned body over the limit is 413, as
/// `serve` answers it (docs/reference.md §10); one within it is still 401.
#[tokio::test]
async fn the_size_limit_comes_before_verification() {
    let limit = limits().trigger_body as usize;
    for (size, status) in [(limit + 1, 413), (limit, 401)] {
        let body = vec![b'x'; size];
        let error = evaluate(
            &binding(None, None),
            PROJECT,
            &http::HeaderMap::new(),
            &body,
            &FixedSecrets::new(),
            &limits(),
        )
        .await
        .expect_err("refused");
        assert_eq!(error.status(), status, "{size} bytes");
    }
}

#[test]
fn a_stored_binding_compiles_from_its_definition() {
    use astrolift_store::state::TriggerBinding;
    let spec = crate::support::spec(
        Some(crate::support::hmac_verify()),
        Some(FILTER),
        Some(PAYLOAD),
    );
    let binding = TriggerBinding {
        trigger_id: "t-9".to_owned(),
        repository: "acme/agents".to_owned(),
        manifest_path: "agents/triage/astrolift.toml".to_owned(),
        agent_name: "triage".to_owned(),
        name: spec.name.clone(),
        source: "generic".to_owned(),
        definition: serde_json::to_value(&spec).expect("serializes"),
        snapshot_hash: "abc".to_owned(),
    };
    let compiled = astrolift_trigger::CompiledBinding::from_binding(&binding).expect("compiles");
    assert_eq!(compiled.id, "t-9");
    assert_eq!(compiled.spec, spec);
}
