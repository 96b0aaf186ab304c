//! `triggers list`, `trigger test` and `dispatch` on `examples/monorepo`,
//! with the embedded stores in a temp dir.

use std::path::{Path, PathBuf};
use std::process::Command;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::support::{Run, json, run_of, stores_env};

const HOOK_VARIABLE: &str = "ASTROLIFT_SECRET_AGENTS_JIRA_HOOK";
const HOOK_SECRET: &str = "cli-test-hook-secret";

fn monorepo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo")
}

/// Runs `astrolift` with the stores in `dir` and the hook secret set.
fn astrolift(args: &[&str], dir: &Path) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(args)
        .arg(format!("--state=sqlite:{}", dir.join("state.db").display()))
        .arg(format!("--blobs=file:{}", dir.join("blobs").display()))
        .env(HOOK_VARIABLE, HOOK_SECRET)
        .env_remove("GITHUB_WEBHOOK_SECRET")
        .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
        .env_remove("RUST_LOG")
        .output()
        .expect("the astrolift binary runs");
    run_of(output)
}

/// `trigger test` takes no store flags.
fn trigger_test(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(["trigger", "test"])
        .args(args)
        .env(HOOK_VARIABLE, HOOK_SECRET)
        .env_remove("GITHUB_WEBHOOK_SECRET")
        .env_remove("RUST_LOG")
        .output()
        .expect("the astrolift binary runs");
    run_of(output)
}

fn applied() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = monorepo();
    let state = format!("--state=sqlite:{}", dir.path().join("state.db").display());
    crate::support::define_triage_env_spec("local", "local/monorepo", &[&state]);
    let check = astrolift(
        &["check", "--apply", repo.to_str().expect("utf-8")],
        dir.path(),
    );
    assert_eq!(check.code, 0, "{}", check.stderr);
    dir
}

fn signature(body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(HOOK_SECRET.as_bytes()).expect("any key");
    mac.update(body);
    format!(
        "X-Signature: sha256={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

/// A Jira-shaped body in a file of `dir`.
fn body_file(dir: &Path, priority: &str, summary: &str) -> (PathBuf, Vec<u8>) {
    let body = serde_json::json!({
        "issue": {"key": "OPS-17", "fields": {"summary": summary, "priority": {"name": priority}}}
    })
    .to_string()
    .into_bytes();
    let path = dir.join(format!("{priority}.json"));
    std::fs::write(&path, &body).expect("writes");
    (path, body)
}

#[test]
fn triggers_list_shows_every_binding_with_its_path() {
    let dir = applied();
    let listed = astrolift(&["triggers", "list", "--format", "json"], dir.path());
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let rows = json(&listed.stdout);
    let rows = rows.as_array().expect("an array");
    let names: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["agent"].as_str().unwrap_or_default(),
                r["name"].as_str().unwrap_or_default(),
                r["source"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("emr-triage", "jira-high-priority", "generic"),
            ("emr-triage", "new-issue", "github")
        ]
    );
    for row in rows {
        let keys: Vec<&String> = row.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["trigger_id", "agent", "name", "source", "path"]);
        let id = row["trigger_id"].as_str().expect("an id");
        assert!(id.starts_with("trg_"), "{id}");
        assert_eq!(row["path"], format!("/triggers/{id}"));
    }
    let human = astrolift(&["triggers", "list"], dir.path());
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(human.stdout.contains("/triggers/trg_"), "{}", human.stdout);
    assert!(
        human.stdout.contains("2 trigger bindings"),
        "{}",
        human.stdout
    );
}

#[test]
fn trigger_test_prints_the_payload_and_environment_with_secrets_masked() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The summary is the secret itself: it must not be printed.
    let (path, body) = body_file(dir.path(), "High", HOOK_SECRET);
    let repo = monorepo();
    let out = trigger_test(&[
        "emr-triage",
        "jira-high-priority",
        "--body",
        path.to_str().expect("utf-8"),
        "--header",
        &signature(&body),
        repo.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains(HOOK_SECRET), "{}", out.stdout);
    assert!(!out.stderr.contains(HOOK_SECRET), "{}", out.stderr);
    for expected in [
        "verification: ok",
        "result: dispatched (202)",
        r#""issue": "OPS-17""#,
        "ASTROLIFT_TRIGGER_PAYLOAD={",
        "ASTROLIFT_CLUSTER_KEY=********",
        "ASTROLIFT_TASK_ID=",
        "AGENT_SYSTEM=",
        "AGENT_PROMPT=",
        "LOG_LEVEL=info",
    ] {
        assert!(out.stdout.contains(expected), "{expected}: {}", out.stdout);
    }
}

