//! Checks SARIF documents against the official SARIF 2.1.0 JSON schema,
//! vendored as `tests/fixtures/sarif-schema-2.1.0.json`.

use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

use crate::support::fixture;

fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let text = std::fs::read_to_string(fixture("sarif-schema-2.1.0.json"))
            .expect("the vendored SARIF schema is readable");
        let schema: Value = serde_json::from_str(&text).expect("the SARIF schema is JSON");
        jsonschema::draft7::options()
            .should_validate_formats(true)
            .build(&schema)
            .expect("the SARIF schema compiles")
    })
}

/// Panics with every schema violation when `document` is not valid SARIF 2.1.0.
pub fn assert_valid_sarif(document: &Value) {
    let errors: Vec<String> = validator()
        .iter_errors(document)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "invalid SARIF:\n{}", errors.join("\n"));
}

#[test]
fn the_schema_rejects_an_invalid_log() {
    let bad = serde_json::json!({ "version": "2.1.0", "runs": [{ "results": [] }] });
    assert!(
        !validator().is_valid(&bad),
        "a run without `tool` must fail"
    );
}
