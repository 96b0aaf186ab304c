//! The packager's result (docs/reference.md §16, "Dependency layers"): the packager's return
//! format plus `layers`, each bound tested at its limit and just past it.

use astrolift_dispatch::layers::{
    MAX_LAYER_ERROR, MAX_LAYER_FIELD, MAX_LAYERS, MAX_MOUNT_PATH, PackagerResult, is_sha256_digest,
    parse_packager_result,
};
use astrolift_store::state::TaskStatus;
use serde_json::{Value, json};

fn digest() -> String {
    format!("sha256:{}", "0123456789abcdef".repeat(4))
}

fn layer(mount_path: &str) -> Value {
    json!({"layer_id": "l-1", "name": "python-deps", "mount_path": mount_path, "digest": digest()})
}

fn parse(result: &Value) -> Result<PackagerResult, String> {
    parse_packager_result(TaskStatus::Succeeded, Some(&result.to_string()))
}

fn ok_with(layers: Vec<Value>) -> Value {
    json!({"status": "ok", "artifact_ref": "ar.example", "layers": layers})
}

#[test]
fn an_ok_result_gives_its_layers() {
    let parsed = parse(&ok_with(vec![layer("/tmp/venv")])).expect("valid");
    let PackagerResult::Layers(layers) = parsed else {
        panic!("layers expected")
    };
    assert_eq!(layers[0].mount_path, "/tmp/venv");
    assert_eq!(layers[0].digest, digest());
}

#[test]
fn an_error_result_and_a_failed_report_are_failures() {
    let error = json!({"status": "error", "error": "pip failed"});
    assert_eq!(
        parse(&error),
        Ok(PackagerResult::Failed("pip failed".into()))
    );
    let failed = parse_packager_result(TaskStatus::Failed, None).expect("a failure");
    assert_eq!(
        failed,
        PackagerResult::Failed("the packager run was failed".into())
    );
    let cancelled = parse_packager_result(TaskStatus::Cancelled, Some(r#"{"error":"stopped"}"#));
    assert_eq!(cancelled, Ok(PackagerResult::Failed("stopped".into())));
}

#[test]
fn malformed_results_are_refused() {
    for bad in [
        json!("ok"),
        json!({"status": "done", "layers": []}),
        json!({"status": "ok"}),
        json!({"status": "error"}),
        json!({"status": "ok", "artifact_ref": 7, "layers": []}),
        ok_with(vec![
            json!({"layer_id": "l", "name": "n", "mount_path": "/x"}),
        ]),
        ok_with(vec![
            json!({"layer_id": "", "name": "n", "mount_path": "/x", "digest": digest()}),
        ]),
    ] {
        assert!(parse(&bad).is_err(), "{bad}");
    }
    assert!(parse_packager_result(TaskStatus::Succeeded, None).is_err());
}

#[test]
fn mount_paths_are_absolute_and_normalised() {
    for good in ["/tmp/venv", "/a", "/tmp/node_modules"] {
        assert!(parse(&ok_with(vec![layer(good)])).is_ok(), "{good}");
    }
    for bad in [
        "tmp/venv",
        "/",
        "/tmp/",
        "/tmp//venv",
        "/tmp/../etc",
        "/./tmp",
        "/tmp/..",
        "\\tmp",
        "/tmp/\nvenv",
        "",
    ] {
        assert!(parse(&ok_with(vec![layer(bad)])).is_err(), "{bad:?}");
    }
}

#[test]
fn digests_are_sha256_with_64_lowercase_hex_digits() {
    assert!(is_sha256_digest(&digest()));
    assert!(!is_sha256_digest(&digest().to_uppercase()));
    assert!(!is_sha256_digest(&digest()[..70]));
    assert!(!is_sha256_digest(&format!("{}0", digest())));
    assert!(!is_sha256_digest(&digest().replace("sha256:", "sha512:")));
    let mut bad = layer("/tmp/venv");
    bad["digest"] = json!("sha256:xyz");
    assert!(parse(&ok_with(vec![bad])).is_err());
}

#[test]
fn at_most_max_layers_are_accepted() {
    let at_limit: Vec<Value> = (0..MAX_LAYERS).map(|i| layer(&format!("/l/{i}"))).collect();
    assert!(parse(&ok_with(at_limit.clone())).is_ok());
    let mut past = at_limit;
    past.push(layer("/l/past"));
    assert!(parse(&ok_with(past)).is_err());
}

#[test]
fn fields_are_bounded_at_their_limits() {
    let field = |name: &str, len: usize| {
        let mut value = layer("/tmp/venv");
        value[name] = json!("x".repeat(len));
        parse(&ok_with(vec![value]))
    };
    for name in ["layer_id", "name"] {
        assert!(field(name, MAX_LAYER_FIELD).is_ok(), "{name}");
        assert!(field(name, MAX_LAYER_FIELD + 1).is_err(), "{name}");
    }
    let mount = |len: usize| parse(&ok_with(vec![layer(&format!("/{}", "m".repeat(len - 1)))]));
    assert!(mount(MAX_MOUNT_PATH).is_ok());
    assert!(mount(MAX_MOUNT_PATH + 1).is_err());
    let artifact = |len: usize| {
        let mut result = ok_with(vec![]);
        result["artifact_ref"] = json!("a".repeat(len));
        parse(&result)
    };
    assert!(artifact(MAX_LAYER_FIELD).is_ok());
    assert!(artifact(MAX_LAYER_FIELD + 1).is_err());
    let error = |len: usize| parse(&json!({"status": "error", "error": "e".repeat(len)}));
    assert!(error(MAX_LAYER_ERROR).is_ok());
    assert!(error(MAX_LAYER_ERROR + 1).is_err());
}