#[test]
fn trigger_test_exits_1_when_filtered_or_refused_and_2_on_usage() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = monorepo();
    let repo = repo.to_str().expect("utf-8");
    let (low, low_body) = body_file(dir.path(), "Low", "typo");
    let low = low.to_str().expect("utf-8");
    let forged = format!("X-Signature: sha256={}", "0".repeat(64));
    for (header, expected) in [
        (signature(&low_body), "filtered out"),
        (forged, "verification: failed"),
    ] {
        let out = trigger_test(&[
            "emr-triage",
            "jira-high-priority",
            "--body",
            low,
            "--header",
            &header,
            repo,
        ]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert!(out.stdout.contains(expected), "{}", out.stdout);
    }

    for args in [
        vec!["nobody", "jira-high-priority", "--body", low, repo],
        vec!["emr-triage", "no-such-trigger", "--body", low, repo],
        vec![
            "emr-triage",
            "jira-high-priority",
            "--body",
            "/does/not/exist",
            repo,
        ],
        vec![
            "emr-triage",
            "jira-high-priority",
            "--body",
            low,
            "--header",
            "no colon",
            repo,
        ],
    ] {
        let usage = trigger_test(&args);
        assert_eq!(usage.code, 2, "{args:?}: {}", usage.stderr);
    }
}

#[test]
fn dispatch_records_once_per_idempotency_key() {
    let dir = applied();
    let args = [
        "dispatch",
        "emr-triage",
        "--input",
        r#"{"mode":"triage","issue":"OPS-1"}"#,
        "--idempotency-key",
        "k-1",
    ];
    let first = astrolift(&args, dir.path());
    assert_eq!(first.code, 0, "{}", first.stderr);
    let first = json(&first.stdout);
    let keys: Vec<&String> = first.as_object().expect("an object").keys().collect();
    assert_eq!(
        keys,
        ["dispatch_id", "agent", "snapshot", "status", "duplicate"]
    );
    assert_eq!(first["agent"], "emr-triage");
    assert_eq!(first["status"], "queued");
    assert_eq!(first["duplicate"], false);
    let again = json(&astrolift(&args, dir.path()).stdout);
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["dispatch_id"], first["dispatch_id"]);

    let fresh = json(&astrolift(&["dispatch", "triage", "--input", "{}"], dir.path()).stdout);
    assert_eq!(fresh["duplicate"], false);
    assert_ne!(fresh["dispatch_id"], first["dispatch_id"]);

    // An env spec of the agent's project (`local`, defined by `applied`) runs;
    // a missing one or one of another project is refused.
    let with_spec = astrolift(
        &[
            "dispatch",
            "emr-triage",
            "--input",
            "{}",
            "--env-spec",
            "triage-prod",
        ],
        dir.path(),
    );
    assert_eq!(with_spec.code, 0, "{}", with_spec.stderr);
    assert_eq!(json(&with_spec.stdout)["env_spec"], "triage-prod");
    let other = astrolift(
        &[
            "env-spec",
            "upsert",
            "other-prod",
            "--agent-type",
            "claude",
            "--runtime",
            "claude-code",
            "--project-id",
            "proj-other",
            "--config-repo",
            "octo/config",
            "--manifest-path",
            "envs/other.toml",
        ],
        dir.path(),
    );
    assert_eq!(other.code, 0, "{}", other.stderr);
    for name in ["other-prod", "nowhere"] {
        let refused = astrolift(
            &[
                "dispatch",
                "emr-triage",
                "--input",
                "{}",
                "--env-spec",
                name,
            ],
            dir.path(),
        );
        assert_eq!(refused.code, 2, "{name}: {}", refused.stdout);
        assert!(
            refused
                .stderr
                .contains("is not an env spec of project local"),
            "{}",
            refused.stderr
        );
    }

    // The missing spec's suggestion runs as pasted (with the agent type and runtime
    // of the project's `triage-prod`), after which the dispatch goes through. A spec of
    // another project is not redefined (that would take it from its project).
    let with = |spec: &str| {
        let args = [
            "dispatch",
            "emr-triage",
            "--input",
            "{}",
            "--env-spec",
            spec,
        ];
        astrolift(&args, dir.path())
    };
    let suggestion = suggested_command(&with("no-such-spec").stderr);
    assert_eq!(
        suggestion,
        "astrolift env-spec upsert no-such-spec --project-id local --agent-type claude \
         --runtime claude-code"
    );
    run_pasted(&suggestion, dir.path());
    let now = with("no-such-spec");
    assert_eq!(now.code, 0, "{}", now.stderr);
    let other = with("other-prod").stderr;
    assert!(!other.contains("upsert other-prod"), "{other}");

    for bad in [
        vec!["dispatch", "emr-triage", "--input", "[1]"],
        vec!["dispatch", "emr-triage", "--input", "{not json"],
        vec!["dispatch", "nobody", "--input", "{}"],
        vec!["dispatch", "weekly-reporter", "--input", "{}"],
    ] {
        let refused = astrolift(&bad, dir.path());
        assert_eq!(refused.code, 2, "{bad:?}: {}", refused.stdout);
        assert!(!refused.stderr.is_empty(), "{bad:?}");
    }
}

