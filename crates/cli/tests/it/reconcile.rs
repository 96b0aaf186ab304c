//! `astrolift reconcile` (docs/reference.md §3 and §4): on the configured stores, as the App
//! on the fake GitHub, a registered ref whose head moved with no delivery gets a job recorded
//! `queued` on the state store's durable queue (where `serve` runs it); a second pass queues
//! nothing more and asks GitHub only conditionally.

use std::path::Path;
use std::process::Command;

use astrolift_fake_github::FakeGitHub;
use astrolift_store::state::{
    AgentStore, ChangeSet, LastSync, RegistrationStore, RepoRegistration, SqliteStateStore,
    SyncedCommit, SyncedCommitUpdate,
};

use crate::support::{json, run_of};

const SYNCED: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const MOVED: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const INSTALLATION: u64 = 77;

/// `octo/agents` registered on `main`, applied at `SYNCED` by an earlier sync.
async fn synced_store(path: &Path) {
    let state = SqliteStateStore::open(path).await.expect("sqlite");
    let registration = RepoRegistration {
        repository: "octo/agents".into(),
        installation_id: Some(INSTALLATION),
        project_id: "local".into(),
        registered_ref: "main".into(),
        manifest_path: None,
        updated_at: 1,
        last_sync: Some(LastSync {
            repository_id: 42,
            skill_sources: Vec::new(),
        }),
        previews: false,
    };
    state
        .put_registration(&registration)
        .await
        .expect("registered");
    let mut changes = ChangeSet::new("octo/agents");
    changes.synced = Some(SyncedCommitUpdate {
        commit: SyncedCommit {
            repository: "octo/agents".into(),
            ref_name: "main".into(),
            commit: SYNCED.into(),
            commit_time: 1,
            synced_at: 1,
        },
        expected_previous: None,
    });
    state.apply(changes).await.expect("synced commit");
}

fn astrolift(args: &[&str], state: &str, github: &FakeGitHub) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_astrolift"));
    command
        .args(args)
        .arg(format!("--state={state}"))
        .env_remove("RUST_LOG")
        .env_remove("GITHUB_APP_PRIVATE_KEY_FILE")
        .env_remove("GITHUB_APP_PRIVATE_KEY_SECRET_ID")
        .env("GITHUB_API_URL", github.base_url())
        .env("GITHUB_APP_ID", github.app_id().to_string())
        .env("GITHUB_APP_PRIVATE_KEY", github.private_key_pem());
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_branch_is_queued_on_the_state_store_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("state.db");
    synced_store(&path).await;
    let state = format!("sqlite:{}", path.display());
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo");
    github.add_repo("octo", "agents", "main", MOVED, fixture);

    let reconcile = ["reconcile", "--format", "json"];
    let run = run_of(
        astrolift(&reconcile, &state, &github)
            .output()
            .expect("runs"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = json(&run.stdout);
    assert_eq!(report["totals"]["queued"], 1, "{report:#}");
    assert_eq!(report["refs"][0]["status"], "queued");
    assert_eq!(report["refs"][0]["head"], MOVED);
    assert_eq!(report["refs"][0]["synced"], SYNCED);

    let list = ["jobs", "list", "--format", "json"];
    let run = run_of(astrolift(&list, &state, &github).output().expect("runs"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let jobs = json(&run.stdout);
    assert_eq!(jobs.as_array().map(Vec::len), Some(1), "{jobs:#}");
    assert_eq!(jobs[0]["state"], "queued");
    assert_eq!(jobs[0]["job"]["trigger"], "reconcile");
    assert_eq!(jobs[0]["job"]["head_sha"], MOVED);

    let before = github.requests_to("GET", "/repos/").len();
    let run = run_of(
        astrolift(&reconcile, &state, &github)
            .output()
            .expect("runs"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let again = json(&run.stdout);
    assert_eq!(again["totals"]["queued"], 0, "{again:#}");
    assert_eq!(again["totals"]["not_modified"], 1);
    assert_eq!(again["refs"][0]["reason"], "already_queued");
    let asked = github.requests_to("GET", "/repos/")[before..].to_vec();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].header("if-none-match").is_some());
    let run = run_of(astrolift(&list, &state, &github).output().expect("runs"));
    assert_eq!(json(&run.stdout).as_array().map(Vec::len), Some(1));

    // Human output: the ref that is not unchanged, then the totals.
    let run = run_of(
        astrolift(&["reconcile"], &state, &github)
            .output()
            .expect("runs"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("reconcile_human", run.stdout);
}

/// `astrolift ARGS` exits 0; its stdout as JSON.
fn json_of(args: &[&str], state: &str, github: &FakeGitHub) -> serde_json::Value {
    let run = run_of(astrolift(args, state, github).output().expect("runs"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    json(&run.stdout)
}

/// A registered repository with no agents: `check --apply --commit C` records `C` as its
/// synced commit like any sync, so reconcile queues nothing for it, and a second pass asks
/// GitHub one conditional request per ref (docs/reference.md §4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_repository_without_agents_is_synced_and_reconciled_unchanged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = format!("sqlite:{}", dir.path().join("state.db").display());
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/no-agents");
    github.add_repo("octo", "empty", "main", SYNCED, &fixture);
    let installation = INSTALLATION.to_string();
    let register = [
        "register-repo",
        "octo/empty",
        "--project-id",
        "local",
        "--installation-id",
        &installation,
    ];
    let run = run_of(
        astrolift(&register, &state, &github)
            .output()
            .expect("runs"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let blobs = format!("--blobs=file:{}", dir.path().join("blobs").display());
    let fixture = fixture.to_str().expect("utf-8");
    let apply = [
        "check",
        "--apply",
        "--repo",
        "octo/empty",
        "--commit",
        SYNCED,
        "--format",
        "json",
        &blobs,
        fixture,
    ];
    let applied = json_of(&apply, &state, &github);
    assert_eq!(applied["applied"], true, "{applied:#}");

    let reconcile = ["reconcile", "--format", "json"];
    let first = json_of(&reconcile, &state, &github);
    assert_eq!(first["totals"]["queued"], 0, "{first:#}");
    assert_eq!(first["refs"][0]["synced"], SYNCED);
    let before = github.requests_to("GET", "/repos/").len();
    let second = json_of(&reconcile, &state, &github);
    assert_eq!(second["totals"]["queued"], 0, "{second:#}");
    assert_eq!(second["refs"][0]["status"], "unchanged");
    let asked = github.requests_to("GET", "/repos/")[before..].to_vec();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert!(asked[0].header("if-none-match").is_some(), "{asked:#?}");
    let jobs = json_of(&["jobs", "list", "--format", "json"], &state, &github);
    assert_eq!(jobs, serde_json::json!([]));
}
