//! The run side end to end, through a real `astrolift serve` without a dispatch queue (so
//! every message waits in the local outbox): a trigger dispatches, `astrolift render`
//! gives the container environment with a fresh cluster key each time, `POST
//! /callbacks/{task_id}` reports with the latest key, and `astrolift dispatch AGENT
//! --tail` prints each status and exits 0 after `succeeded`, 1 after `failed`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use astrolift_fake_github::FakeGitHub;
use astrolift_forge::webhook::sign;
use serde_json::{Value, json};

use crate::serve_process::{
    INSTALLATION, ServeProcess, ServeSetup, completed_runs, fake_github_with,
};
use crate::support::{Run, run_of};

const WEBHOOK_SECRET: &str = "callbacks-webhook-secret";
const TRIGGER_SECRET: &str = "callbacks-jira-hook-secret";
const MAIN_SHA: &str = "5555555555555555555555555555555555555555";
const CONTROLLER: &str = "https://controller.example.com";
/// The callback base dispatches are recorded with (the test posts to serve's own URL).
const CALLBACK_BASE: &str = "https://astrolift.example.com";

/// Serve (the release build when scripts/test.sh made one) with the monorepo registered
/// by a push, no dispatch queue, a callback route.
async fn registered_serve() -> (FakeGitHub, ServeProcess) {
    let github = fake_github_with(&[("main", MAIN_SHA)]).await;
    let (server, _profile) = ServeProcess::start_shipped(
        &github,
        ServeSetup {
            secret: WEBHOOK_SECRET,
            env: vec![
                ("ASTROLIFT_SECRET_AGENTS_JIRA_HOOK", TRIGGER_SECRET),
                ("ASTROLIFT_CALLBACK_BASE_URL", CALLBACK_BASE),
            ],
            register: true,
        },
    );
    let (status, body) = server
        .push("cb-main", ("main", MAIN_SHA), INSTALLATION, WEBHOOK_SECRET)
        .await;
    assert_eq!(status, 202, "{body}");
    let runs = completed_runs(&github, MAIN_SHA, 1).await;
    assert_eq!(runs[0].conclusion.as_deref(), Some("success"), "{runs:#?}");
    (github, server)
}

/// `astrolift ARGS` on serve's stores with `env`, no dispatch queue.
fn command(server: &ServeProcess, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_astrolift"));
    command
        .args(args)
        .arg(format!("--state={}", server.state_url()))
        .arg(format!("--blobs={}", server.blobs_url()))
        .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
        .env_remove("ASTROLIFT_CONTROLLER_URL")
        .env_remove("ASTROLIFT_OUTBOX")
        .env_remove("RUST_LOG")
        .envs(env.iter().copied());
    command
}

fn cli(server: &ServeProcess, args: &[&str], env: &[(&str, &str)]) -> Run {
    run_of(command(server, args, env).output().expect("astrolift runs"))
}

