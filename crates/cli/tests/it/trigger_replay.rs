//! Trigger replay end to end through a real `astrolift serve` on SQLite (docs/reference.md
//! §9, "Trigger replay"; §10, "Kept requests"; §3, `triggers replay` and `triggers purge`):
//! signed requests to the registered bindings are kept (the newest 20 accepted ones; not a
//! duplicate, a refusal or a body over 256 KiB; none for `keep_deliveries = 0`), a pull
//! request that changes the bindings gets their replay in its check run (the counts worked
//! out in tests/trigger-replay/cases.rs, the changed paths by shape, a warning on the
//! binding's `name` line, its failing sample), and no kept body reaches the check run or
//! serve's log. A copy of the manifest in another repository replays nothing; `triggers
//! replay` prints the same counts from the state file; `triggers purge` and a teardown
//! delete the kept requests.

use std::collections::BTreeMap;

use astrolift_fake_github::{FakeCheckRun, FakeGitHub, FakePullRequest};
use astrolift_store::StateStore;
use astrolift_store::state::SqliteStateStore;
use serde_json::{Value, json};

use crate::serve_process::{INSTALLATION, ServeProcess, ServeSetup, completed_runs};
use crate::support::Run;
use crate::trigger_replay_cases::{self as cases, SENTINEL};

const WEBHOOK_SECRET: &str = "trigger-replay-webhook-secret";
const PROJECT: &str = "proj-replay";
const MAIN_SHA: &str = "b111111111111111111111111111111111111111";
const HEAD_SHA: &str = "b222222222222222222222222222222222222222";
const COPY_SHA: &str = "b333333333333333333333333333333333333333";
/// Another tenant's repository holding a copy of the head.
const COPY: (&str, &str) = ("mallory", "copies");

fn repository(owner: &str, name: &str, id: u64) -> Value {
    json!({ "id": id, "full_name": format!("{owner}/{name}"), "default_branch": "main",
            "fork": false, "private": true, "name": name,
            "owner": { "login": owner, "id": id + 1 } })
}

fn pull_request_event(repo: &Value, number: u64, head_sha: &str) -> Vec<u8> {
    let body = json!({
        "action": "opened", "number": number,
        "pull_request": {
            "number": number, "draft": false, "state": "open", "merged": false,
            "head": { "sha": head_sha, "ref": "feature", "repo": repo },
            "base": { "sha": MAIN_SHA, "ref": "main", "repo": repo },
        },
        "repository": repo,
        "installation": { "id": INSTALLATION },
        "sender": { "login": "dev", "id": 5, "type": "User" },
    });
    serde_json::to_vec(&body).expect("json")
}

/// `octo/agents` at main (the registered version) and its pull request's head, private;
/// the copy at its own pull request's head.
async fn github() -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub starts");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", MAIN_SHA, cases::main_repo());
    github.add_repo("octo", "agents", "feature", HEAD_SHA, cases::head_repo());
    github.set_repo_id("octo", "agents", 4001);
    // Private, so only the registered binding's `replay_values` keeps the values hidden.
    github.set_private("octo", "agents", true);
    let pull = FakePullRequest::open("feature", HEAD_SHA, "main");
    github.set_pull_request("octo", "agents", 5, pull);
    let (owner, name) = COPY;
    github.add_repo(owner, name, "feature", COPY_SHA, cases::head_repo());
    github.set_private(owner, name, true);
    let pull = FakePullRequest::open("feature", COPY_SHA, "main");
    github.set_pull_request(owner, name, 6, pull);
    github
}

