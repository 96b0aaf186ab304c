//! `serve`'s durable queue (docs/operations.md, "Failed jobs on serve"), on a real
//! process: a burst of accepted pushes survives `kill -9` and a restart and is applied
//! once each, in order; SIGTERM lets the running job finish and leaves the rest for the
//! next start; a job that keeps failing is dead-lettered, listed, and applied by
//! `astrolift jobs retry` once the cause is gone.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use astrolift_fake_github::{FakeCheckRun, FakeGitHub, Fault, FaultKind};
use serde_json::{Value, json};

use crate::serve_process::{INSTALLATION, ServeProcess, ServeSetup};
use crate::support::json as parse_json;

const SECRET: &str = "durable-secret";

/// The commit of push `n` (1-based); commit 0 is where the branch started.
fn sha(n: usize) -> String {
    format!("{n:040x}")
}

/// A one-agent repository whose agent's environment says which push it came from, so
/// every push changes the agent (one audit event each).
fn tree(root: &Path, n: usize) -> PathBuf {
    let dir = root.join(format!("tree-{n}"));
    std::fs::create_dir_all(dir.join("brief")).expect("dirs");
    let manifest = format!(
        "astrolift_version = 1\nname = \"burst\"\nbrief = \"brief/README.md\"\n\n\
         [[workloads]]\nname = \"burst\"\nkind = \"agent\"\nrun_family = \"task\"\n\
         max_retries = 1\ntool_timeout_seconds = 600\nresult_ttl_hours = 24\n\n\
         [[workloads.containers]]\nname = \"agent\"\nis_primary = true\n\
         image_ref = \"ghcr.io/calliopeai/astrolift-agent-claude-code:latest\"\n\n\
         [environment]\nPUSH = \"{n}\"\n"
    );
    std::fs::write(dir.join("astrolift.toml"), manifest).expect("manifest");
    std::fs::write(dir.join("brief/README.md"), format!("# Push {n}\n")).expect("brief");
    dir
}

/// A fake GitHub serving `octo/agents` at commits 0..=pushes on `main`, each the parent
/// of the next.
async fn github_with_pushes(root: &Path, pushes: usize) -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub starts");
    github.add_installation(INSTALLATION);
    for n in 0..=pushes {
        github.add_repo("octo", "agents", "main", &sha(n), tree(root, n));
        let parents: Vec<String> = if n == 0 { vec![] } else { vec![sha(n - 1)] };
        let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
        github.add_commit("octo", "agents", &sha(n), &parents);
    }
    github
}

/// Push `n`: `main` moves from commit `n - 1` to commit `n` (a fast-forward).
fn push_body(n: usize) -> Vec<u8> {
    let mut body: Value = serde_json::from_slice(&crate::serve_process::push_event(
        "main",
        &sha(n),
        INSTALLATION,
    ))
    .expect("push JSON");
    body["before"] = json!(sha(n - 1));
    serde_json::to_vec(&body).expect("json")
}