/// `astrolift render DISPATCH_ID --format json`: the rendered object.
fn render_json(server: &ServeProcess, dispatch_id: &str) -> Value {
    let run = cli(
        server,
        &["render", dispatch_id, "--format", "json"],
        &[("ASTROLIFT_CONTROLLER_URL", CONTROLLER)],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("one JSON object")
}

/// POSTs a callback report for `task_id` with `key`.
async fn callback(server: &ServeProcess, task_id: &str, key: &str, report: &Value) -> (u16, Value) {
    let bearer = format!("Bearer {key}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    let path = format!("/callbacks/{task_id}");
    server
        .post(&path, &headers, report.to_string().into_bytes())
        .await
}

/// The path of the generic trigger `jira-high-priority`.
fn trigger_path(server: &ServeProcess) -> String {
    let run = server.cli(&["triggers", "list", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: Value = serde_json::from_str(&run.stdout).expect("json");
    bindings
        .as_array()
        .and_then(|b| b.iter().find(|t| t["name"] == "jira-high-priority"))
        .and_then(|t| t["path"].as_str())
        .expect("the generic trigger is registered")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn trigger_dispatch_render_callback_through_serve() {
    let (_github, server) = registered_serve().await;
    let high =
        br#"{"issue":{"key":"OPS-7","fields":{"priority":{"name":"High"},"summary":"Down"}}}"#;
    let signature = sign(high, TRIGGER_SECRET);
    let headers = [
        ("x-signature", signature.as_str()),
        ("idempotency-key", "cb-1"),
    ];
    let (status, dispatched) = server
        .post(&trigger_path(&server), &headers, high.to_vec())
        .await;
    assert_eq!(status, 202, "{dispatched}");
    let dispatch_id = dispatched["dispatch_id"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert!(
        !server.home.path().join("outbox.db").exists(),
        "no queue: the local outbox, inside the state"
    );

    // Render: the seed's variables, a fresh key each time.
    let first = render_json(&server, &dispatch_id);
    let env = &first["environment"];
    let task_id = env["ASTROLIFT_TASK_ID"]
        .as_str()
        .expect("a task id")
        .to_owned();
    assert_eq!(first["task_id"], json!(task_id));
    assert_eq!(env["ASTROLIFT_CONTROLLER_URL"], CONTROLLER);
    assert_eq!(env["ASTROLIFT_WORKSPACE"], "/workspace");
    assert_eq!(
        env["AGENT_CALLBACK_URL"],
        json!(format!("{CALLBACK_BASE}/callbacks/{task_id}"))
    );
    assert!(
        env["AGENT_PROMPT"]
            .as_str()
            .is_some_and(|p| p.contains("OPS-7"))
    );
    assert!(
        env["ASTROLIFT_TRIGGER_PAYLOAD"]
            .as_str()
            .is_some_and(|p| p.contains("OPS-7"))
    );
    let stale_key = env["ASTROLIFT_CLUSTER_KEY"]
        .as_str()
        .expect("a key")
        .to_owned();
    let listener = cli(
        &server,
        &["render", &dispatch_id, "--listener"],
        &[("ASTROLIFT_CONTROLLER_URL", CONTROLLER)],
    );
    assert_eq!(listener.code, 0, "{}", listener.stderr);
    assert!(
        !listener.stdout.contains("AGENT_SYSTEM="),
        "{}",
        listener.stdout
    );
    assert!(
        !listener.stdout.contains("AGENT_PROMPT="),
        "{}",
        listener.stdout
    );
    let listener_key = env_value(&listener.stdout, "ASTROLIFT_CLUSTER_KEY");
    assert_ne!(listener_key, stale_key, "each render mints a key");
    // The env lines read back exactly in a POSIX shell (prompts hold quotes and newlines).
    let lines = cli(
        &server,
        &["render", &dispatch_id],
        &[("ASTROLIFT_CONTROLLER_URL", CONTROLLER)],
    );
    assert_eq!(lines.code, 0, "{}", lines.stderr);
    assert!(
        !lines.stderr.contains("AGENT_CALLBACK_URL"),
        "{}",
        lines.stderr
    );
    let system = sourced(&server, &lines.stdout, "AGENT_SYSTEM");
    assert_eq!(json!(system), env["AGENT_SYSTEM"]);
    assert!(system.contains('\''), "the brief holds a quote: {system}");
    let key = sourced(&server, &lines.stdout, "ASTROLIFT_CLUSTER_KEY");
    assert_ne!(key, listener_key);
    let unknown = cli(
        &server,
        &["render", "d-nothing"],
        &[("ASTROLIFT_CONTROLLER_URL", CONTROLLER)],
    );
    assert_eq!(unknown.code, 2, "{}", unknown.stdout);
    let unset = cli(&server, &["render", &dispatch_id], &[]);
    assert_eq!(unset.code, 2, "{}", unset.stdout);
    assert!(
        unset.stderr.contains("ASTROLIFT_CONTROLLER_URL"),
        "{}",
        unset.stderr
    );

    // Callbacks: only the latest key; running, then one terminal report.
    let running = json!({"status": "running"});
    assert_eq!(
        callback(&server, &task_id, &stale_key, &running).await.0,
        401
    );
    assert_eq!(callback(&server, &task_id, &key, &running).await.0, 202);
    let done = json!({"status": "succeeded", "result": {"labels": ["p1"]}});
    let (status, body) = callback(&server, &task_id, &key, &done).await;
    assert_eq!(
        (status, &body["status"]),
        (200, &json!("succeeded")),
        "{body}"
    );
    assert_eq!(callback(&server, &task_id, &key, &done).await.0, 409);
    assert_eq!(callback(&server, "no-such-task", &key, &done).await.0, 404);
}

/// `$NAME` after `sh` sources `lines`.
fn sourced(server: &ServeProcess, lines: &str, name: &str) -> String {
    let file = server.home.path().join("task.env");
    std::fs::write(&file, lines).expect("writes");
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!(". \"$1\" && printf '%s' \"${name}\""))
        .arg("sh")
        .arg(&file)
        .output()
        .expect("sh runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).expect("utf-8")
}

/// The value of `NAME='…'` in `astrolift render`'s env lines.
fn env_value(lines: &str, name: &str) -> String {
    let prefix = format!("{name}='");
    lines
        .lines()
        .find_map(|line| line.strip_prefix(&prefix)?.strip_suffix('\''))
        .unwrap_or_else(|| panic!("{name} in {lines}"))
        .to_owned()
}

/// `astrolift dispatch emr-triage --tail`, its stdout lines arriving on a channel.
fn tail(server: &ServeProcess) -> (Child, Receiver<String>) {
    let mut child = command(
        server,
        &[
            "dispatch",
            "emr-triage",
            "--input",
            r#"{"mode":"triage","issue":"OPS-8"}"#,
            "--tail",
            "--timeout",
            "60",
        ],
        &[("ASTROLIFT_CALLBACK_BASE_URL", CALLBACK_BASE)],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("dispatch starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let (lines, received) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    (child, received)
}

fn next_line(lines: &Receiver<String>) -> Value {
    let line = lines
        .recv_timeout(Duration::from_secs(30))
        .expect("a line in time");
    serde_json::from_str(&line).unwrap_or_else(|_| panic!("JSON: {line}"))
}

fn wait(child: &mut Child) -> i32 {
    for _ in 0..300 {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code().unwrap_or(-1);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("dispatch --tail did not end");
}

#[tokio::test(flavor = "multi_thread")]
async fn dispatch_tail_ends_with_the_callback_status() {
    let (_github, server) = registered_serve().await;
    for (terminal, exit) in [("succeeded", 0), ("failed", 1)] {
        let (mut child, lines) = tail(&server);
        let dispatched = next_line(&lines);
        let dispatch_id = dispatched["dispatch_id"]
            .as_str()
            .expect("an id")
            .to_owned();
        let queued = next_line(&lines);
        assert_eq!(
            (&queued["status"], &queued["queue"]),
            (&json!("queued"), &json!("outbox")),
            "{queued}"
        );
        let outbox = queued["outbox"].as_str().expect("the outbox path");
        assert!(outbox.ends_with("state.db"), "inside the state: {outbox}");

        let rendered = render_json(&server, &dispatch_id);
        let task_id = rendered["task_id"].as_str().expect("a task").to_owned();
        let key = rendered["environment"]["ASTROLIFT_CLUSTER_KEY"]
            .as_str()
            .expect("a key")
            .to_owned();
        let running = json!({"status": "running"});
        assert_eq!(callback(&server, &task_id, &key, &running).await.0, 202);
        assert_eq!(next_line(&lines)["status"], "running");
        let report = json!({"status": terminal, "result": {"why": terminal}});
        assert_eq!(callback(&server, &task_id, &key, &report).await.0, 200);
        let last = next_line(&lines);
        assert_eq!(
            (&last["status"], &last["result"]["why"]),
            (&json!(terminal), &json!(terminal))
        );
        assert_eq!(wait(&mut child), exit, "{terminal}");
    }
}
