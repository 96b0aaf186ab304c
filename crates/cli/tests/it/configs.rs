//! Config manifests packaged on sync and handed over by a dispatch
//! (docs/reference.md §13), on the embedded stores: `check --apply` of the
//! config repository bundles the config an env spec names (scripts and
//! binaries 0755), and `dispatch --env-spec` carries it, each file behind a
//! `file://` URL that downloads the digest's bytes. Before the config is
//! packaged, the dispatch fails and nothing is recorded.

use std::path::{Path, PathBuf};
use std::process::Command;

use astrolift_store::state::{DispatchStore, SqliteStateStore, StateStore};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::dispatch_schema::dispatch_schema_errors;
use crate::support::{Run, fixture, json, run_of};

const SPEC: &str = "triage-cfg";

fn astrolift(args: &[&str], dir: &Path) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(args)
        .arg(format!("--state=sqlite:{}", dir.join("state.db").display()))
        .arg(format!("--blobs=file:{}", dir.join("blobs").display()))
        .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
        .env_remove("RUST_LOG")
        .output()
        .expect("the astrolift binary runs");
    run_of(output)
}

fn monorepo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo")
}

fn ok(run: Run) -> Run {
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run
}

fn dispatch(dir: &Path) -> Run {
    astrolift(
        &[
            "dispatch",
            "emr-triage",
            "--input",
            "{}",
            "--env-spec",
            SPEC,
        ],
        dir,
    )
}

/// The message v1 kept with dispatch `id`.
async fn message(dir: &Path, id: &str) -> Value {
    let state = SqliteStateStore::open(dir.join("state.db"))
        .await
        .expect("state");
    let task = state.tasks().get_dispatch_task(id).await.expect("read");
    let key = task.expect("a task").idempotency_key;
    let dispatch = state.get_dispatch(&key).await.expect("read");
    let text = dispatch.and_then(|d| d.message).expect("a message");
    serde_json::from_str(&text).expect("JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_manifest_is_packaged_on_sync_and_handed_over_by_dispatch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path();
    ok(astrolift(
        &[
            "env-spec",
            "upsert",
            SPEC,
            "--project-id",
            "local",
            "--agent-type",
            "claude",
            "--runtime",
            "claude-code",
            "--config-repo",
            "octo/config",
            "--manifest-path",
            "envs/triage.toml",
        ],
        home,
    ));
    let state = format!("--state=sqlite:{}", home.join("state.db").display());
    crate::support::define_triage_env_spec("local", "local/monorepo", &[&state]);
    ok(astrolift(
        &["check", "--apply", monorepo().to_str().expect("utf-8")],
        home,
    ));

    // Not packaged yet: refused, and nothing is recorded.
    let refused = dispatch(home);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("is not packaged"),
        "{}",
        refused.stderr
    );
    assert!(refused.stdout.is_empty(), "{}", refused.stdout);

    let config = fixture("config-repo");
    let config = config.to_str().expect("utf-8");
    let apply = [
        "check",
        "--apply",
        "--repo",
        "octo/config",
        "--format",
        "json",
        config,
    ];
    let report = json(&ok(astrolift(&apply, home)).stdout);
    let entry = &report["configs"][0];
    assert_eq!(entry["manifest_path"], "envs/triage.toml", "{report}");
    assert_eq!(entry["status"], "registered");
    assert_eq!(entry["files"], 5);
    let again = json(&ok(astrolift(&apply, home)).stdout);
    assert_eq!(again["configs"][0]["status"], "unchanged", "{again}");
    assert_eq!(again["configs"][0]["bundle"], entry["bundle"]);

    let dispatched = json(&ok(dispatch(home)).stdout);
    let id = dispatched["dispatch_id"].as_str().expect("an id");
    let message = message(home, id).await;
    assert_eq!(dispatch_schema_errors(&message), Vec::<String>::new());
    let config = &message["config"];
    assert_eq!(config["repository"], "octo/config");
    assert_eq!(
        config["bundle"],
        format!("sha256:{}", entry["bundle"].as_str().expect("hash"))
    );
    assert_eq!(
        config["document"]["environment"]["LOG_LEVEL"], "info",
        "{config}"
    );
    let modes: Vec<(String, String)> = config["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|file| {
            let url = file["url"].as_str().expect("a url");
            let bytes = std::fs::read(url.strip_prefix("file://").expect("file://")).expect("read");
            let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
            assert_eq!(file["digest"], digest.as_str(), "{file}");
            assert_eq!(file["size"], bytes.len() as u64);
            let path = file["path"].as_str().expect("path").to_owned();
            (path, file["mode"].as_str().expect("mode").to_owned())
        })
        .collect();
    let expected = [
        ("envs/bin/redactor", "0755"),
        ("envs/prompts/triage.md", "0644"),
        ("envs/references/severity.md", "0644"),
        ("envs/schemas/finding.json", "0644"),
        ("envs/scripts/collect.sh", "0755"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(p, m)| ((*p).to_owned(), (*m).to_owned()))
        .collect();
    assert_eq!(modes, expected);
}
