//! Containment through a RELEASE build of `astrolift serve`: the
//! profile that ships, with its panic strategy. Each hostile trigger program
//! of `tests/containment` gets a small 4xx, then a benign request to the same
//! process gets 202; 50 concurrent slow-native evaluations are each answered
//! (422, or 503 with `Retry-After` past the cap), after which the process
//! has a bounded number of threads and workers and burns no CPU.
//!
//! The binary comes from `ASTROLIFT_RELEASE_BIN_DIR` (scripts/test.sh builds
//! it and sets `ASTROLIFT_REQUIRE_RELEASE_BINS=1`, so CI never skips these).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::containment_cases::{self as cases, cases, release_binary};
use crate::serve_process::{ServeProcess, ServeSetup, fake_github_with};

const TOKEN: &str = "containment-token";
/// The evaluation cap given to serve for the concurrency test.
const WORKERS: usize = 4;
/// A 4xx body and a log line carry at most this much.
const SMALL: usize = 4096;

fn body_of(case: &Value) -> Vec<u8> {
    cases::body(case).to_string().into_bytes()
}

/// Serve (release) with the containment agent applied; its trigger ids by name.
async fn serve(binary: &Path) -> (ServeProcess, serde_json::Map<String, Value>) {
    let github = fake_github_with(&[]).await;
    let workers = WORKERS.to_string();
    let server = ServeProcess::start_binary(
        binary,
        &github,
        ServeSetup {
            secret: "containment-webhook-secret",
            env: vec![
                ("ASTROLIFT_SECRET_HOOKS_CONTAINMENT", TOKEN),
                ("ASTROLIFT_JQ_WORKERS", &workers),
            ],
            register: false,
        },
    );
    let repo = cases::repo();
    let check = server.cli(&["check", "--apply", repo.to_str().expect("utf-8")]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    let list = server.cli(&["triggers", "list", "--format", "json"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let bindings: Vec<Value> = serde_json::from_str(&list.stdout).expect("json");
    let ids = bindings
        .iter()
        .map(|b| {
            (
                b["name"].as_str().expect("name").to_owned(),
                b["trigger_id"].clone(),
            )
        })
        .collect();
    (server, ids)
}

/// POSTs `body` to the trigger `name`: status, `Retry-After`, body text.
async fn post(
    server: &ServeProcess,
    ids: &serde_json::Map<String, Value>,
    name: &str,
    body: Vec<u8>,
    key: &str,
) -> (u16, Option<String>, String) {
    let id = ids[name].as_str().expect("a trigger id");
    post_to(&server.url, id, body, key).await
}

async fn post_to(url: &str, id: &str, body: Vec<u8>, key: &str) -> (u16, Option<String>, String) {
    let response = reqwest::Client::new()
        .post(format!("{url}/triggers/{id}"))
        .header("content-type", "application/json")
        .header("x-token", TOKEN)
        .header("idempotency-key", key)
        .body(body)
        .timeout(Duration::from_secs(60))
        .send()
        .await;
    let response = match response {
        Ok(response) => response,
        Err(error) => return (0, None, format!("no answer: {error:?}")),
    };
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (
        status,
        retry_after,
        response.text().await.unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn release_serve_answers_after_every_hostile_program() {
    let Some(binary) = release_binary("astrolift") else {
        return;
    };
    let (mut server, ids) = serve(&binary).await;
    let cases = cases();
    let benign = &cases["benign"];
    for (i, case) in cases["hostile"]
        .as_array()
        .expect("cases")
        .iter()
        .enumerate()
    {
        let name = case["trigger"].as_str().expect("trigger");
        let (status, _, text) = post(&server, &ids, name, body_of(case), &format!("h-{i}")).await;
        // `fromjson?` may swallow its own parse error (the release build's parser
        // reports the depth before the stack runs out): an empty payload, 202.
        let dispatched = case["may_dispatch"].as_bool() == Some(true) && status == 202;
        assert!(
            dispatched || (400..500).contains(&status),
            "{name}: {status} {text:.500}"
        );
        assert!(text.len() <= SMALL, "{name}: a {}-byte answer", text.len());
        let (status, _, text) =
            post(&server, &ids, "benign", body_of(benign), &format!("b-{i}")).await;
        assert_eq!(status, 202, "after {name}: {text}");
        assert!(server.is_running(), "serve ended after {name}");
    }
    let log = server.stop();
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    assert!(longest <= 2 * SMALL, "a {longest}-byte log line");
}

/// A trigger replay through a RELEASE `astrolift triggers replay` (docs/reference.md §3): the
/// benign binding's kept requests, replayed through each hostile program as the working
/// copy's version of that binding, are each a bounded `error` (or, for `fromjson?`, a changed
/// payload), never a crash; the output stays small, names no value, and serve keeps serving.
#[tokio::test(flavor = "multi_thread")]
async fn release_replay_reports_every_hostile_head_program() {
    let Some(binary) = release_binary("astrolift") else {
        return;
    };
    let (mut server, ids) = serve(&binary).await;
    let cases = cases();
    for n in 0..3 {
        let (status, _, text) = post(
            &server,
            &ids,
            "benign",
            body_of(&cases["benign"]),
            &format!("kept-{n}"),
        )
        .await;
        assert_eq!(status, 202, "{text}");
    }
    let benign_id = ids["benign"].as_str().expect("an id").to_owned();
    let manifest = std::fs::read_to_string(cases::repo().join("astrolift.toml")).expect("reads");
    for case in cases["hostile"].as_array().expect("cases") {
        let name = case["trigger"].as_str().expect("trigger");
        let head = tempfile::tempdir().expect("temp dir");
        crate::support::copy_tree(&cases::repo(), head.path());
        let swapped = manifest
            .replace("name = \"benign\"", "name = \"benign-before\"")
            .replace(&format!("name = \"{name}\""), "name = \"benign\"");
        std::fs::write(head.path().join("astrolift.toml"), swapped).expect("writes");
        let output = std::process::Command::new(&binary)
            .args(["triggers", "replay", &benign_id])
            .arg(head.path())
            .args(["--format", "json", "--state", &server.state_url()])
            .output()
            .expect("runs");
        let run = crate::support::run_of(output);
        assert!(
            run.code == 0 || run.code == 1,
            "{name}: {} {}",
            run.code,
            run.stderr
        );
        assert!(
            run.stdout.len() <= SMALL,
            "{name}: {} bytes",
            run.stdout.len()
        );
        let replay: Value = serde_json::from_str(&run.stdout).expect("json");
        let counts = &replay["counts"];
        let replayed = replay["replayed"].as_u64().expect("replayed");
        let skipped = replay["skipped"].as_u64().unwrap_or(0);
        assert_eq!(replayed + skipped, 3, "{name}: {replay}");
        let lost = counts["error"].as_u64().unwrap_or(0) + counts["changed"].as_u64().unwrap_or(0);
        assert_eq!(lost, replayed, "{name}: {replay}");
        assert!(server.is_running(), "serve ended after replaying {name}");
    }
    server.stop();
}

/// CPU time (user + system, clock ticks) of `pid`, of its reaped children,
/// and of its live children, from /proc; and the live children's count.
fn cpu_ticks(pid: u32) -> (u64, usize) {
    let fields = |pid: &str| -> Option<Vec<String>> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The fields after the command name, which is in parentheses.
        let rest = stat.rsplit_once(')')?.1;
        Some(rest.split_whitespace().map(str::to_owned).collect())
    };
    let ticks = |f: &[String], from: usize, to: usize| -> u64 {
        f[from..=to]
            .iter()
            .filter_map(|v| v.parse::<u64>().ok())
            .sum()
    };
    // After ")": state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    let own = fields(&pid.to_string()).expect("serve's stat");
    let mut total = ticks(&own, 11, 14);
    let mut children = 0;
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(f) = name.parse::<u32>().ok().and_then(|_| fields(&name))
            && f[1] == pid.to_string()
        {
            total += ticks(&f, 11, 12);
            children += 1;
        }
    }
    (total, children)
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count)
}

#[tokio::test(flavor = "multi_thread")]
async fn release_serve_caps_concurrent_slow_natives_and_releases_the_cpu() {
    let Some(binary) = release_binary("astrolift") else {
        return;
    };
    let (mut server, ids) = serve(&binary).await;
    let cases = cases();
    let slow = body_of(&cases["slow"]);
    let name = cases["slow"]["trigger"].as_str().expect("trigger");
    let id = ids[name].as_str().expect("a trigger id").to_owned();
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..50 {
        let (url, id, body) = (server.url.clone(), id.clone(), slow.clone());
        requests.spawn(async move { post_to(&url, &id, body, &format!("s-{i}")).await });
    }
    let answers = requests.join_all().await;
    let busy = answers
        .iter()
        .filter(|(status, _, _)| *status == 503)
        .count();
    for (status, retry_after, text) in &answers {
        let fine = match status {
            422 => text.contains("ran longer than"),
            503 => retry_after.as_deref() == Some("1"),
            _ => false,
        };
        if !fine {
            let log = server.stop();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            panic!(
                "{status}: {text}\nserve's log, last lines first:\n{}",
                tail.join("\n")
            );
        }
    }
    // More requests than slots were in flight at once: they really ran in parallel.
    assert!(busy > 0, "no request found every slot taken");
    assert!(busy < 50, "no request was evaluated");
    // Killed at their deadline: no worker burns CPU afterwards.
    let pid = server.pid();
    let (before, workers) = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(1));
    let (after, _) = cpu_ticks(pid);
    let ticks_per_second = 100;
    assert!(
        after - before < ticks_per_second / 5,
        "{} ticks of CPU in an idle second",
        after - before
    );
    assert!(workers <= WORKERS, "{workers} worker processes");
    let threads = threads(pid);
    assert!(threads <= 64, "{threads} threads");
    let (status, _, text) = post(&server, &ids, "benign", body_of(&cases["benign"]), "after").await;
    assert_eq!(status, 202, "{text}");
    assert!(server.is_running());
    server.stop();
}
