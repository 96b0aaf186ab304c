//! Hostile input (SECURITY.md, "The run side, the importers and least privilege"),
//! through a RELEASE build of `astrolift`: the profile that ships, with its panic
//! strategy. Each case holds:
//!
//! - reserved runtime variables in `[secrets]` never reach a render, in either format or mode;
//! - `import` never writes through a symbolic link inside `--out`;
//! - a stage result deeper than the callback's bound is 422, and the retry advances the run;
//! - 131,000 `needs` and 5,000 same-titled nodes take linear work;
//! - an archive of long paths and an export of millions of values stay under 256 MiB.
//!
//! Work is bounded by a watchdog ten times the one-second target, loose enough for any
//! runner; memory by the process's own peak (`VmHWM`, written
//! through `ASTROLIFT_PEAK_MEMORY_FILE`).
//!
//! The binary comes from `ASTROLIFT_RELEASE_BIN_DIR` (scripts/test.sh builds it and sets
//! `ASTROLIFT_REQUIRE_RELEASE_BINS=1`, so CI never skips these).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::containment_cases::release_binary;
use crate::serve_process::{ServeProcess, ServeSetup, fake_github_with};
use crate::support::{Run, fixture};

/// What a linear-work case may take at most: ten times the one-second target.
const WATCHDOG: Duration = Duration::from_secs(10);
/// The memory bound of every import input (docs/import.md).
const PEAK_BOUND: u64 = 256 * 1024 * 1024;
const CONTROLLER: &str = "https://controller.example.com";
const CALLBACK_BASE: &str = "https://astrolift.example.com";
const RESERVED: &[&str] = astrolift_manifest::RESERVED_ENV;

/// One run of the release binary: what it printed, how long it took, its peak memory.
struct Measured {
    run: Run,
    elapsed: Duration,
    peak: u64,
}

/// Runs `binary ARGS` with `env`, killed past `WATCHDOG` (which fails the test).
fn run_release(binary: &Path, args: &[&str], env: &[(&str, &str)]) -> Measured {
    let peak_file = tempfile::NamedTempFile::new().expect("a temp file");
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
        .env("ASTROLIFT_PEAK_MEMORY_FILE", peak_file.path())
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the release binary runs");
    // Drain the pipes while waiting: a large report must not block the child.
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`astrolift {}` ran past {WATCHDOG:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let run = Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().expect("stdout"),
        stderr: err.join().expect("stderr"),
    };
    let peak = std::fs::read_to_string(peak_file.path())
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak memory written: {}", run.stderr));
    Measured { run, elapsed, peak }
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

// ----- reserved names in [secrets] -----

#[test]
fn reserved_secret_names_never_reach_a_render() {
    let Some(binary) = release_binary("astrolift") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let stores = [
        format!("--state=sqlite:{}", dir.path().join("state.db").display()),
        format!("--blobs=file:{}", dir.path().join("blobs").display()),
    ];
    let with_stores = |args: &[&str]| -> Vec<String> {
        args.iter()
            .map(|a| (*a).to_owned())
            .chain(stores.iter().cloned())
            .collect()
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_release(&binary, &args, &[("ASTROLIFT_CONTROLLER_URL", CONTROLLER)]).run
    };
    let repo = fixture("reserved-secrets");
    let validated = run(vec![
        "validate".into(),
        utf8(&repo).into(),
        "--format".into(),
        "json".into(),
    ]);
    let report: Value = serde_json::from_str(&validated.stdout).expect("json");
    let refused = report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["code"] == "manifest/reserved-env")
        .count();
    assert_eq!(refused, RESERVED.len(), "{report}");

    let check = run(with_stores(&["check", "--apply", utf8(&repo)]));
    assert_eq!(check.code, 0, "{}", check.stderr);
    // Without a callback route, so nothing the dispatcher sets hides a manifest value.
    let dispatched = run(with_stores(&["dispatch", "sneaky", "--input", "{}"]));
    assert_eq!(dispatched.code, 0, "{}", dispatched.stderr);
    let dispatch: Value = serde_json::from_str(&dispatched.stdout).expect("json");
    let id = dispatch["dispatch_id"].as_str().expect("an id");
    for (format, listener) in [
        ("env", false),
        ("env", true),
        ("json", false),
        ("json", true),
    ] {
        let mut args = vec!["render", id, "--format", format];
        if listener {
            args.push("--listener");
        }
        let rendered = run(with_stores(&args));
        assert_eq!(rendered.code, 0, "{}", rendered.stderr);
        assert!(
            !rendered.stdout.contains("secret://agents/evil-"),
            "{format} listener={listener}:\n{}",
            rendered.stdout
        );
        if format == "json" {
            let rendered: Value = serde_json::from_str(&rendered.stdout).expect("json");
            assert_eq!(
                rendered["secrets"],
                json!({"API_TOKEN": "secret://agents/api-token"})
            );
        } else {
            assert!(
                rendered
                    .stdout
                    .contains("API_TOKEN='secret://agents/api-token'")
            );
        }
    }
}