/// Serve with `octo/agents` registered and main pushed: the bindings registered.
async fn serve(github: &FakeGitHub) -> ServeProcess {
    let server = ServeProcess::start(
        github,
        ServeSetup {
            secret: WEBHOOK_SECRET,
            env: vec![(cases::SECRET_VARIABLE, cases::SECRET)],
            register: false,
        },
    );
    let registered = server.cli(&["register-repo", "octo/agents", "--project-id", PROJECT]);
    assert_eq!(registered.code, 0, "{}", registered.stderr);
    let (status, body) = server
        .push("tr-main", ("main", MAIN_SHA), INSTALLATION, WEBHOOK_SECRET)
        .await;
    assert_eq!(status, 202, "{body}");
    let runs = completed_runs(github, MAIN_SHA, 1).await;
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"), "{runs:#?}");
    server
}

fn json_of(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON")
}

/// The completed check run of `owner/repo` on `sha`.
async fn run_of(github: &FakeGitHub, (owner, repo): (&str, &str), sha: &str) -> FakeCheckRun {
    let runs = completed_runs(github, sha, 1).await;
    runs.into_iter()
        .find(|run| run.owner == owner && run.repo == repo)
        .unwrap_or_else(|| panic!("no check run of {owner}/{repo} on {sha}"))
}

/// Kept requests of `trigger_id` (of `octo/agents`) in serve's state file, read directly.
async fn kept(server: &ServeProcess, trigger_id: &str) -> usize {
    let state = SqliteStateStore::open(server.home.path().join("state.db"))
        .await
        .expect("the state file opens");
    let since = std::time::UNIX_EPOCH.elapsed().expect("after the epoch");
    let now = i64::try_from(since.as_secs()).expect("seconds");
    let kept = state
        .kept_requests()
        .list_kept_requests(trigger_id, "octo/agents", now, 20)
        .await
        .expect("kept requests");
    assert!(
        kept.iter().all(|k| k.body.len() <= 256 * 1024),
        "a body over 256 KiB was kept"
    );
    kept.len()
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_keeps_requests_and_a_pull_request_replays_them() {
    let github = github().await;
    let mut server = serve(&github).await;
    let listed = json_of(&server.cli(&["triggers", "list", "--format", "json"]));
    let ids: BTreeMap<String, String> = cases::trigger_ids(listed.as_array().expect("an array"));

    for (n, post) in cases::posts().into_iter().enumerate() {
        let path = format!("/triggers/{}", ids[post.trigger]);
        let headers = [
            ("content-type", "application/json"),
            ("x-signature", post.signature.as_str()),
        ];
        let (status, answer) = server.post(&path, &headers, post.body).await;
        assert_eq!(
            status, post.status,
            "request {n} to {}: {answer}",
            post.trigger
        );
    }
    assert_eq!(kept(&server, &ids["orders"]).await, 20, "the window");
    assert_eq!(kept(&server, &ids["lean"]).await, 0, "keep_deliveries = 0");
    assert_eq!(kept(&server, &ids["steady"]).await, 2);

    // The pull request: its check run replays `orders` and `lean` (see cases.rs).
    let pull = pull_request_event(&repository("octo", "agents", 4001), 5, HEAD_SHA);
    let (status, answer) = server
        .deliver("pull_request", "tr-pr-5", pull, WEBHOOK_SECRET)
        .await;
    assert_eq!(status, 202, "{answer}");
    let run = run_of(&github, ("octo", "agents"), HEAD_SHA).await;
    cases::assert_replayed(&run, &ids);

    // Another tenant's copy of the manifest, the same trigger names: nothing replayed.
    let (owner, name) = COPY;
    let pull = pull_request_event(&repository(owner, name, 7001), 6, COPY_SHA);
    let (status, answer) = server
        .deliver("pull_request", "tr-copy-6", pull, WEBHOOK_SECRET)
        .await;
    assert_eq!(status, 202, "{answer}");
    let copy = run_of(&github, COPY, COPY_SHA).await;
    let shown = cases::shown(&copy);
    assert!(!shown.contains("### Trigger replay"), "{shown}");
    assert!(!shown.contains("trigger replay:"), "{shown}");
    assert!(!shown.contains(SENTINEL), "{shown}");

    // `triggers replay` on the state file and the head's folder: the same counts, exit 1
    // (dispatches are lost), no value or error text.
    let head = cases::head_repo();
    let head = head.to_str().expect("utf-8");
    let orders = ids["orders"].as_str();
    let replay = server.cli(&["triggers", "replay", orders, head, "--format", "json"]);
    assert_eq!(replay.code, 1, "{}\n{}", replay.stdout, replay.stderr);
    for text in [&replay.stdout, &replay.stderr] {
        assert!(
            !text.contains(SENTINEL) && !text.contains("no customer"),
            "{text}"
        );
    }
    let report: Value = serde_json::from_str(&replay.stdout).expect("JSON");
    assert_eq!(
        (
            &report["trigger_id"],
            &report["trigger"],
            &report["manifest"]
        ),
        (&json!(orders), &json!("orders"), &json!(cases::MANIFEST)),
        "{report:#}"
    );
    assert_eq!(report["agent"], cases::AGENT);
    assert_eq!(report["replayed"], 20, "{report:#}");
    assert_eq!(
        report["counts"],
        json!({"unchanged": 4, "changed": 10, "newly_filtered": 3, "newly_dispatched": 1, "error": 2}),
        "{report:#}"
    );
    assert_eq!(
        report["values"], false,
        "the registered binding shows no values"
    );
    let requests = report["requests"].as_array().expect("requests");
    assert_eq!(requests.len(), 16, "every request that is not unchanged");
    for request in requests.iter().filter(|r| r["class"] == "error") {
        assert_eq!(request["error"], "the payload mapping failed", "{request}");
        assert_eq!(request["was_dispatched"], true, "{request}");
        assert!(request.get("payloads").is_none(), "{request}");
    }
    let human = server.cli(&["triggers", "replay", orders, head]);
    assert_eq!(human.code, 1, "{}", human.stderr);
    let first = format!(
        "trigger orders ({orders}) of {}: 20 kept requests replayed\n  4 unchanged, 10 changed, 3 newly filtered, 1 newly dispatched, 2 error\n",
        cases::MANIFEST
    );
    assert!(human.stdout.starts_with(&first), "{}", human.stdout);
    let changed = format!(
        "  dispatched -> changed: {}\n",
        cases::CHANGED_CELL.replace('`', "")
    );
    assert_eq!(
        human.stdout.matches(&changed).count(),
        10,
        "{}",
        human.stdout
    );
    // The newest five: a newly dispatched request, two errors and two changed ones.
    let last = server.cli(&[
        "triggers", "replay", orders, head, "--last", "5", "--format", "json",
    ]);
    assert_eq!(last.code, 1, "{}", last.stderr);
    let last: Value = serde_json::from_str(&last.stdout).expect("JSON");
    assert_eq!(
        (&last["replayed"], &last["counts"]),
        (
            &json!(5),
            &json!({"unchanged": 0, "changed": 2, "newly_filtered": 0, "newly_dispatched": 1, "error": 2})
        ),
        "{last:#}"
    );
    let over = server.cli(&["triggers", "replay", orders, head, "--last", "21"]);
    assert_eq!(over.code, 2, "{}", over.stderr);
    assert!(!human.stdout.contains(SENTINEL), "{}", human.stdout);
    let lean = server.cli(&["triggers", "replay", &ids["lean"], head, "--format", "json"]);
    assert_eq!(json_of(&lean)["replayed"], 0, "{}", lean.stdout);

    // `triggers purge`, then a teardown purges the rest.
    let purged = server.cli(&["triggers", "purge", &ids["steady"]]);
    assert_eq!(purged.code, 0, "{}", purged.stderr);
    let said = format!("purged 2 kept requests of {}\n", ids["steady"]);
    assert_eq!(purged.stdout, said);
    assert_eq!(kept(&server, &ids["steady"]).await, 0);
    let torn = server.cli(&["teardown", cases::AGENT, "--repo", "octo/agents"]);
    assert_eq!(torn.code, 0, "{}", torn.stderr);
    assert_eq!(kept(&server, orders).await, 0, "a teardown purges");
    let gone = server.cli(&["triggers", "replay", orders, head]);
    assert_eq!(gone.code, 2, "{}\n{}", gone.stdout, gone.stderr);
    let again = server.cli(&["triggers", "purge", orders]);
    assert_eq!(
        again.stdout,
        format!("purged 0 kept requests of {orders}\n")
    );

    let log = server.stop();
    assert!(
        !log.contains(SENTINEL),
        "a kept body in serve's log:\n{log}"
    );
    cases::assert_warning_counts_dispatched(&run);
}
