//! `astrolift check` and `astrolift validate` resolve catalogue and organization skills
//! through the App on `GITHUB_API_URL` when App credentials are configured (against the fake
//! GitHub), and without them report each reference as the warning `skill/unresolved`, with
//! the reason. `validate` reads the aliases and the catalogue only from a state store it is
//! given (`--state`), and a manifest's project from `--repo`'s registration or
//! `--project-id`.
//!
//! The repositories are the bot's and the manifest crate's remote-skill fixtures.

use std::path::{Path, PathBuf};
use std::process::Command;

use astrolift_fake_github::FakeGitHub;

use crate::support::{Run, json, run_of};

const AGENTS_SHA: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const RUNBOOKS_SHA: &str = "1111111111111111111111111111111111111111";
const CATALOGUE_SHA: &str = "2222222222222222222222222222222222222222";

/// `agents/triage` (local, catalogue and organization skills) and `agents/review`.
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bot/tests/it/fixtures/skills")
}

fn remote_skills(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../manifest/tests/remote_skills")
        .join(name)
}

/// `astrolift ARGS --state … --blobs …` in `dir`, without App credentials unless `github`
/// is given (then the fake's App id and key, on its URL).
fn astrolift(args: &[&str], dir: &Path, github: Option<&FakeGitHub>) -> Command {
    let mut command = bare(github);
    command
        .args(args)
        .arg(format!("--state=sqlite:{}", dir.join("state.db").display()))
        .arg(format!("--blobs=file:{}", dir.join("blobs").display()));
    command
}

/// `astrolift` without stores or App credentials, unless `github` is given (then the fake's
/// App id and key, on its URL).
fn bare(github: Option<&FakeGitHub>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_astrolift"));
    command.env_remove("RUST_LOG").env_remove("ASTROLIFT_STATE");
    for name in [
        "GITHUB_APP_ID",
        "GITHUB_APP_PRIVATE_KEY",
        "GITHUB_APP_PRIVATE_KEY_FILE",
        "GITHUB_APP_PRIVATE_KEY_SECRET_ID",
    ] {
        command.env_remove(name);
    }
    if let Some(github) = github {
        command
            .env("GITHUB_API_URL", github.base_url())
            .env("GITHUB_APP_ID", github.app_id().to_string())
            .env("GITHUB_APP_PRIVATE_KEY", github.private_key_pem());
    }
    command
}

/// Registers the alias `steadymd` for project `local` (what `check --apply` registers a
/// new repository under) and the catalogue.
fn register_sources(dir: &Path) {
    let alias = ["skill-repo", "register", "steadymd", "steadymd/runbooks"];
    let alias = [&alias[..], &["--project-id", "local"]].concat();
    let catalogue = ["catalogue", "register", "astrolift/catalogue"];
    for args in [&alias[..], &catalogue[..]] {
        let run = run_of(astrolift(args, dir, None).output().expect("runs"));
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
}

/// The fake GitHub serving the agent repository and both skill repositories.
async fn skill_github() -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_repo("octo", "agents", "main", AGENTS_SHA, checkout());
    let runbooks = remote_skills("runbooks");
    github.add_repo("steadymd", "runbooks", "main", RUNBOOKS_SHA, runbooks);
    github.install_repo(32, "steadymd", "runbooks");
    let catalogue = remote_skills("catalogue");
    github.add_repo("astrolift", "catalogue", "main", CATALOGUE_SHA, catalogue);
    github.install_repo(33, "astrolift", "catalogue");
    github
}

fn check_apply(dir: &Path, github: Option<&FakeGitHub>) -> Command {
    let repo = checkout();
    let repo = repo.to_str().expect("a UTF-8 path");
    let args = [
        "check",
        repo,
        "--apply",
        "--repo",
        "octo/agents",
        "--format",
        "json",
    ];
    astrolift(&args, dir, github)
}

