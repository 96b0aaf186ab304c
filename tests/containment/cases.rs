//! The containment cases (`cases.json` and the `repo` fixture beside this
//! file), shared by the release-binary tests of `astrolift-cli` and
//! `astrolift-fn-trigger`: each includes this file with `#[path]`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The release binary `name` from `ASTROLIFT_RELEASE_BIN_DIR`, or `None`
/// (with a note) when it is unset; with `ASTROLIFT_REQUIRE_RELEASE_BINS` set
/// (scripts/test.sh) a missing directory fails instead.
pub fn release_binary(name: &str) -> Option<PathBuf> {
    match std::env::var_os("ASTROLIFT_RELEASE_BIN_DIR") {
        Some(dir) => {
            let path = Path::new(&dir).join(name);
            assert!(path.is_file(), "no release binary at {}", path.display());
            Some(path)
        }
        None => {
            assert!(
                std::env::var_os("ASTROLIFT_REQUIRE_RELEASE_BINS").is_none(),
                "ASTROLIFT_RELEASE_BIN_DIR is not set"
            );
            eprintln!(
                "skipped: set ASTROLIFT_RELEASE_BIN_DIR to a release build (scripts/test.sh does)"
            );
            None
        }
    }
}

/// `tests/containment` (both including crates sit two levels down).
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/containment")
}

/// The fixture repository whose triggers hold the hostile programs.
pub fn repo() -> PathBuf {
    dir().join("repo")
}

/// `cases.json`.
pub fn cases() -> Value {
    let text = std::fs::read_to_string(dir().join("cases.json")).expect("cases.json");
    serde_json::from_str(&text).expect("cases.json is JSON")
}

/// A case's body: `{"repeat": X, "times": N}` anywhere in it is X repeated N
/// times (a string for a string X, else an array).
pub fn body(case: &Value) -> Value {
    expand(&case["body"])
}

fn expand(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.contains_key("repeat") => {
            let times = map["times"].as_u64().expect("times") as usize;
            match &map["repeat"] {
                Value::String(text) => Value::String(text.repeat(times)),
                other => Value::Array(vec![other.clone(); times]),
            }
        }
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), expand(v))).collect(),
        other => other.clone(),
    }
}
