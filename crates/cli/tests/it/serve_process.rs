//! A real `astrolift serve` for the abuse and sentinel-secret tests:
//! any environment, its stdout and stderr kept for inspection, its embedded
//! stores in a temp dir the test can read afterwards.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use astrolift_fake_github::{FakeCheckRun, FakeGitHub};
use astrolift_forge::webhook::sign;
use serde_json::{Value, json};

use crate::support::{astrolift, read_serve_url};

pub const INSTALLATION: u64 = 77;

/// A running `astrolift serve`, killed on drop.
pub struct ServeProcess {
    child: Child,
    pub url: String,
    pub home: tempfile::TempDir,
    output: Arc<Mutex<Vec<u8>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How to start serve: the webhook secret, more variables, and whether to
/// register `octo/agents` (ref `main`) first.
pub struct ServeSetup<'a> {
    pub secret: &'a str,
    pub env: Vec<(&'a str, &'a str)>,
    pub register: bool,
}

impl ServeProcess {
    /// The serve process's id (to read its `/proc` status).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn state_url(&self) -> String {
        format!("sqlite:{}", self.home.path().join("state.db").display())
    }

    pub fn blobs_url(&self) -> String {
        format!("file:{}", self.home.path().join("blobs").display())
    }

    pub fn start(github: &FakeGitHub, setup: ServeSetup<'_>) -> Self {
        Self::start_binary(Path::new(env!("CARGO_BIN_EXE_astrolift")), github, setup)
    }

    /// [`ServeProcess::start`] on the profile that ships when scripts/test.sh built it
    /// (`ASTROLIFT_RELEASE_BIN_DIR`), else on this test's own debug build; with the
    /// profile's name.
    pub fn start_shipped(github: &FakeGitHub, setup: ServeSetup<'_>) -> (Self, &'static str) {
        match std::env::var_os("ASTROLIFT_RELEASE_BIN_DIR") {
            Some(dir) => {
                let binary = Path::new(&dir).join("astrolift");
                (Self::start_binary(&binary, github, setup), "release")
            }
            None => (Self::start(github, setup), "debug"),
        }
    }

    /// [`ServeProcess::start`] with another `astrolift` binary (a release build).
    pub fn start_binary(binary: &Path, github: &FakeGitHub, setup: ServeSetup<'_>) -> Self {
        let home = tempfile::tempdir().expect("temp dir");
        Self::start_in(binary, home, github, setup)
    }

    /// Stops this serve (if it still runs) and starts another on the same stores, with
    /// `env`; what the first wrote is kept, before the second's output.
    pub fn restart(mut self, github: &FakeGitHub, secret: &str, env: Vec<(&str, &str)>) -> Self {
        let earlier = self.stop();
        let home = std::mem::replace(&mut self.home, tempfile::tempdir().expect("temp dir"));
        let setup = ServeSetup {
            secret,
            env,
            register: false,
        };
        let binary = Path::new(env!("CARGO_BIN_EXE_astrolift"));
        let next = Self::start_in(binary, home, github, setup);
        next.output
            .lock()
            .expect("output")
            .splice(0..0, earlier.into_bytes());
        next
    }

    /// Sends SIGTERM (what a service manager sends to stop it).
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// Waits up to `timeout` for serve to exit on its own; its exit status.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// What serve wrote on stdout and stderr so far.
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().expect("output")).into_owned()
    }

    fn start_in(
        binary: &Path,
        home: tempfile::TempDir,
        github: &FakeGitHub,
        setup: ServeSetup<'_>,
    ) -> Self {
        let state = format!("sqlite:{}", home.path().join("state.db").display());
        let blobs = format!("file:{}", home.path().join("blobs").display());
        if setup.register {
            let run = astrolift([
                "register-repo",
                "octo/agents",
                "--project-id",
                "proj-issue9",
                "--ref",
                "main",
                "--state",
                &state,
                "--blobs",
                &blobs,
            ]);
            assert_eq!(run.code, 0, "{}", run.stderr);
            let store_args = ["--state", &state, "--blobs", &blobs];
            crate::support::define_triage_env_spec("proj-issue9", "octo/agents", &store_args);
            crate::support::register_example_skill_sources("proj-issue9", &store_args);
        }
        let mut command = Command::new(binary);
        command
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--state",
                &state,
                "--blobs",
                &blobs,
            ])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GITHUB_API_URL", github.base_url())
            .env("GITHUB_APP_ID", github.app_id().to_string())
            .env("GITHUB_APP_PRIVATE_KEY", github.private_key_pem())
            .env("GITHUB_WEBHOOK_SECRET", setup.secret)
            .env("ASTROLIFT_LOG_LEVEL", "info")
            .env("ASTROLIFT_SECRETS", "env")
            .envs(setup.env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("serve starts");
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let (line, url) = read_serve_url(&mut stdout);
        output
            .lock()
            .expect("output")
            .extend_from_slice(line.as_bytes());
        let stderr = child.stderr.take().expect("piped stderr");
        let readers = vec![
            keep(stdout, Arc::clone(&output)),
            keep(stderr, Arc::clone(&output)),
        ];
        Self {
            child,
            url,
            home,
            output,
            readers,
        }
    }

    /// Runs `astrolift ARGS --state … --blobs …` on serve's stores.
    pub fn cli(&self, args: &[&str]) -> crate::support::Run {
        let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        all.extend([
            "--state".into(),
            self.state_url(),
            "--blobs".into(),
            self.blobs_url(),
        ]);
        astrolift(all)
    }

    /// Whether serve is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops serve and returns everything it wrote on stdout and stderr.
    pub fn stop(&mut self) -> String {
        let _ = self.child.kill();
        self.collect()
    }

    /// Sends serve SIGTERM, waits for it to exit, and returns its exit status and
    /// everything it wrote.
    pub fn terminate_and_wait(&mut self) -> (std::process::ExitStatus, String) {
        self.terminate();
        let status = self.child.wait().expect("serve exits");
        (status, self.collect())
    }

    fn collect(&mut self) -> String {
        let _ = self.child.wait();
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        String::from_utf8_lossy(&self.output.lock().expect("output")).into_owned()
    }

    /// The stores' files: the SQLite database (and its journal) and every blob.
    pub fn stored_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        collect_files(self.home.path(), &mut files);
        files
    }

    /// POSTs `body` to `path` with `headers`: the status and the JSON answer (`null` when
    /// it is not JSON).
    pub async fn post(&self, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> (u16, Value) {
        let mut request = reqwest::Client::new().post(format!("{}{path}", self.url));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.body(body).send().await.expect("serve answers");
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// POSTs `body` to `/github/webhook` as delivery `delivery` of `event`, signed with `secret`.
    pub async fn deliver(
        &self,
        event: &str,
        delivery: &str,
        body: Vec<u8>,
        secret: &str,
    ) -> (u16, Value) {
        let signature = sign(&body, secret);
        let headers = [
            ("content-type", "application/json"),
            ("x-github-event", event),
            ("x-github-delivery", delivery),
            ("x-hub-signature-256", signature.as_str()),
        ];
        self.post("/github/webhook", &headers, body).await
    }

    /// Delivers a push of `sha` to `branch` through `installation`, signed with `secret`.
    pub async fn push(
        &self,
        delivery: &str,
        (branch, sha): (&str, &str),
        installation: u64,
        secret: &str,
    ) -> (u16, Value) {
        let body = push_event(branch, sha, installation);
        self.deliver("push", delivery, body, secret).await
    }

    pub async fn healthz(&self) -> u16 {
        reqwest::get(format!("{}/healthz", self.url))
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    }
}

/// Copies a child's output into `output` until it closes.
fn keep(
    mut from: impl std::io::Read + Send + 'static,
    output: Arc<Mutex<Vec<u8>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        while let Ok(n) = from.read(&mut buffer) {
            if n == 0 {
                break;
            }
            if let Ok(mut output) = output.lock() {
                output.extend_from_slice(&buffer[..n]);
            }
        }
    })
}

