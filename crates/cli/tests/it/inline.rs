//! An inline package end to end on the embedded stores (docs/reference.md
//! §6): `check --apply` registers an agent without `[package]` and with no
//! file to ship, stores no archive, and its dispatch renders without
//! `ASTROLIFT_PAYLOAD_URL`/`ASTROLIFT_PAYLOAD_HASH`.

use std::path::Path;
use std::process::Command;

use crate::support::{Run, fixture, json, run_of};

fn astrolift(args: &[&str], dir: &Path) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(args)
        .arg(format!("--state=sqlite:{}", dir.join("state.db").display()))
        .arg(format!("--blobs=file:{}", dir.join("blobs").display()))
        .env("ASTROLIFT_CONTROLLER_URL", "https://controller.test")
        .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
        .env_remove("RUST_LOG")
        .output()
        .expect("the astrolift binary runs");
    run_of(output)
}

#[test]
fn an_agent_without_package_registers_and_dispatches_inline() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = fixture("inline-agent");
    let check = astrolift(
        &["check", "--apply", repo.to_str().expect("utf-8")],
        dir.path(),
    );
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    let packages = dir.path().join("blobs/packages/sha256");
    let archives = std::fs::read_dir(&packages).map_or(0, |entries| entries.count());
    assert_eq!(archives, 0, "an inline package stores no archive");

    let dispatched = astrolift(&["dispatch", "bare", "--input", "{}"], dir.path());
    assert_eq!(dispatched.code, 0, "{}", dispatched.stderr);
    let dispatch_id = json(&dispatched.stdout)["dispatch_id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let rendered = astrolift(&["render", &dispatch_id, "--format", "json"], dir.path());
    assert_eq!(rendered.code, 0, "{}", rendered.stderr);
    let rendered = json(&rendered.stdout);
    let env = rendered["environment"].as_object().expect("an environment");
    assert!(env.contains_key("ASTROLIFT_TASK_ID"), "{env:?}");
    for absent in ["ASTROLIFT_PAYLOAD_URL", "ASTROLIFT_PAYLOAD_HASH"] {
        assert!(!env.contains_key(absent), "{absent} in {env:?}");
    }
}
