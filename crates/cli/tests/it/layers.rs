//! Dependency layers built by the packager agent (docs/reference.md "Dependency layers"),
//! end to end on the embedded stores with `examples/layers`: a push (`check --apply`)
//! dispatches the packager once, the agent is layers-pending and its dispatch refused,
//! the packager's result arrives (`layers report`, what the callback route does), and a
//! dispatch then carries the layers. Reuse on a brief-only change, a new packager
//! dispatch on a changed `requirements.txt`, a failed and a malformed result, a
//! pass-through, and no packager configured. The push-to-dispatch path runs again on
//! DynamoDB, S3 and an SQS dispatch queue on moto.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use astrolift_store::blob::{BlobOptions, S3BlobStore};
use astrolift_store::state::DynamoStateStore;
use astrolift_store::testing::{aws_endpoint, unique_name};

use crate::dispatch_schema::dispatch_schema_errors;
use crate::support::{Run, copy_tree, json, run_of};

const DIGEST: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// Where a test's commands keep their state, and the folder its repository is copied to.
struct Stores {
    dir: tempfile::TempDir,
    /// `ASTROLIFT_STATE`, `ASTROLIFT_BLOBS` and, on AWS, `ASTROLIFT_DISPATCH_QUEUE_URL`.
    env: Vec<(&'static str, String)>,
}

impl Stores {
    /// SQLite and a blob directory in a temporary folder; dispatches go to the outbox.
    fn embedded() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let env = vec![
            (
                "ASTROLIFT_STATE",
                format!("sqlite:{}", dir.path().join("state.db").display()),
            ),
            (
                "ASTROLIFT_BLOBS",
                format!("file:{}", dir.path().join("blobs").display()),
            ),
        ];
        Stores { dir, env }
    }

    /// A fresh DynamoDB table, S3 bucket and SQS dispatch queue on moto; `None` when the AWS
    /// tests are skipped (no `AWS_ENDPOINT_URL`, and `ASTROLIFT_REQUIRE_AWS` unset).
    fn on_moto(test: &str) -> Option<Self> {
        aws_endpoint(test)?;
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let (table, bucket, queue) = runtime.block_on(async {
            let table = unique_name("layers");
            let state = DynamoStateStore::from_env(&table).await.expect("dynamo");
            state.create_table().await.expect("table");
            let bucket = unique_name("layers");
            let blobs = S3BlobStore::from_env(&bucket, "", BlobOptions::default())
                .await
                .expect("s3");
            blobs.create_bucket().await.expect("bucket");
            let sqs = aws_sdk_sqs::Client::new(&astrolift_store::load_sdk_config().await);
            let created = sqs
                .create_queue()
                .queue_name(unique_name("layers-dispatch"))
                .send()
                .await
                .expect("queue");
            (
                table,
                bucket,
                created.queue_url().expect("a URL").to_owned(),
            )
        });
        let env = vec![
            ("ASTROLIFT_STATE", format!("dynamodb:{table}")),
            ("ASTROLIFT_BLOBS", format!("s3://{bucket}")),
            ("ASTROLIFT_DISPATCH_QUEUE_URL", queue),
        ];
        let dir = tempfile::tempdir().expect("temp dir");
        Some(Stores { dir, env })
    }

    fn home(&self) -> &Path {
        self.dir.path()
    }
}

fn astrolift(args: &[&str], stores: &Stores, packager: Option<&str>) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_astrolift"));
    command
        .args(args)
        .current_dir(stores.home())
        .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
        .env_remove("ASTROLIFT_PACKAGER_AGENT")
        .env_remove("RUST_LOG")
        .envs(stores.env.iter().map(|(name, value)| (name, value)));
    if let Some(name) = packager {
        command.env("ASTROLIFT_PACKAGER_AGENT", name);
    }
    run_of(command.output().expect("the astrolift binary runs"))
}

fn ok(run: Run) -> Run {
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run
}

/// A copy of `examples/layers` in `home/repo`.
fn example(home: &Path) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/layers");
    let repo = home.join("repo");
    copy_tree(&from, &repo);
    repo
}

fn apply(stores: &Stores, repo: &Path, packager: Option<&str>) -> Value {
    let repo = repo.to_str().expect("utf-8");
    let args = [
        "check",
        "--apply",
        "--repo",
        "local/layers",
        "--format",
        "json",
        repo,
    ];
    json(&ok(astrolift(&args, stores, packager)).stdout)
}

fn packager_dispatches(stores: &Stores) -> Vec<Value> {
    let list = json(
        &ok(astrolift(
            &["dispatch", "list", "--format", "json"],
            stores,
            None,
        ))
        .stdout,
    );
    list.as_array()
        .expect("an array")
        .iter()
        .filter(|d| {
            d["source"]
                .as_str()
                .is_some_and(|s| s.starts_with("packager:"))
        })
        .cloned()
        .collect()
}

fn reporter(stores: &Stores) -> Value {
    let list = json(
        &ok(astrolift(
            &["agents", "list", "--format", "json"],
            stores,
            None,
        ))
        .stdout,
    );
    list.as_array()
        .expect("an array")
        .iter()
        .find(|a| a["name"] == "reporter")
        .cloned()
        .expect("the reporter is registered")
}