/// Registers `octo/agents` at `main` (no installation id: any installation applies) in
/// serve's stores, which `ServeSetup::register` would do under other refs and sources.
fn register(serve: &ServeProcess) {
    let run = serve.cli(&[
        "register-repo",
        "octo/agents",
        "--project-id",
        "durable",
        "--ref",
        "main",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

fn completed(github: &FakeGitHub) -> Vec<FakeCheckRun> {
    let mut runs: Vec<FakeCheckRun> = github
        .check_runs()
        .into_iter()
        .filter(|r| r.status == "completed")
        .collect();
    runs.sort_by_key(|r| r.id);
    runs
}

/// Waits until `done` holds, for at most `seconds`.
async fn wait_until(what: &str, seconds: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits, for at most `seconds`, until the run of the last of `pushes` has completed.
async fn last_push_completed(github: &FakeGitHub, pushes: usize, seconds: u64) {
    wait_until("every push applied", seconds, || {
        completed(github)
            .iter()
            .any(|run| run.head_sha == sha(pushes))
    })
    .await;
}

/// The JSON array `astrolift ARGS --format json` prints on serve's stores.
fn json_list(serve: &ServeProcess, args: &[&str]) -> Vec<Value> {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let run = serve.cli(&all);
    assert_eq!(run.code, 0, "{}", run.stderr);
    parse_json(&run.stdout)
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The commits of the agent's audit events, oldest first.
fn applied_commits(serve: &ServeProcess) -> Vec<String> {
    json_list(serve, &["history", "burst"])
        .iter()
        .map(|event| event["commit"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn jobs(serve: &ServeProcess, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["jobs", "list"];
    all.extend_from_slice(args);
    json_list(serve, &all)
}

/// A fake GitHub with `pushes` commits after the first on `main`, each tarball answered
/// after `delay`, and serve started on fresh stores where `octo/agents` is registered.
async fn burst(pushes: usize, delay: Duration) -> (tempfile::TempDir, FakeGitHub, ServeProcess) {
    let root = tempfile::tempdir().expect("temp dir");
    let github = github_with_pushes(root.path(), pushes).await;
    if !delay.is_zero() {
        github.inject(Fault::delay(delay, usize::MAX).on("GET", "/repos/octo/agents/tarball"));
    }
    let setup = ServeSetup {
        secret: SECRET,
        env: vec![],
        register: false,
    };
    let serve = ServeProcess::start(&github, setup);
    register(&serve);
    (root, github, serve)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_accepted_pushes_survives_kill_9_and_is_applied_once_each_in_order() {
    const PUSHES: usize = 100;
    // Each tarball takes a while, so the kill lands while most jobs wait.
    let (_root, github, serve) = burst(PUSHES, Duration::from_millis(40)).await;
    for n in 1..=PUSHES {
        let (status, answer) = serve
            .deliver("push", &format!("burst-{n}"), push_body(n), SECRET)
            .await;
        assert_eq!(status, 202, "push {n}: {answer}");
    }
    // kill -9, at once: every push was accepted, few have run.
    let mut serve = serve;
    serve.stop();
    let before_restart = completed(&github).len();
    assert!(before_restart < PUSHES, "the kill came after every job ran");
    let serve = serve.restart(&github, SECRET, vec![]);

    last_push_completed(&github, PUSHES, 240).await;
    // Nothing more runs after the last one.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let expected: Vec<String> = (1..=PUSHES).map(sha).collect();
    let applied = applied_commits(&serve);
    if applied != expected {
        let left = jobs(&serve, &[]);
        let mut serve = serve;
        panic!(
            "one audit event per push, in push order, none twice: {applied:?}\njobs: {left:#?}\n{}",
            serve.stop()
        );
    }
    // Lane order: each push's run completed after the previous push's.
    let mut last_seen = 0;
    for run in completed(&github) {
        let n = usize::from_str_radix(&run.head_sha, 16).expect("a push's sha");
        assert!(n >= last_seen, "push {n} completed after push {last_seen}");
        last_seen = n;
        assert_ne!(run.conclusion.as_deref(), Some("failure"), "{run:#?}");
    }
    assert!(jobs(&serve, &[]).is_empty(), "no job left");
    let mut serve = serve;
    let output = serve.stop();
    assert!(
        output.contains("resumed the jobs queued before the last stop"),
        "{output}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_finishes_the_running_job_and_leaves_the_rest_for_the_next_start() {
    const PUSHES: usize = 6;
    let (_root, github, mut serve) = burst(PUSHES, Duration::from_millis(700)).await;
    for n in 1..=PUSHES {
        let (status, _) = serve
            .deliver("push", &format!("term-{n}"), push_body(n), SECRET)
            .await;
        assert_eq!(status, 202);
    }
    wait_until("the first job to start", 30, || {
        !github.check_runs().is_empty()
    })
    .await;
    serve.terminate();
    let exited = serve
        .wait_exit(Duration::from_secs(30))
        .expect("serve exits");
    assert!(exited.success(), "{exited:?}");
    // The running job completed its check run; nothing was left in progress.
    let runs = github.check_runs();
    assert!(
        runs.iter().all(|run| run.status == "completed"),
        "{runs:#?}"
    );
    let done = runs.len();
    assert!(done < PUSHES, "the drain started no new job");
    let output = serve.output();
    let left = match PUSHES - done {
        1 => "1 job waits".to_owned(),
        n => format!("{n} jobs wait"),
    };
    assert!(
        output.contains(&format!("stopped: {left} for the next start")),
        "{output}"
    );

    let serve = serve.restart(&github, SECRET, vec![]);
    last_push_completed(&github, PUSHES, 120).await;
    let expected: Vec<String> = (1..=PUSHES).map(sha).collect();
    assert_eq!(applied_commits(&serve), expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permanent_failure_is_dead_lettered_listed_and_retried_once_fixed() {
    let (_root, github, serve) = burst(1, Duration::ZERO).await;
    let failed = dead_lettered_push(&github, &serve, "dead-1").await;
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let job = &failed[0];
    assert_eq!(job["state"], "failed");
    assert_eq!(job["attempts"], 1, "a permanent failure is not retried");
    assert_eq!(job["job"]["delivery_id"], "dead-1");
    assert!(
        job["error"].as_str().is_some_and(|e| e.contains("404")),
        "{job}"
    );
    assert!(
        json_list(&serve, &["agents", "list"]).is_empty(),
        "nothing applied"
    );
    // Its check run concludes `failure` with the reason and a Re-run button.
    let id = job["id"].as_str().expect("an id");
    let run = dead_letter_run(&github, id).await;
    assert!(
        run.summary.as_deref().is_some_and(|s| s.contains("404")),
        "{run:#?}"
    );
    let human = serve.cli(&["jobs", "list", "--state", "failed"]);
    assert!(
        human
            .stdout
            .contains("failed  1 attempt  push octo/agents@main"),
        "{}",
        human.stdout
    );

    // The cause is gone (the fault fired once); the operator queues it again.
    let retried = serve.cli(&["jobs", "retry", id]);
    assert_eq!(retried.code, 0, "{}", retried.stderr);
    wait_until("the retried job to apply", 60, || {
        completed(&github)
            .iter()
            .any(|run| run.conclusion.as_deref() != Some("failure"))
    })
    .await;
    assert_eq!(applied_commits(&serve), [sha(1)]);
    wait_until("the job to be gone", 10, || jobs(&serve, &[]).is_empty()).await;
    // Nothing left to retry.
    let again = serve.cli(&["jobs", "retry", id]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("no job"), "{}", again.stderr);
    let none = serve.cli(&["jobs", "retry", "--all-failed"]);
    assert_eq!(none.code, 0, "{}", none.stderr);
    assert!(
        none.stdout.contains("0 failed jobs queued again"),
        "{}",
        none.stdout
    );
    let mut serve = serve;
    let output = serve.stop();
    assert!(output.contains("sync gave up"), "{output}");
}

/// The completed `failure` run that offers **Re-run** of job `id`, once it exists.
async fn dead_letter_run(github: &FakeGitHub, id: &str) -> FakeCheckRun {
    let offers_rerun = |run: &FakeCheckRun| {
        run.conclusion.as_deref() == Some("failure")
            && run.actions.iter().any(|a| a["identifier"] == id)
    };
    wait_until("the Re-run button", 30, || {
        completed(github).iter().any(offers_rerun)
    })
    .await;
    let run = completed(github)
        .into_iter()
        .find(offers_rerun)
        .expect("the run");
    assert_eq!(
        run.title.as_deref(),
        Some("Astrolift gave up after 1 attempt")
    );
    assert_eq!(run.actions[0]["label"], "Re-run");
    run
}

/// Push 1, whose tarball GitHub refuses once (a 404: permanent, not retried), delivered as
/// `delivery`; the failed jobs once it is dead-lettered.
async fn dead_lettered_push(
    github: &FakeGitHub,
    serve: &ServeProcess,
    delivery: &str,
) -> Vec<Value> {
    github.inject(Fault::new(FaultKind::Status(404), 1).on("GET", "/repos/octo/agents/tarball"));
    let (status, _) = serve.deliver("push", delivery, push_body(1), SECRET).await;
    assert_eq!(status, 202);
    wait_until("the job to be dead-lettered", 60, || {
        !jobs(serve, &["--state", "failed"]).is_empty()
    })
    .await;
    jobs(serve, &["--state", "failed"])
}

/// A click on **Re-run** of `run` in `octo/agents`, as GitHub delivers it (the repository,
/// installation and sender of a push).
fn rerun_click(run: &FakeCheckRun, identifier: &str) -> Vec<u8> {
    let mut body: Value = serde_json::from_slice(&push_body(1)).expect("push JSON");
    let Some(fields) = body.as_object_mut() else {
        panic!("a push is an object");
    };
    fields.retain(|name, _| ["repository", "installation", "sender"].contains(&name.as_str()));
    fields.insert("action".into(), json!("requested_action"));
    fields.insert(
        "check_run".into(),
        json!({ "id": run.id, "head_sha": run.head_sha, "name": "Astrolift",
                "check_suite": { "id": 1, "head_sha": run.head_sha, "head_branch": "main" } }),
    );
    fields.insert(
        "requested_action".into(),
        json!({ "identifier": identifier }),
    );
    serde_json::to_vec(&body).expect("json")
}

#[tokio::test(flavor = "multi_thread")]
async fn re_run_on_the_check_run_of_a_dead_lettered_job_queues_it_again() {
    let (_root, github, serve) = burst(1, Duration::ZERO).await;
    let failed = dead_lettered_push(&github, &serve, "rerun-1").await;
    let id = failed[0]["id"].as_str().expect("an id").to_owned();
    let run = dead_letter_run(&github, &id).await;

    // Another repository's click, or an unknown job, queues nothing.
    let mut elsewhere: Value = serde_json::from_slice(&rerun_click(&run, &id)).expect("json");
    elsewhere["repository"]["full_name"] = json!("octo/other");
    let body = serde_json::to_vec(&elsewhere).expect("json");
    let (status, answer) = serve.deliver("check_run", "click-0", body, SECRET).await;
    assert_eq!(
        (status, &answer["status"]),
        (200, &json!("ignored")),
        "{answer}"
    );
    let unknown = rerun_click(&run, "00000000000000000000");
    let (status, _) = serve.deliver("check_run", "click-1", unknown, SECRET).await;
    assert_eq!(status, 200);
    assert_eq!(jobs(&serve, &["--state", "failed"]).len(), 1);

    let (status, answer) = serve
        .deliver("check_run", "click-2", rerun_click(&run, &id), SECRET)
        .await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["job_id"], json!(id));
    wait_until("the re-run to apply", 60, || {
        completed(&github)
            .iter()
            .any(|run| run.conclusion.as_deref() == Some("success"))
    })
    .await;
    assert_eq!(applied_commits(&serve), [sha(1)]);
    wait_until("the job to be gone", 10, || jobs(&serve, &[]).is_empty()).await;
    // A second click finds nothing to queue.
    let (status, answer) = serve
        .deliver("check_run", "click-3", rerun_click(&run, &id), SECRET)
        .await;
    assert_eq!(
        (status, &answer["status"]),
        (200, &json!("ignored")),
        "{answer}"
    );
}

/// `jobs list` in both formats and `jobs retry`'s answers, on records written as `serve`
/// writes them (fixed ids and times, so the output is a snapshot).
#[tokio::test(flavor = "multi_thread")]
async fn jobs_list_and_retry_print_the_records() {
    use astrolift_store::state::{JobJson, JobRecord, JobState, SqliteStateStore, StateStore};
    let home = tempfile::tempdir().expect("temp dir");
    let path = home.path().join("state.db");
    let state = SqliteStateStore::open(&path).await.expect("opens");
    let job = |n: usize| {
        let job = json!({
            "version": 1, "delivery_id": format!("delivery-{n}"), "trigger": "push",
            "installation_id": INSTALLATION, "repository": "octo/agents", "repository_id": 4001,
            "head_sha": sha(n), "branch": "main", "fork": false, "commit_time": 1_795_946_400,
            "before": sha(n - 1), "default_branch": "main", "pull_request": null,
        });
        JobJson::of(&job).expect("encoded")
    };
    let failed = JobRecord {
        id: "01795946400000000001".into(),
        state: JobState::Failed,
        attempts: 5,
        job: job(1),
        queued_at: 1_795_946_400,
        updated_at: 1_795_946_415,
        error: Some("GitHub answered 502 Bad Gateway to GET /repos/octo/agents/tarball".into()),
    };
    let queued = JobRecord {
        id: "01795946400000000002".into(),
        state: JobState::Queued,
        attempts: 0,
        job: job(2),
        queued_at: 1_795_946_401,
        updated_at: 1_795_946_401,
        error: None,
    };
    for record in [&failed, &queued] {
        state.jobs().put_job(record).await.expect("put");
    }
    drop(state);
    let url = format!("sqlite:{}", path.display());
    let run = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--state", url.as_str()]);
        crate::support::astrolift(all)
    };
    let human = run(&["jobs", "list"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    insta::assert_snapshot!("jobs_list_human", human.stdout);
    let dead = run(&["jobs", "list", "--state", "failed", "--format", "json"]);
    assert_eq!(dead.code, 0, "{}", dead.stderr);
    insta::assert_json_snapshot!("jobs_list_failed_json", parse_json(&dead.stdout));

    let not_failed = run(&["jobs", "retry", &queued.id]);
    assert_eq!(not_failed.code, 2);
    assert!(
        not_failed.stderr.contains("is queued, not failed"),
        "{}",
        not_failed.stderr
    );
    let unknown = run(&["jobs", "list", "--state", "lost"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .stderr
            .contains("expected queued, running or failed"),
        "{}",
        unknown.stderr
    );
    let retried = run(&["jobs", "retry", "--all-failed"]);
    assert_eq!(retried.code, 0, "{}", retried.stderr);
    insta::assert_snapshot!("jobs_retry_all_failed", retried.stdout);
    let listed = run(&["jobs", "list", "--format", "json"]);
    let states: Vec<(String, String)> = parse_json(&listed.stdout)
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|j| {
            (
                j["id"].as_str().unwrap_or_default().to_owned(),
                j["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            (failed.id.clone(), "queued".to_owned()),
            (queued.id.clone(), "queued".to_owned())
        ]
    );
    let neither = run(&["jobs", "retry"]);
    assert_eq!(neither.code, 2, "JOB_ID or --all-failed is required");
}