/// `astrolift dispatch` with `ASTROLIFT_OUTBOX` set to `outbox` (unset when `None`).
fn dispatch_with_outbox(dir: &Path, key: &str, outbox: Option<&Path>) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_astrolift"));
    command
        .args([
            "dispatch",
            "emr-triage",
            "--input",
            "{}",
            "--idempotency-key",
            key,
        ])
        .arg(format!("--state=sqlite:{}", dir.join("state.db").display()))
        .arg(format!("--blobs=file:{}", dir.join("blobs").display()))
        .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
        .env_remove("ASTROLIFT_OUTBOX")
        .env_remove("RUST_LOG");
    if let Some(outbox) = outbox {
        command.env("ASTROLIFT_OUTBOX", outbox);
    }
    run_of(command.output().expect("the astrolift binary runs"))
}

/// Rows of `table` in the SQLite file at `path`.
fn rows(path: &Path, table: &str) -> i64 {
    let connection = rusqlite::Connection::open(path).expect("opens");
    connection
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |row| {
            row.get(0)
        })
        .expect("counts")
}

#[test]
fn an_outbox_file_beside_the_state_moves_inside_it() {
    let dir = applied();
    let beside = dir.path().join("outbox.db");
    // As a version before the outbox moved inside the state kept it: a file beside it.
    let earlier = dispatch_with_outbox(dir.path(), "k-earlier", Some(&beside));
    assert_eq!(earlier.code, 0, "{}", earlier.stderr);
    assert_eq!(rows(&beside, "outbox"), 1);
    let state = dir.path().join("state.db");
    assert_eq!(rows(&state, "dispatch_outbox"), 0);
    // Without ASTROLIFT_OUTBOX the outbox is the state's; the earlier message moves in.
    let now = dispatch_with_outbox(dir.path(), "k-now", None);
    assert_eq!(now.code, 0, "{}", now.stderr);
    assert_eq!(
        (rows(&beside, "outbox"), rows(&state, "dispatch_outbox")),
        (0, 2)
    );
}

/// The command a message suggests: the first `astrolift …` code span of `stderr`.
fn suggested_command(stderr: &str) -> String {
    stderr
        .split('`')
        .skip(1)
        .step_by(2)
        .find(|span| span.starts_with("astrolift "))
        .unwrap_or_else(|| panic!("no suggested command in {stderr}"))
        .to_owned()
}

/// Runs `command` as a user pasting it into `sh` would, with `astrolift` on the PATH
/// and the stores of `dir` in the environment; it must succeed.
fn run_pasted(command: &str, dir: &Path) {
    let bin = Path::new(env!("CARGO_BIN_EXE_astrolift"))
        .parent()
        .expect("the binary's folder");
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    let output = Command::new("sh")
        .args(["-c", command])
        .env("PATH", path)
        .envs(stores_env(dir))
        .env_remove("RUST_LOG")
        .output()
        .expect("sh runs");
    let run = run_of(output);
    assert_eq!(run.code, 0, "{command}: {}", run.stderr);
}