fn dispatch(stores: &Stores, extra: &[&str]) -> Run {
    let mut args = vec!["dispatch", "reporter", "--input", "{}"];
    args.extend_from_slice(extra);
    astrolift(&args, stores, None)
}

fn report(stores: &Stores, dispatch_id: &str, status: &str, result: &str) -> Run {
    let args = [
        "layers",
        "report",
        dispatch_id,
        "--status",
        status,
        "--result",
        result,
    ];
    astrolift(&args, stores, None)
}

fn ok_result(mount_path: &str) -> String {
    format!(
        r#"{{"status":"ok","artifact_ref":"ar.reporter","layers":[{{"layer_id":"layer-1","name":"python-deps","mount_path":"{mount_path}","digest":"{DIGEST}"}}]}}"#
    )
}

fn message_of(stores: &Stores, dispatch_id: &str) -> Value {
    let shown = ok(astrolift(
        &["dispatch", "show", dispatch_id, "--format", "json"],
        stores,
        None,
    ));
    json(&shown.stdout)["message"].clone()
}

fn codes(report: &Value) -> Vec<String> {
    report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .filter(|c| c.starts_with("package/packager-"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn an_agent_with_dependencies_goes_from_push_to_a_dispatch_carrying_its_layers() {
    push_to_a_dispatch_carrying_layers(&Stores::embedded());
}

#[test]
fn on_dynamodb_s3_and_sqs_an_agent_goes_from_push_to_a_dispatch_carrying_its_layers() {
    if let Some(stores) = Stores::on_moto("layers on moto") {
        push_to_a_dispatch_carrying_layers(&stores);
    }
}

/// Push, packager dispatch, pending and refused, malformed then good result, a dispatch
/// carrying the layers, reuse on a brief-only change, a new build on changed dependencies.
fn push_to_a_dispatch_carrying_layers(stores: &Stores) {
    let home = stores.home();
    let repo = example(home);
    let first = apply(stores, &repo, Some("packager"));
    assert_eq!(codes(&first), ["package/packager-dispatched"], "{first}");
    let dispatched = packager_dispatches(stores);
    assert_eq!(dispatched.len(), 1, "{dispatched:?}");
    let packager_id = dispatched[0]["dispatch_id"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert_eq!(dispatched[0]["agent"], "packager");
    let packager_message = message_of(stores, &packager_id);
    assert_eq!(
        dispatch_schema_errors(&packager_message),
        Vec::<String>::new()
    );
    assert_eq!(packager_message["source"]["kind"], "packager");
    let payload = &packager_message["payload"];
    assert_eq!(
        payload["artifact_ref"],
        reporter(stores)["payload_digest"],
        "{payload}"
    );
    assert_eq!(
        payload["dependency_files"][0]["path"], "requirements.txt",
        "{payload}"
    );
    assert_eq!(reporter(stores)["layers"], "pending");

    let refused = dispatch(stores, &[]);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("layers-pending"),
        "{}",
        refused.stderr
    );
    // The refusal names the packager dispatch the layers wait for.
    assert!(
        refused
            .stderr
            .contains(&format!("waits for the packager dispatch {packager_id} ")),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("--allow-pending-layers"),
        "{}",
        refused.stderr
    );
    let without = json(&ok(dispatch(stores, &["--allow-pending-layers"])).stdout);
    let id = without["dispatch_id"].as_str().expect("an id");
    assert!(message_of(stores, id)["package"].get("layers").is_none());

    // A malformed result is refused and changes nothing.
    let malformed = report(
        stores,
        &packager_id,
        "succeeded",
        &ok_result("/tmp/../venv"),
    );
    assert_eq!(malformed.code, 2, "{malformed:?}");
    assert!(
        malformed.stderr.contains("mount_path"),
        "{}",
        malformed.stderr
    );
    assert_eq!(reporter(stores)["layers"], "pending");

    // By agent: the packager dispatch its pending layers wait for.
    let reported = json(
        &ok(report(
            stores,
            "reporter",
            "succeeded",
            &ok_result("/tmp/venv"),
        ))
        .stdout,
    );
    assert_eq!(reported["dispatch_id"], packager_id.as_str(), "{reported}");
    assert_eq!(reported["layers"], "ready", "{reported}");
    assert_eq!(reporter(stores)["layers"], "ready");
    let sent = json(&ok(dispatch(stores, &[])).stdout);
    let message = message_of(stores, sent["dispatch_id"].as_str().expect("an id"));
    assert_eq!(dispatch_schema_errors(&message), Vec::<String>::new());
    let layers = &message["package"]["layers"];
    assert_eq!(layers[0]["digest"], DIGEST, "{message}");
    assert_eq!(layers[0]["mount_path"], "/tmp/venv");
    let url = layers[0]["url"].as_str().expect("a URL");
    // A file: URL, or an S3 URL presigned with its query after the key.
    assert!(
        url.contains(&format!("layers/sha256/{}.tar.gz", &DIGEST[7..])),
        "{url}"
    );

    // A brief-only change reuses the layers; a changed requirements.txt builds new ones.
    std::fs::write(
        repo.join("agents/reporter/brief/BRIEF.md"),
        "# Reporter\n\nShorter.\n",
    )
    .expect("write");
    let brief_only = apply(stores, &repo, Some("packager"));
    assert_eq!(codes(&brief_only), Vec::<String>::new(), "{brief_only}");
    assert_eq!(packager_dispatches(stores).len(), 1);
    assert_eq!(reporter(stores)["layers"], "ready");
    std::fs::write(
        repo.join("agents/reporter/requirements.txt"),
        "requests==2.32.4\n",
    )
    .expect("write");
    let changed = apply(stores, &repo, Some("packager"));
    assert_eq!(
        codes(&changed),
        ["package/packager-dispatched"],
        "{changed}"
    );
    assert_eq!(packager_dispatches(stores).len(), 2);
    assert_eq!(reporter(stores)["layers"], "pending");
}

#[test]
fn a_failed_packager_result_is_visible_and_the_next_sync_retries() {
    let stores = Stores::embedded();
    let home = stores.home();
    let repo = example(home);
    apply(&stores, &repo, Some("packager"));
    let id = packager_dispatches(&stores)[0]["dispatch_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let failed = r#"{"status":"error","error":"pip could not resolve requests==2.32.3"}"#;
    ok(report(&stores, &id, "succeeded", failed));
    let agent = reporter(&stores);
    assert_eq!(agent["layers"], "failed", "{agent}");
    assert!(
        agent["layers_error"]
            .as_str()
            .is_some_and(|e| e.contains("pip"))
    );
    let refused = dispatch(&stores, &[]);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("layers-failed"),
        "{}",
        refused.stderr
    );
    // A second report of the same dispatch is refused: its task is finished.
    assert_eq!(
        report(&stores, &id, "succeeded", &ok_result("/tmp/venv")).code,
        2
    );
    // The next sync's report names the failed run, then dispatches the packager again.
    let retried = apply(&stores, &repo, Some("packager"));
    assert_eq!(
        codes(&retried),
        ["package/packager-failed", "package/packager-dispatched"],
        "{retried}"
    );
    let shown = retried["diagnostics"]
        .as_array()
        .and_then(|all| all.iter().find(|d| d["code"] == "package/packager-failed"))
        .and_then(|d| d["message"].as_str())
        .unwrap_or_default();
    assert!(shown.contains(&id), "{shown}");
    assert!(
        shown.contains("pip could not resolve requests==2.32.3"),
        "{shown}"
    );
    assert_eq!(packager_dispatches(&stores).len(), 2);
    assert_eq!(reporter(&stores)["layers"], "pending");
}

#[test]
fn without_a_packager_the_agent_is_registered_layers_pending_with_a_warning() {
    let stores = Stores::embedded();
    let home = stores.home();
    let repo = example(home);
    let report = apply(&stores, &repo, None);
    assert_eq!(
        codes(&report),
        ["package/packager-not-configured"],
        "{report}"
    );
    assert!(packager_dispatches(&stores).is_empty());
    assert_eq!(reporter(&stores)["layers"], "pending");
    // No packager dispatch to wait for: the refusal says how to get one.
    let refused = dispatch(&stores, &[]);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains(
            "no packager dispatch builds its dependency layers yet; set ASTROLIFT_PACKAGER_AGENT"
        ),
        "{}",
        refused.stderr
    );
    let named_wrong = apply(&stores, &repo, Some("no-such-agent"));
    assert_eq!(codes(&named_wrong), ["package/packager-not-configured"]);
    // Configured later: the next sync dispatches it.
    let configured = apply(&stores, &repo, Some("packager"));
    assert_eq!(codes(&configured), ["package/packager-dispatched"]);
}

#[test]
fn a_comment_only_requirements_file_is_a_pass_through_with_the_same_digest() {
    let stores = Stores::embedded();
    let home = stores.home();
    let repo = example(home);
    let agent = repo.join("agents/reporter");
    std::fs::write(
        agent.join("requirements.txt"),
        "# nothing\nautonoetic_sdk\njson\n",
    )
    .expect("write");
    let repo_dir = repo.to_str().expect("utf-8");
    let package = [
        "package",
        repo_dir,
        "--manifest",
        "agents/reporter/astrolift.toml",
    ];
    let packaged = ok(astrolift(&package, &stores, None));
    let digest = json(&packaged.stdout)["digest"].clone();
    let report = apply(&stores, &repo, Some("packager"));
    assert_eq!(codes(&report), Vec::<String>::new(), "{report}");
    let entry = report["plan"]
        .as_array()
        .expect("plan")
        .iter()
        .find(|e| e["agent"] == "reporter")
        .cloned()
        .expect("planned");
    assert_eq!(entry["digest"], digest, "{report}");
    assert!(packager_dispatches(&stores).is_empty());
    let agent = reporter(&stores);
    assert!(
        agent.get("layers").is_none() && agent.get("layer_key").is_none(),
        "{agent}"
    );
    ok(dispatch(&stores, &[]));
}
