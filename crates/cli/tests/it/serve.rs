//! End to end through `astrolift serve`, a real process: signed webhooks in,
//! the fake GitHub (tokens, tarballs, check runs) and the embedded stores
//! behind it. What a user of the App sees: check runs with exact annotations,
//! registration on the registered ref only, dedupe, and refusals.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use astrolift_fake_github::{FakeCheckRun, FakeGitHub};
use astrolift_forge::webhook::sign;
use astrolift_store::state::DeliveryOutcome;
use serde_json::{Value, json};

use crate::support::{astrolift, fixture, json as parse_json, read_serve_url};

pub(crate) const SECRET: &str = "e2e-webhook-secret";
pub(crate) const INSTALLATION: u64 = 77;
pub(crate) const REPO_ID: u64 = 4001;
const JIRA_SECRET: &str = "e2e-jira-hook-secret";
const MAIN_SHA: &str = "1111111111111111111111111111111111111111";
const BRANCH_SHA: &str = "2222222222222222222222222222222222222222";
const FORK_SHA: &str = "3333333333333333333333333333333333333333";
const NOISY_SHA: &str = "4444444444444444444444444444444444444444";

fn examples(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// A running `astrolift serve` on a free port, killed on drop.
pub(crate) struct Server {
    child: Child,
    pub(crate) url: String,
    #[allow(dead_code, reason = "keeps the temp dir of the embedded stores alive")]
    home: tempfile::TempDir,
    state: String,
    blobs: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn cli(&self, args: &[&str]) -> crate::support::Run {
        let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        all.extend([
            "--state".into(),
            self.state.clone(),
            "--blobs".into(),
            self.blobs.clone(),
        ]);
        astrolift(all)
    }
}

fn start_serve(github: &FakeGitHub, register: bool) -> Server {
    let home = tempfile::tempdir().expect("temp dir");
    let state = format!("sqlite:{}", home.path().join("state.db").display());
    let blobs = format!("file:{}", home.path().join("blobs").display());
    start_serve_on(github, register, home, &state, &blobs)
}

/// `astrolift serve` on the given stores; registers `octo/agents` for `main` first when asked.
pub(crate) fn start_serve_on(
    github: &FakeGitHub,
    register: bool,
    home: tempfile::TempDir,
    state: &str,
    blobs: &str,
) -> Server {
    if register {
        let run = astrolift([
            "register-repo",
            "octo/agents",
            "--project-id",
            "proj-e2e",
            "--ref",
            "main",
            "--state",
            state,
            "--blobs",
            blobs,
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let store_args = ["--state", state, "--blobs", blobs];
        crate::support::define_triage_env_spec("proj-e2e", "octo/agents", &store_args);
        crate::support::register_example_skill_sources("proj-e2e", &store_args);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--state",
            state,
            "--blobs",
            blobs,
        ])
        .env("GITHUB_API_URL", github.base_url())
        .env("GITHUB_APP_ID", github.app_id().to_string())
        .env("GITHUB_APP_PRIVATE_KEY", github.private_key_pem())
        .env("GITHUB_WEBHOOK_SECRET", SECRET)
        .env("ASTROLIFT_SECRETS", "env")
        .env("ASTROLIFT_SECRET_AGENTS_JIRA_HOOK", JIRA_SECRET)
        .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
        .env_remove("GITHUB_WEBHOOK_SECRET_PREVIOUS")
        .env_remove("ASTROLIFT_STATE")
        .env_remove("ASTROLIFT_BLOBS")
        .env("ASTROLIFT_LOG_LEVEL", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let (_, url) = read_serve_url(&mut BufReader::new(stdout));
    Server {
        child,
        url,
        home,
        state: state.to_owned(),
        blobs: blobs.to_owned(),
    }
}

async fn fake_github() -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub starts");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", MAIN_SHA, examples("monorepo"));
    github.add_example_skill_repos();
    github.add_repo(
        "octo",
        "agents",
        "feature",
        BRANCH_SHA,
        examples("monorepo"),
    );
    github.add_repo(
        "octo",
        "agents",
        "fork-branch",
        FORK_SHA,
        examples("single-agent"),
    );
    github.add_repo(
        "octo",
        "agents",
        "noisy",
        NOISY_SHA,
        fixture("many-diagnostics"),
    );
    github
}

pub(crate) fn repository() -> Value {
    json!({ "id": REPO_ID, "full_name": "octo/agents", "default_branch": "main",
            "fork": false, "private": true, "name": "agents",
            "owner": { "login": "octo", "id": 1 } })
}

pub(crate) fn push(branch: &str, sha: &str) -> Value {
    json!({
        "ref": format!("refs/heads/{branch}"), "before": "0".repeat(40), "after": sha,
        "deleted": false, "forced": false, "created": false,
        "head_commit": { "id": sha, "timestamp": "2026-11-29T10:00:00Z", "message": "m" },
        "repository": repository(),
        "installation": { "id": INSTALLATION, "node_id": "x" },
        "sender": { "login": "dev", "id": 5 },
    })
}

fn fork_pull_request(sha: &str) -> Value {
    json!({
        "action": "opened", "number": 9,
        "pull_request": {
            "number": 9, "draft": false,
            "head": { "sha": sha, "ref": "fork-branch",
                      "repo": { "id": 9999, "full_name": "mallory/agents", "fork": true } },
            "base": { "sha": MAIN_SHA, "ref": "main", "repo": repository() },
        },
        "repository": repository(),
        "installation": { "id": INSTALLATION },
    })
}

/// POSTs `body` as a GitHub delivery, signed with `secret`.
pub(crate) async fn deliver(
    server: &Server,
    event: &str,
    delivery: &str,
    body: &Value,
    secret: &str,
) -> (u16, Value) {
    let bytes = serde_json::to_vec(body).expect("json");
    let response = reqwest::Client::new()
        .post(format!("{}/github/webhook", server.url))
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", sign(&bytes, secret))
        .body(bytes)
        .send()
        .await
        .expect("serve answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Waits until every check run on `sha` is completed, and returns them.
pub(crate) async fn completed_runs(github: &FakeGitHub, sha: &str) -> Vec<FakeCheckRun> {
    completed_runs_within(github, sha, Duration::from_secs(60)).await
}

/// The runs on `sha` once all are completed, waiting at most `patience`.
pub(crate) async fn completed_runs_within(
    github: &FakeGitHub,
    sha: &str,
    patience: Duration,
) -> Vec<FakeCheckRun> {
    let deadline = Instant::now() + patience;
    loop {
        let runs: Vec<FakeCheckRun> = github
            .check_runs()
            .into_iter()
            .filter(|r| r.head_sha == sha)
            .collect();
        if !runs.is_empty() && runs.iter().all(|r| r.status == "completed") {
            return runs;
        }
        assert!(Instant::now() < deadline, "check runs on {sha}: {runs:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) fn agents(server: &Server) -> Vec<Value> {
    let run = server.cli(&["agents", "list", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    parse_json(&run.stdout)
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_push_to_the_registered_ref_registers_and_reports() {
    let github = fake_github().await;
    let server = start_serve(&github, true);

    let (status, body) =
        deliver(&server, "push", "d-main-1", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (202, Some("queued")),
        "{body}"
    );
    let runs = completed_runs(&github, MAIN_SHA).await;
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.name, "Astrolift");
    assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
    let summary = run.summary.clone().unwrap_or_default();
    assert!(summary.contains("added"), "{summary}");
    let registered = agents(&server);
    assert!(!registered.is_empty(), "agents were registered");
    assert!(
        registered.iter().all(|a| a["status"] == "active"),
        "{registered:#?}"
    );

    // The same delivery again: acknowledged, not synced twice.
    let (status, body) =
        deliver(&server, "push", "d-main-1", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("duplicate")));
    // Another delivery of the same commit converges: one more run, nothing new registered.
    let (status, _) = deliver(&server, "push", "d-main-2", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!(status, 202);
    let deadline = Instant::now() + Duration::from_secs(60);
    while completed_runs(&github, MAIN_SHA).await.len() < 2 {
        assert!(Instant::now() < deadline, "the second delivery ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        agents(&server),
        registered,
        "the second sync changed nothing"
    );
    let ours = format!("/app/installations/{INSTALLATION}/");
    let token_requests = github.requests_to("POST", &ours).len();
    assert_eq!(token_requests, 1, "one installation token served both jobs");
}

#[tokio::test(flavor = "multi_thread")]
async fn other_refs_and_fork_pull_requests_are_checked_never_applied() {
    let github = fake_github().await;
    let server = start_serve(&github, true);

    let (status, _) = deliver(
        &server,
        "push",
        "d-feature",
        &push("feature", BRANCH_SHA),
        SECRET,
    )
    .await;
    assert_eq!(status, 202);
    let runs = completed_runs(&github, BRANCH_SHA).await;
    let summary = runs[0].summary.clone().unwrap_or_default();
    assert!(summary.contains("only `main` is registered"), "{summary}");

    let (status, _) = deliver(
        &server,
        "pull_request",
        "d-fork",
        &fork_pull_request(FORK_SHA),
        SECRET,
    )
    .await;
    assert_eq!(status, 202);
    let runs = completed_runs(&github, FORK_SHA).await;
    let summary = runs[0].summary.clone().unwrap_or_default();
    assert!(summary.contains("fork"), "{summary}");
    assert!(agents(&server).is_empty(), "nothing was registered");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unregistered_repository_is_checked_and_told_how_to_register() {
    let github = fake_github().await;
    let server = start_serve(&github, false);
    let (status, _) = deliver(&server, "push", "d-unreg", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!(status, 202);
    let runs = completed_runs(&github, MAIN_SHA).await;
    let summary = runs[0].summary.clone().unwrap_or_default();
    assert!(
        summary.contains("astrolift register-repo octo/agents --project-id ID --ref main"),
        "{summary}"
    );
    assert!(agents(&server).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repository_with_120_diagnostics_gets_3_annotation_batches() {
    let github = fake_github().await;
    let server = start_serve(&github, true);
    let (status, _) = deliver(
        &server,
        "push",
        "d-noisy",
        &push("noisy", NOISY_SHA),
        SECRET,
    )
    .await;
    assert_eq!(status, 202);
    let runs = completed_runs(&github, NOISY_SHA).await;
    let run = &runs[0];
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    // The env spec `triage-prod` names `config/triage/config.toml` in this repository
    // (so its registered ref packages it); this branch has no such file: one error on it.
    let (manifest, config): (Vec<&Value>, Vec<&Value>) = run
        .annotations
        .iter()
        .partition(|a| a["path"] == "astrolift.toml");
    assert_eq!(manifest.len(), 120);
    assert_eq!(config.len(), 1, "{config:?}");
    assert_eq!(config[0]["path"], "config/triage/config.toml");
    let lines: Vec<u64> = manifest
        .iter()
        .filter_map(|a| a["start_line"].as_u64())
        .collect();
    assert_eq!(
        lines,
        (5..125).collect::<Vec<u64>>(),
        "one annotation per unknown key (lines 5-124), on its line"
    );
    assert_eq!(
        github
            .requests_to("PATCH", "/repos/octo/agents/check-runs/")
            .len(),
        3
    );
    assert_eq!(
        github
            .requests_to("POST", "/repos/octo/agents/check-runs")
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_store_nothing() {
    let github = fake_github().await;
    let server = start_serve(&github, true);

    let (status, _) = deliver(
        &server,
        "push",
        "d-bad",
        &push("main", MAIN_SHA),
        "wrong-secret",
    )
    .await;
    assert_eq!(status, 401);
    let (status, body) = deliver(
        &server,
        "ping",
        "d-ping",
        &json!({ "zen": "Keep it logically awesome.", "hook_id": 1 }),
        SECRET,
    )
    .await;
    assert_eq!((status, body["status"].as_str()), (200, Some("pong")));
    let mut deleted = push("main", MAIN_SHA);
    deleted["deleted"] = json!(true);
    let (status, body) = deliver(&server, "push", "d-deleted", &deleted, SECRET).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ignored")));
    let (status, _) = deliver(
        &server,
        "star",
        "d-star",
        &json!({ "action": "created", "repository": repository() }),
        SECRET,
    )
    .await;
    assert_eq!(status, 200);

    let installation = |id: u64| {
        json!({
            "action": "created",
            "installation": { "id": id, "account": { "login": "octo" } },
            "repositories": [{ "id": 4001, "full_name": "octo/agents" }],
        })
    };
    let (status, _) = deliver(
        &server,
        "installation",
        "d-bad-installation",
        &installation(4242),
        "wrong-secret",
    )
    .await;
    assert_eq!(status, 401);

    let health = reqwest::get(format!("{}/healthz", server.url))
        .await
        .expect("healthz");
    assert_eq!(health.status().as_u16(), 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        github.check_runs().is_empty(),
        "no run for refused or ignored deliveries"
    );
    assert!(agents(&server).is_empty());
    let state = astrolift_store::state_store_from_url(&server.state)
        .await
        .expect("serve's state opens");
    assert_eq!(
        state.get_installation(4242).await.expect("reads"),
        None,
        "a refused installation event records no installation"
    );
    // Recording an id again answers `Duplicate` when it was stored: none of these was.
    let unrecorded = |id: &'static str| {
        let state = state.clone();
        async move {
            let ttl = Duration::from_secs(3600);
            state
                .record_delivery(id, 1_767_225_600, ttl)
                .await
                .expect("records")
        }
    };
    for id in [
        "d-bad",
        "d-ping",
        "d-deleted",
        "d-star",
        "d-bad-installation",
    ] {
        assert_eq!(
            unrecorded(id).await,
            DeliveryOutcome::New,
            "{id} was stored"
        );
    }

    // The same reads see what an accepted delivery stores, so the checks above can fail.
    let (status, _) = deliver(
        &server,
        "installation",
        "d-installation",
        &installation(4243),
        SECRET,
    )
    .await;
    assert_eq!(status, 200);
    assert!(state.get_installation(4243).await.expect("reads").is_some());
    let (status, _) = deliver(&server, "push", "d-queued", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!(status, 202);
    assert_eq!(unrecorded("d-queued").await, DeliveryOutcome::Duplicate);
}

/// POSTs a generic trigger request signed like `verify.kind = "hmac-sha256"`.
async fn post_trigger(server: &Server, path: &str, body: &Value, delivery: &str) -> (u16, Value) {
    let bytes = serde_json::to_vec(body).expect("json");
    let signature = sign(&bytes, JIRA_SECRET);
    let response = reqwest::Client::new()
        .post(format!("{}{path}", server.url))
        .header("x-signature", signature)
        .header("idempotency-key", delivery)
        .body(bytes)
        .send()
        .await
        .expect("serve answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn registered_triggers_dispatch_through_serve() {
    let github = fake_github().await;
    let server = start_serve(&github, true);
    let (status, _) = deliver(&server, "push", "d-trg", &push("main", MAIN_SHA), SECRET).await;
    assert_eq!(status, 202);
    let runs = completed_runs(&github, MAIN_SHA).await;
    let summary = runs[0].summary.clone().unwrap_or_default();
    let run = server.cli(&["triggers", "list", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings = parse_json(&run.stdout);
    let generic = bindings
        .as_array()
        .and_then(|b| b.iter().find(|t| t["name"] == "jira-high-priority"))
        .cloned()
        .expect("the generic trigger is registered");
    let path = generic["path"].as_str().expect("a path").to_owned();
    assert!(
        summary.contains(&path),
        "the check run shows {path}: {summary}"
    );

    let high = json!({ "issue": { "key": "OPS-1", "fields": { "priority": { "name": "High" }, "summary": "Down" } } });
    let (status, body) = post_trigger(&server, &path, &high, "k-1").await;
    assert_eq!(status, 202, "{body}");
    let dispatch_id = body["dispatch_id"].clone();
    let (status, body) = post_trigger(&server, &path, &high, "k-1").await;
    assert_eq!(
        (status, body["dispatch_id"].clone()),
        (200, dispatch_id.clone()),
        "a duplicate returns the first dispatch"
    );
    let low = json!({ "issue": { "key": "OPS-2", "fields": { "priority": { "name": "Low" } } } });
    assert_eq!(post_trigger(&server, &path, &low, "k-2").await.0, 204);
    let no_key = json!({ "issue": { "fields": { "priority": { "name": "High" } } } });
    assert_eq!(post_trigger(&server, &path, &no_key, "k-3").await.0, 422);
    assert_eq!(
        post_trigger(
            &server,
            "/triggers/trg_000000000000000000000000",
            &high,
            "k-4"
        )
        .await
        .0,
        404
    );

    // A GitHub-sourced binding: an `issues.opened` delivery to the App's
    // webhook. From a stranger it does not dispatch (the binding does not
    // set `allow_untrusted`); from a member it does.
    let opened_by = |login: &str, association: &str| {
        json!({ "action": "opened",
                "issue": { "number": 12, "title": "t", "user": { "login": login },
                           "author_association": association },
                "sender": { "login": login },
                "repository": repository(), "installation": { "id": INSTALLATION } })
    };
    let stranger = opened_by("stranger", "NONE");
    let (status, body) = deliver(&server, "issues", "d-issue-0", &stranger, SECRET).await;
    assert_eq!(
        (status, body["dispatched"].clone()),
        (200, json!(0)),
        "an untrusted sender dispatches nothing: {body}"
    );
    let issue = opened_by("octocat", "MEMBER");
    let (status, body) = deliver(&server, "issues", "d-issue-1", &issue, SECRET).await;
    assert_eq!(
        (status, body["dispatched"].clone()),
        (202, json!(1)),
        "{body}"
    );
    let (status, body) = deliver(&server, "issues", "d-issue-1", &issue, SECRET).await;
    assert_eq!(
        (status, body["dispatched"].clone()),
        (200, json!(0)),
        "a redelivery dispatches nothing"
    );

    // No dispatch queue: both dispatches wait in the durable outbox inside
    // the state, as valid v1 messages, and no outbox file was made beside it.
    let state = astrolift_store::state::SqliteStateStore::open(server.home.path().join("state.db"))
        .await
        .expect("the state opens");
    let outbox = astrolift_dispatch::outbox::StateOutbox::of(std::sync::Arc::new(state), u64::MAX)
        .expect("a sqlite state keeps an outbox");
    assert!(!server.home.path().join("outbox.db").exists());
    let kept = outbox.list(0, 10).await.expect("lists");
    let sources: Vec<_> = kept
        .iter()
        .map(|e| (e.message.schema.as_str(), e.message.trigger_id().is_some()))
        .collect();
    assert_eq!(
        sources,
        [
            ("astrolift.dispatch/v1", true),
            ("astrolift.dispatch/v1", true)
        ]
    );
    assert_eq!(
        kept[0].message.dispatch_id,
        dispatch_id.as_str().unwrap_or_default()
    );
}