/// `text` with the values of a dispatch that change from run to run (ids, times, the
/// temporary directory) replaced by their names.
fn redacted(text: &str, shown: &serde_json::Value, dir: &Path) -> String {
    let mut text = text.replace(&dir.display().to_string(), "[DIR]");
    let created = shown["created_at"].as_i64().expect("created_at");
    let expires = shown["message"]["package"]["expires_at"].as_i64();
    for (value, name) in [
        (
            shown["dispatch_id"].as_str().map(str::to_owned),
            "[DISPATCH_ID]",
        ),
        (shown["task_id"].as_str().map(str::to_owned), "[TASK_ID]"),
        (expires.map(|e| e.to_string()), "[EXPIRES_AT]"),
        (Some(created.to_string()), "[CREATED_AT]"),
    ] {
        if let Some(value) = value {
            text = text.replace(&value, name);
        }
    }
    // The human form's `YYYY-MM-DDTHH:MM:SSZ`.
    text.lines()
        .map(|line| match line.find("20") {
            Some(at) if line[at..].len() >= 20 && line[at..at + 20].ends_with('Z') => {
                format!("{}[CREATED]{}", &line[..at], &line[at + 20..])
            }
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn dispatch_list_and_show_print_what_was_dispatched() {
    let dir = applied();
    let input = r#"{"mode":"triage","issue":"OPS-1"}"#;
    let first = astrolift(&["dispatch", "emr-triage", "--input", input], dir.path());
    assert_eq!(first.code, 0, "{}", first.stderr);
    let id = json(&first.stdout)["dispatch_id"]
        .as_str()
        .expect("an id")
        .to_owned();

    let show = astrolift(&["dispatch", "show", &id, "--format", "json"], dir.path());
    assert_eq!(show.code, 0, "{}", show.stderr);
    let shown = json(&show.stdout);
    assert_eq!(shown["dispatch_id"], id.as_str());
    assert_eq!(shown["status"], "queued");
    assert_eq!(shown["message"]["payload"]["issue"], "OPS-1");
    assert_eq!(shown["message"]["schema"], "astrolift.dispatch/v1");
    let human = astrolift(&["dispatch", "show", &id], dir.path());
    assert_eq!(human.code, 0, "{}", human.stderr);
    insta::assert_snapshot!(
        "dispatch_show_human",
        redacted(&human.stdout, &shown, dir.path())
    );

    let listed = astrolift(&["dispatch", "list", "--agent", "emr-triage"], dir.path());
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    insta::assert_snapshot!(
        "dispatch_list_human",
        redacted(&listed.stdout, &shown, dir.path())
    );
    let rows = json(&astrolift(&["dispatch", "list", "--format", "json"], dir.path()).stdout);
    let mut row = rows[0].clone();
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
    for (field, placeholder) in [
        ("dispatch_id", "[DISPATCH_ID]"),
        ("task_id", "[TASK_ID]"),
        ("created_at", "[CREATED_AT]"),
    ] {
        row[field] = serde_json::json!(placeholder);
    }
    insta::assert_json_snapshot!("dispatch_list_json", row);

    // A second dispatch comes first; --limit keeps the newest and says so.
    let second = astrolift(&["dispatch", "triage", "--input", "{}"], dir.path());
    assert_eq!(second.code, 0, "{}", second.stderr);
    let limited = astrolift(&["dispatch", "list", "--limit", "1"], dir.path());
    assert!(
        limited.stdout.ends_with("1 dispatch of 2 (--limit 1)\n"),
        "{}",
        limited.stdout
    );

    let unknown = astrolift(&["dispatch", "show", "d-nope"], dir.path());
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("no dispatch d-nope"),
        "{}",
        unknown.stderr
    );
}

/// A dispatch recorded without `ASTROLIFT_CALLBACK_BASE_URL` renders without
/// `AGENT_CALLBACK_URL`, and `render` says so and how to get one.
#[test]
fn render_says_when_the_callback_url_is_omitted() {
    let dir = applied();
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
            .args(args)
            .envs(stores_env(dir.path()))
            .env("ASTROLIFT_CONTROLLER_URL", "https://controller.example.com")
            .env_remove("ASTROLIFT_CALLBACK_BASE_URL")
            .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
            .env_remove("RUST_LOG")
            .output()
            .expect("the astrolift binary runs");
        run_of(output)
    };
    let dispatched = run(&["dispatch", "emr-triage", "--input", "{}"]);
    assert_eq!(dispatched.code, 0, "{}", dispatched.stderr);
    let id = json(&dispatched.stdout)["dispatch_id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let rendered = run(&["render", &id]);
    assert_eq!(rendered.code, 0, "{}", rendered.stderr);
    assert!(
        !rendered.stdout.contains("AGENT_CALLBACK_URL="),
        "{}",
        rendered.stdout
    );
    assert_eq!(
        rendered.stderr,
        format!(
            "warning: AGENT_CALLBACK_URL is omitted: dispatch {id} was recorded without a \
             callback route (ASTROLIFT_CALLBACK_BASE_URL was unset), so the runtime cannot \
             report back. Set ASTROLIFT_CALLBACK_BASE_URL to serve's base URL (for example \
             http://127.0.0.1:3000) and dispatch again\n"
        )
    );
}
