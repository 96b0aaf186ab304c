//! The sync process killed at random points: `astrolift check
//! --apply` on a 20-agent monorepo is killed after a range of delays, then run
//! again to completion. Every time, the registered agents (with their
//! versions, which count their changes) and the referenced archives equal
//! those of one clean run. The same holds for `serve` killed (`kill -9`) midway through a
//! push of 200 agents: after the restart resumes its job, what is registered is what a
//! clean push registers, and no record ever names a missing archive.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use astrolift_fake_github::FakeGitHub;

use crate::serve_process::{INSTALLATION, ServeProcess, ServeSetup, push_event};
use crate::support::{astrolift, json};

const KILL_AFTER_MS: [u64; 6] = [5, 40, 120, 300, 700, 1500];

fn generate_monorepo(out: &Path) {
    generate_agents(out, 20);
}

fn generate_agents(out: &Path, agents: usize) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/gen_monorepo.py");
    let status = Command::new("python3")
        .arg(script)
        .arg(agents.to_string())
        .arg(out)
        .stdout(Stdio::null())
        .status()
        .expect("python3 runs");
    assert!(status.success());
}

fn stores(home: &Path) -> [String; 4] {
    [
        "--state".into(),
        format!("sqlite:{}", home.join("state.db").display()),
        "--blobs".into(),
        format!("file:{}", home.join("blobs").display()),
    ]
}

fn apply(repo: &Path, home: &Path) -> crate::support::Run {
    let mut args = vec![
        "check".to_owned(),
        "--apply".into(),
        repo.display().to_string(),
    ];
    args.extend(stores(home));
    args.extend([
        "--commit".into(),
        "c0ffee".into(),
        "--format".into(),
        "json".into(),
    ]);
    astrolift(args)
}

/// Agents without timestamps (their `version` counts their changes); asserts their archives exist.
fn registered(home: &Path) -> Vec<Value> {
    let mut args = vec![
        "agents".to_owned(),
        "list".into(),
        "--format".into(),
        "json".into(),
    ];
    args.extend(stores(home));
    registered_by(astrolift(args), home)
}

/// The agents `run` (an `agents list --format json`) printed, as [`registered`] says.
fn registered_by(run: crate::support::Run, home: &Path) -> Vec<Value> {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut agents = json(&run.stdout).as_array().cloned().unwrap_or_default();
    for agent in &mut agents {
        let digest = agent["payload_digest"].as_str().unwrap_or_default();
        let archive = home
            .join("blobs/packages/sha256")
            .join(format!("{}.tar.gz", digest.trim_start_matches("sha256:")));
        assert!(archive.is_file(), "{} is stored", archive.display());
        if let Some(object) = agent.as_object_mut() {
            object.remove("updated_at");
        }
    }
    agents
}

#[test]
fn a_sync_killed_at_any_point_converges_on_the_clean_state() {
    let work = tempfile::tempdir().expect("temp dir");
    let repo = work.path().join("repo");
    generate_monorepo(&repo);
    let clean_home = work.path().join("clean");
    assert_eq!(apply(&repo, &clean_home).code, 0);
    let clean = registered(&clean_home);
    assert_eq!(clean.len(), 20);

    for (index, delay) in KILL_AFTER_MS.into_iter().enumerate() {
        let home = work.path().join(format!("killed-{index}"));
        let mut args = vec![
            "check".to_owned(),
            "--apply".into(),
            repo.display().to_string(),
        ];
        args.extend(stores(&home));
        args.extend([
            "--commit".into(),
            "c0ffee".into(),
            "--format".into(),
            "json".into(),
        ]);
        let mut child = Command::new(env!("CARGO_BIN_EXE_astrolift"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("astrolift starts");
        std::thread::sleep(Duration::from_millis(delay));
        let _ = child.kill();
        let _ = child.wait();
        let rerun = apply(&repo, &home);
        assert_eq!(
            rerun.code, 0,
            "after a kill at {delay} ms: {}",
            rerun.stderr
        );
        assert_eq!(registered(&home), clean, "after a kill at {delay} ms");
    }
}

const SHA: &str = "4444444444444444444444444444444444444444";
const SECRET: &str = "killed-secret";

/// Serve's home: the directory of its `state.db` and `blobs/`.
fn home_of(serve: &ServeProcess) -> std::path::PathBuf {
    let state = serve.state_url();
    let path = Path::new(state.trim_start_matches("sqlite:"));
    path.parent().expect("state in a directory").to_owned()
}

fn serve_registered(serve: &ServeProcess) -> Vec<Value> {
    let run = serve.cli(&["agents", "list", "--format", "json"]);
    registered_by(run, &home_of(serve))
}

/// A fake GitHub serving the push of `repo` on `main`.
async fn github_serving(repo: &Path) -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", SHA, repo.to_owned());
    github.add_example_skill_repos();
    github
}

/// Waits until a run on the push's commit is completed.
async fn a_completed_run(github: &FakeGitHub) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !github
        .check_runs()
        .iter()
        .any(|r| r.head_sha == SHA && r.status == "completed")
    {
        assert!(std::time::Instant::now() < deadline, "no run completed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_killed_midway_through_a_large_push_converges_after_the_restart() {
    let work = tempfile::tempdir().expect("temp dir");
    let repo = work.path().join("repo");
    generate_agents(&repo, 200);
    let setup = |env| ServeSetup {
        secret: SECRET,
        env,
        register: true,
    };
    let body = push_event("main", SHA, INSTALLATION);

    let clean_github = github_serving(&repo).await;
    let clean = ServeProcess::start(&clean_github, setup(vec![]));
    let (status, _) = clean.deliver("push", "d-clean", body.clone(), SECRET).await;
    assert_eq!(status, 202);
    a_completed_run(&clean_github).await;
    let expected = serve_registered(&clean);
    assert!(expected.len() > 100, "{} registered", expected.len());

    // One blob request at a time, so that the kill lands while the archives go up.
    let github = github_serving(&repo).await;
    let mut serve = ServeProcess::start(&github, setup(vec![("ASTROLIFT_SYNC_CONCURRENCY", "1")]));
    let archives = home_of(&serve).join("blobs/packages/sha256");
    let (status, _) = serve.deliver("push", "d-killed", body, SECRET).await;
    assert_eq!(status, 202);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(&archives).map_or(0, Iterator::count) < 10 {
        assert!(std::time::Instant::now() < deadline, "no archive stored");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    serve.stop();
    let completed = github.check_runs().iter().any(|r| r.status == "completed");
    assert!(!completed, "the kill came after the sync");
    // Whatever is registered names stored archives (`registered_by` checks each).
    let midway = serve_registered(&serve);
    assert!(
        midway.len() < expected.len(),
        "the kill came after the state write"
    );

    let serve = serve.restart(&github, SECRET, vec![]);
    a_completed_run(&github).await;
    assert_eq!(serve_registered(&serve), expected);
}