fn collect_files(dir: &Path, files: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, files);
        } else if let Ok(bytes) = std::fs::read(&path) {
            files.push((path, bytes));
        }
    }
}

/// The repository's examples directory `name`.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// A fake GitHub with installation 77 and `octo/agents` at `refs` (ref, sha).
pub async fn fake_github_with(refs: &[(&str, &str)]) -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub starts");
    github.add_installation(INSTALLATION);
    for (git_ref, sha) in refs {
        github.add_repo("octo", "agents", git_ref, sha, example("monorepo"));
    }
    github.add_example_skill_repos();
    github
}

/// A push of `sha` to `branch` of `octo/agents` through `installation`.
pub fn push_event(branch: &str, sha: &str, installation: u64) -> Vec<u8> {
    let body = json!({
        "ref": format!("refs/heads/{branch}"), "before": "0".repeat(40), "after": sha,
        "deleted": false, "forced": false, "created": false,
        "head_commit": { "id": sha, "timestamp": "2026-11-29T10:00:00Z", "message": "m" },
        "repository": { "id": 4001, "full_name": "octo/agents", "default_branch": "main",
                        "fork": false, "private": true, "name": "agents",
                        "owner": { "login": "octo", "id": 1 } },
        "installation": { "id": installation },
        "sender": { "login": "dev", "id": 5 },
    });
    serde_json::to_vec(&body).expect("json")
}

/// Check runs on `sha`, once at least `count` exist and all are completed.
pub async fn completed_runs(github: &FakeGitHub, sha: &str, count: usize) -> Vec<FakeCheckRun> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let runs: Vec<FakeCheckRun> = github
            .check_runs()
            .into_iter()
            .filter(|r| r.head_sha == sha)
            .collect();
        if runs.len() >= count && runs.iter().all(|r| r.status == "completed") {
            return runs;
        }
        assert!(Instant::now() < deadline, "check runs on {sha}: {runs:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