// ----- import never writes outside --out -----

#[test]
fn import_never_writes_through_a_link_inside_out() {
    let Some(binary) = release_binary("astrolift") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let elsewhere = dir.path().join("elsewhere");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, out.join("brief")).expect("a link");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures/agents_md/single/AGENTS.md");
    let import = |force: bool| {
        let mut args = vec![
            "import",
            "--from",
            "agents_md",
            utf8(&source),
            "--out",
            utf8(&out),
        ];
        if force {
            args.push("--force");
        }
        run_release(&binary, &args, &[]).run
    };
    let refused = import(false);
    assert_eq!(refused.code, 2, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("symbolic link"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("nothing was written"));
    assert_eq!(std::fs::read_dir(&elsewhere).expect("dir").count(), 0);

    let forced = import(true);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(std::fs::read_dir(&elsewhere).expect("dir").count(), 0);
    let brief = std::fs::symlink_metadata(out.join("brief")).expect("brief");
    assert!(brief.is_dir(), "the link was replaced by a directory");
    assert!(out.join("brief/README.md").is_file());
}

// ----- a deep stage result -----

fn nested(depth: usize) -> Value {
    (0..depth).fold(json!("leaf"), |value, _| json!([value]))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deep_result_is_refused_and_the_retry_advances_the_run() {
    let Some(binary) = release_binary("astrolift") else {
        return;
    };
    let github = fake_github_with(&[]).await;
    let server = ServeProcess::start_binary(
        &binary,
        &github,
        ServeSetup {
            secret: "hostile-webhook-secret",
            env: vec![],
            register: false,
        },
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = crate::workflows::repository(dir.path(), crate::workflows::FLOW);
    let stores = [
        "--state".to_owned(),
        server.state_url(),
        "--blobs".to_owned(),
        server.blobs_url(),
    ];
    let cli = |args: &[&str]| {
        let all: Vec<&str> = args
            .iter()
            .copied()
            .chain(stores.iter().map(String::as_str))
            .collect();
        let env = [
            ("ASTROLIFT_CONTROLLER_URL", CONTROLLER),
            ("ASTROLIFT_CALLBACK_BASE_URL", CALLBACK_BASE),
        ];
        run_release(&binary, &all, &env).run
    };
    let store_args: Vec<&str> = stores.iter().map(String::as_str).collect();
    crate::support::define_triage_env_spec("local", "local/repo", &store_args);
    let check = cli(&["check", "--apply", &repo]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    let started = cli(&[
        "dispatch",
        "--workflow",
        "triage",
        "--input",
        r#"{"issue":"OPS-1"}"#,
    ]);
    assert_eq!(started.code, 0, "{}", started.stderr);
    let started: Value = serde_json::from_str(&started.stdout).expect("json");
    let run_id = started["run_id"].as_str().expect("a run id").to_owned();
    let dispatch_id = started["dispatched"][0]["dispatch_id"]
        .as_str()
        .expect("collect's dispatch")
        .to_owned();
    let rendered = cli(&["render", &dispatch_id, "--format", "json"]);
    assert_eq!(rendered.code, 0, "{}", rendered.stderr);
    let rendered: Value = serde_json::from_str(&rendered.stdout).expect("json");
    let env = &rendered["environment"];
    let task = env["ASTROLIFT_TASK_ID"].as_str().expect("a task");
    let key = env["ASTROLIFT_CLUSTER_KEY"].as_str().expect("a key");
    let bearer = format!("Bearer {key}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    let path = format!("/callbacks/{task}");
    // `{summary: …}`: the report stage's payload reads `.stages.collect.result.summary`.
    let report = |depth: usize| {
        json!({"status": "succeeded", "result": {"summary": nested(depth - 1)}})
            .to_string()
            .into_bytes()
    };
    let (status, body) = server.post(&path, &headers, report(126)).await;
    assert_eq!(status, 422, "{body}");
    let shown = cli(&["workflow-run", "show", &run_id]);
    let shown: Value = serde_json::from_str(&shown.stdout).expect("json");
    assert_eq!(shown["status"], "running", "{shown}");
    assert_eq!(shown["stages"]["report"]["status"], "waiting");

    // The runtime's retry, with a result at the bound: recorded, and the run advances.
    let (status, body) = server.post(&path, &headers, report(100)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["workflow_run"], json!(run_id));
    let shown = cli(&["workflow-run", "show", &run_id]);
    let shown: Value = serde_json::from_str(&shown.stdout).expect("json");
    assert_eq!(shown["stages"]["collect"]["status"], "succeeded", "{shown}");
    assert_eq!(shown["stages"]["report"]["status"], "dispatched");
}

// ----- linear work on tenant-sized lists -----

/// Base-36 names, shortest first: 131,000 of them fit a 1 MiB manifest.
fn short_name(mut n: usize) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut name = vec![b'n'];
    loop {
        name.push(DIGITS[n % 36]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    String::from_utf8(name).expect("ascii")
}

#[test]
fn a_stage_with_131000_needs_validates_in_linear_time() {
    let Some(binary) = release_binary("astrolift") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("workflows")).expect("mkdir");
    let needs: Vec<String> = (0..131_000)
        .map(|n| format!("\"{}\"", short_name(n)))
        .collect();
    let flow = format!(
        "schema = \"astrolift.workflow/v1\"\nname = \"wide\"\n\n[[stages]]\nname = \"s\"\nagent = \"a\"\nneeds = [{}]\n",
        needs.join(",")
    );
    let limit = astrolift_manifest::Limits::DEFAULT.manifest_file;
    assert!(flow.len() as u64 <= limit, "{} bytes", flow.len());
    std::fs::write(dir.path().join("workflows/wide.toml"), flow).expect("writes");
    let measured = run_release(
        &binary,
        &["validate", utf8(dir.path()), "--format", "json"],
        &[],
    );
    eprintln!("131,000 needs: {:?}", measured.elapsed);
    assert_eq!(measured.run.code, 1, "{}", measured.run.stderr);
    let report: Value = serde_json::from_str(&measured.run.stdout).expect("json");
    let unknown = report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["code"] == "workflow/unknown-need")
        .count();
    assert_eq!(unknown, 131_000);
}

/// A Langflow export of `count` agent nodes, every one titled alike.
fn same_titled_agents(count: usize) -> Vec<u8> {
    let nodes: Vec<Value> = (0..count)
        .map(|i| {
            let id = format!("Agent-{i}");
            json!({"id": id, "data": {"id": id, "type": "Agent", "node": {
                "display_name": "Helper",
                "template": {"system_prompt": {"value": "You help."}},
            }}})
        })
        .collect();
    serde_json::to_vec(&json!({"name": "many", "data": {"nodes": nodes, "edges": []}}))
        .expect("json")
}

#[test]
fn five_thousand_same_titled_agents_import_in_linear_time() {
    let Some(binary) = release_binary("astrolift") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("many.json");
    std::fs::write(&source, same_titled_agents(5_000)).expect("writes");
    let out = dir.path().join("out");
    let measured = run_release(
        &binary,
        &[
            "import",
            "--from",
            "langflow",
            utf8(&source),
            "--out",
            utf8(&out),
            "--format",
            "json",
        ],
        &[],
    );
    eprintln!("5,000 same-titled agents: {:?}", measured.elapsed);
    assert_eq!(measured.run.code, 0, "{}", measured.run.stderr);
    assert!(out.join("agents/helper/astrolift.toml").is_file());
    assert!(out.join("agents/helper-5000/astrolift.toml").is_file());
}

// ----- bounded memory in import -----

/// A gzip'd tar of `count` empty files whose paths are `path_len` bytes long.
fn long_path_archive(path: &Path, count: usize, path_len: usize) {
    let file = std::fs::File::create(path).expect("creates");
    let gzip = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    let mut tar = tar::Builder::new(gzip);
    let stem = "d".repeat(200);
    for i in 0..count {
        let mut name = String::with_capacity(path_len);
        while name.len() + stem.len() + 1 < path_len - 12 {
            name.push_str(&stem);
            name.push('/');
        }
        name.push_str(&format!("{i:0>width$}", width = path_len - name.len()));
        let mut header = tar::Header::new_gnu();
        header.set_size(0);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, &name, std::io::empty())
            .expect("appends");
    }
    tar.into_inner()
        .expect("tar")
        .finish()
        .expect("gzip")
        .flush()
        .expect("flush");
}

/// A Langflow-shaped export padded with `count` one-character strings.
fn export_of_many_values(path: &Path, count: usize) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("creates"));
    file.write_all(br#"{"data":{"nodes":[],"edges":[]},"padding":["#)
        .expect("writes");
    for i in 0..count {
        file.write_all(if i == 0 { b"\"a\"" } else { b",\"a\"" })
            .expect("writes");
    }
    file.write_all(b"]}").expect("writes");
    file.flush().expect("flush");
}

fn assert_refused_within_bound(binary: &Path, from: &str, source: &Path, what: &str) -> u64 {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let measured = run_release(
        binary,
        &["import", "--from", from, utf8(source), "--out", utf8(&out)],
        &[],
    );
    eprintln!(
        "{what}: peak {} MiB in {:?}",
        measured.peak / (1024 * 1024),
        measured.elapsed
    );
    assert_eq!(measured.run.code, 2, "{}", measured.run.stderr);
    assert!(!out.exists(), "nothing was written");
    assert!(
        measured.peak < PEAK_BOUND,
        "{what}: peak {} bytes, over {PEAK_BOUND}",
        measured.peak
    );
    measured.peak
}

#[test]
fn an_archive_of_long_paths_is_refused_within_the_memory_bound() {
    let Some(binary) = release_binary("astrolift") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let archive: PathBuf = dir.path().join("long-paths.tar.gz");
    // 80,000 paths of 4,000 bytes: 320 MB of paths, which the file list must not hold whole.
    long_path_archive(&archive, 80_000, 4_000);
    assert_refused_within_bound(&binary, "astrolift_package", &archive, "80,000 long paths");
}

#[test]
fn an_export_of_millions_of_values_is_refused_within_the_memory_bound() {
    let Some(binary) = release_binary("astrolift") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let export = dir.path().join("many-values.json");
    // 8,000,000 one-character strings: 32 MB, within the 32 MiB source limit.
    export_of_many_values(&export, 8_000_000);
    let size = std::fs::metadata(&export).expect("size").len();
    assert!(size <= 32 * 1024 * 1024, "{size} bytes");
    assert_refused_within_bound(&binary, "langflow", &export, "8,000,000 values");
}
