//! `schemas/dispatch.schema.json` for the test binaries that check dispatch
//! messages end to end (included with `#[path]`, like `tests/containment`).

use std::path::Path;

use serde_json::Value;

/// Every way `message` breaks the dispatch message schema (empty: valid).
pub fn dispatch_schema_errors(message: &Value) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join("schemas/dispatch.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(path).expect("the schema"))
        .expect("the schema is JSON");
    let validator = jsonschema::draft202012::options()
        .build(&schema)
        .expect("the schema compiles");
    validator
        .iter_errors(message)
        .map(|e| e.to_string())
        .collect()
}
