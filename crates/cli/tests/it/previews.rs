//! Previews from the command line (docs/reference.md §3 and §7): `register-repo --previews`
//! and `env-spec upsert --previews` set the records' `previews`, and writing either again
//! without the flag clears it; `agents list --previews` lists the active previews, which
//! plain `agents list` never shows.

use std::path::Path;

use astrolift_store::StateStore;
use astrolift_store::state::{
    EnvSpecStore, Preview, PreviewStatus, RegistrationStore, RepoRegistration, SqliteStateStore,
    preview_name,
};

use crate::support::{astrolift, json};

const REPO: &str = "acme/agents";
const TRIAGE: &str = "agents/triage/astrolift.toml";

fn run(args: &[&str], dir: &Path) -> crate::support::Run {
    let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    all.push(format!("--state=sqlite:{}", dir.join("state.db").display()));
    astrolift(all)
}

async fn state(dir: &Path) -> SqliteStateStore {
    SqliteStateStore::open(dir.join("state.db"))
        .await
        .expect("the state store opens")
}

async fn registration(dir: &Path) -> RepoRegistration {
    state(dir)
        .await
        .get_registration(REPO)
        .await
        .expect("read")
        .expect("registered")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_repo_previews_is_on_with_the_flag_and_off_again_without_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let register = |extra: &[&str]| {
        let mut args = vec!["register-repo", REPO, "--project-id", "p-1"];
        args.extend_from_slice(extra);
        run(&args, dir.path())
    };
    let on = register(&["--previews"]);
    assert_eq!(on.code, 0, "{}", on.stderr);
    assert!(
        on.stdout
            .contains("; pull requests to main preview its agents"),
        "{}",
        on.stdout
    );
    let stored = registration(dir.path()).await;
    assert!(stored.previews);
    assert_eq!(
        serde_json::to_value(&stored).expect("json")["previews"],
        serde_json::json!(true)
    );
    // A re-register writes the whole record: without the flag, previews are off.
    let off = register(&[]);
    assert_eq!(off.code, 0, "{}", off.stderr);
    assert!(!off.stdout.contains("preview"), "{}", off.stdout);
    let stored = registration(dir.path()).await;
    assert!(!stored.previews);
    assert_eq!(
        serde_json::to_value(&stored).expect("json")["previews"],
        serde_json::json!(false)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_spec_upsert_previews_is_shown_and_cleared_by_an_upsert_without_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let upsert = |extra: &[&str]| {
        let mut args = vec![
            "env-spec",
            "upsert",
            "triage-preview",
            "--project-id",
            "p-1",
            "--agent-type",
            "claude",
            "--runtime",
            "claude-code",
        ];
        args.extend_from_slice(extra);
        run(&args, dir.path())
    };
    let on = upsert(&["--previews"]);
    assert_eq!(on.code, 0, "{}", on.stderr);
    assert!(
        on.stdout.contains(
            "triage-preview: project p-1, agent type claude, runtime claude-code, config none, for previews"
        ),
        "{}",
        on.stdout
    );
    let shown = run(
        &["env-spec", "show", "triage-preview", "--format", "json"],
        dir.path(),
    );
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert_eq!(json(&shown.stdout)["previews"], serde_json::json!(true));
    let listed = run(&["env-spec", "list"], dir.path());
    assert!(
        listed.stdout.contains(", for previews"),
        "{}",
        listed.stdout
    );

    let off = upsert(&[]);
    assert_eq!(off.code, 0, "{}", off.stderr);
    assert!(!off.stdout.contains("previews"), "{}", off.stdout);
    let listed = run(&["env-spec", "list", "--format", "json"], dir.path());
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(
        json(&listed.stdout)[0]["previews"],
        serde_json::json!(false)
    );
    let stored = state(dir.path())
        .await
        .get_env_spec("triage-preview")
        .await
        .expect("read")
        .expect("stored");
    assert!(!stored.previews);
}

fn preview(repository: &str, pull_request: u64) -> Preview {
    Preview {
        repository: repository.into(),
        manifest_path: TRIAGE.into(),
        pull_request,
        project_id: "p-1".into(),
        agent: "triage".into(),
        name: preview_name("triage", pull_request),
        head_sha: format!("{pull_request}").repeat(40),
        snapshot_hash: "5".repeat(64),
        payload_digest: format!("sha256:{}", "6".repeat(64)),
        layer_key: None,
        status: PreviewStatus::Active,
        fork_approved_by: None,
        pushed_at: 1_767_225_600,
        updated_at: 1_767_225_600,
        version: 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_list_previews_lists_the_active_previews_and_plain_agents_list_does_not() {
    let dir = tempfile::tempdir().expect("temp dir");
    for repository in [REPO, "acme/other"] {
        let registered = run(
            &[
                "register-repo",
                repository,
                "--project-id",
                "p-1",
                "--previews",
            ],
            dir.path(),
        );
        assert_eq!(registered.code, 0, "{}", registered.stderr);
    }
    {
        let state = state(dir.path()).await;
        let previews = state.previews();
        for seeded in [preview(REPO, 3), preview(REPO, 4), preview("acme/other", 7)] {
            previews.put_preview(&seeded).await.expect("put");
        }
        // Closed: not listed.
        previews
            .tear_down_previews(REPO, 4, "the pull request was closed", 1_767_225_700)
            .await
            .expect("torn down");
    }

    // Plain `agents list` is unchanged: previews are not agents.
    let agents = run(&["agents", "list", "--format", "json"], dir.path());
    assert_eq!(agents.code, 0, "{}", agents.stderr);
    assert_eq!(json(&agents.stdout), serde_json::json!([]));
    let agents = run(&["agents", "list"], dir.path());
    assert_eq!(agents.stdout, "0 agents\n");

    let listed = run(
        &["agents", "list", "--previews", "--format", "json"],
        dir.path(),
    );
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let rows = json(&listed.stdout);
    let names: Vec<&str> = rows
        .as_array()
        .expect("an array")
        .iter()
        .map(|r| r["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["triage-pr3", "triage-pr7"], "by repository");
    let row = &rows[0];
    assert_eq!(
        (
            &row["repository"],
            &row["manifest_path"],
            &row["project_id"],
            &row["status"],
            &row["commit"],
            &row["snapshot_hash"],
            &row["version"],
        ),
        (
            &serde_json::json!(REPO),
            &serde_json::json!(TRIAGE),
            &serde_json::json!("p-1"),
            &serde_json::json!("active"),
            &serde_json::json!("3".repeat(40)),
            &serde_json::json!("5".repeat(64)),
            &serde_json::json!(1),
        )
    );
    assert_eq!(
        row["preview"],
        serde_json::json!({"pull_request": 3, "head_sha": "3".repeat(40)})
    );

    let human = run(
        &["agents", "list", "--previews", "--repo", REPO],
        dir.path(),
    );
    assert_eq!(human.code, 0, "{}", human.stderr);
    let lines: Vec<&str> = human.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", human.stdout);
    for part in [
        "triage-pr3",
        "#3",
        &format!("head {}", "3".repeat(12)),
        &format!("snapshot {}", "5".repeat(12)),
        &format!("{REPO}:{TRIAGE}"),
    ] {
        assert!(lines[0].contains(part), "{part}: {}", lines[0]);
    }
    assert!(!human.stdout.contains("triage-pr4"), "{}", human.stdout);
    assert!(!human.stdout.contains(&"3".repeat(13)), "{}", human.stdout);
    assert_eq!(lines[1], "1 preview");
}