fn codes_and_messages(run: &Run) -> Vec<(String, String)> {
    let report = json(&run.stdout);
    let diagnostics = report["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    diagnostics
        .iter()
        .map(|d| {
            let code = d["code"].as_str().unwrap_or_default().to_owned();
            (code, d["message"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

#[test]
fn without_app_credentials_each_remote_skill_is_an_unresolved_warning_with_the_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    register_sources(dir.path());
    let run = run_of(check_apply(dir.path(), None).output().expect("runs"));
    assert_eq!(run.code, 0, "warnings only: {}", run.stderr);
    let found = codes_and_messages(&run);
    assert_eq!(found.len(), 3, "{found:#?}");
    for (code, message) in &found {
        assert_eq!(code, "skill/unresolved");
        assert!(
            message.contains("no GitHub App credentials are configured"),
            "{message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_app_credentials_check_resolves_through_github_api_url() {
    let github = skill_github().await;
    let dir = tempfile::tempdir().expect("temp dir");
    register_sources(dir.path());
    let mut command = check_apply(dir.path(), Some(&github));
    let output = tokio::task::spawn_blocking(move || command.output().expect("runs"))
        .await
        .expect("joined");
    let run = run_of(output);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(codes_and_messages(&run), Vec::new());
    let report = json(&run.stdout);
    let statuses: Vec<&str> = report["plan"]
        .as_array()
        .map(|plan| plan.iter().filter_map(|e| e["status"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(statuses, ["added", "added"]);
    assert_eq!(github.tarball_downloads("steadymd", "runbooks"), 1);
    assert_eq!(github.tarball_downloads("astrolift", "catalogue"), 1);
}

/// `astrolift validate REPO --format json EXTRA…`, with App credentials only when `github`
/// is given; its state store only if `extra` names one.
fn validate(repo: &Path, extra: &[&str], github: Option<&FakeGitHub>) -> Command {
    let mut command = bare(github);
    let repo = repo.to_str().expect("a UTF-8 path");
    command
        .args(["validate", repo, "--format", "json"])
        .args(extra);
    command
}

/// Each diagnostic as `path:line:column [code] message`.
fn positioned(run: &Run) -> String {
    let report = json(&run.stdout);
    let diagnostics = report["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let lines: Vec<String> = diagnostics
        .iter()
        .map(|d| {
            format!(
                "{}:{}:{} [{}] {}",
                d["path"].as_str().unwrap_or_default(),
                d["line"],
                d["column"],
                d["code"].as_str().unwrap_or_default(),
                d["message"].as_str().unwrap_or_default()
            )
        })
        .collect();
    lines.join("\n")
}

async fn output_of(mut command: Command) -> Run {
    let output = tokio::task::spawn_blocking(move || command.output().expect("runs"))
        .await
        .expect("joined");
    run_of(output)
}

#[test]
fn validate_without_app_credentials_reports_each_remote_skill_unresolved_with_the_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = format!("--state=sqlite:{}", dir.path().join("state.db").display());
    let run = run_of(
        validate(&checkout(), &[&state], None)
            .output()
            .expect("runs"),
    );
    assert_eq!(run.code, 0, "warnings only: {}", run.stderr);
    insta::assert_snapshot!("validate_without_credentials", positioned(&run));
    // Nothing was looked up: the store was not even opened.
    assert!(!dir.path().join("state.db").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_with_app_credentials_and_no_state_store_says_the_sources_are_not_known() {
    let github = skill_github().await;
    let run = output_of(validate(&checkout(), &[], Some(&github))).await;
    assert_eq!(run.code, 0, "warnings only: {}", run.stderr);
    insta::assert_snapshot!("validate_without_state", positioned(&run));
    assert_eq!(github.tarball_downloads("steadymd", "runbooks"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_resolves_through_the_state_store_and_the_app_as_check_does() {
    let github = skill_github().await;
    let dir = tempfile::tempdir().expect("temp dir");
    register_sources(dir.path());
    let state = format!("--state=sqlite:{}", dir.path().join("state.db").display());
    // The project from --project-id: everything resolves.
    let args = [state.as_str(), "--project-id", "local"];
    let run = output_of(validate(&checkout(), &args, Some(&github))).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(positioned(&run), "");
    assert_eq!(github.tarball_downloads("steadymd", "runbooks"), 1);
    assert_eq!(github.tarball_downloads("astrolift", "catalogue"), 1);
    // No project: the catalogue skill resolves, the organization ones cannot.
    let run = output_of(validate(&checkout(), &[&state], Some(&github))).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("validate_without_project", positioned(&run));
    // The project of --repo's registration (what `check --apply` registered).
    let run = output_of(check_apply(dir.path(), Some(&github))).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let args = [state.as_str(), "--repo", "octo/agents"];
    let run = output_of(validate(&checkout(), &args, Some(&github))).await;
    assert_eq!(
        (run.code, positioned(&run)),
        (0, String::new()),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_reports_each_failing_reference_as_a_positioned_error() {
    let github = skill_github().await;
    let dir = tempfile::tempdir().expect("temp dir");
    register_sources(dir.path());
    let state = format!("--state=sqlite:{}", dir.path().join("state.db").display());
    let args = [state.as_str(), "--project-id", "local"];
    let agents = remote_skills("agents");
    let run = output_of(validate(&agents, &args, Some(&github))).await;
    assert_eq!(run.code, 1, "errors: {}", run.stderr);
    insta::assert_snapshot!("validate_failing_references", positioned(&run));
}
