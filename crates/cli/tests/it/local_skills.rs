//! Local skill sources (docs/reference.md §5.1, "Remote skills"): `catalogue register
//! file:PATH` and `skill-repo register ALIAS file:PATH` name a directory, which `check` and
//! `validate` read as it is on disk, without App credentials. A plain directory pins no
//! commit; a Git checkout pins its `HEAD`. A path that is not a directory is refused at
//! registration. README.md step 1 (`scripts/demo.sh`) registers the examples' sources so,
//! and reports no `skill/unresolved`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Run, astrolift, json, run_of, stores_env};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The examples' skill repositories (tests/fake-github/skill-repos/README.md).
fn example_source(name: &str) -> PathBuf {
    repo_root().join("tests/fake-github/skill-repos").join(name)
}

fn example(name: &str) -> PathBuf {
    repo_root().join("examples").join(name)
}

/// `--state` and `--blobs` of the embedded stores in `dir`.
fn store_args(dir: &Path) -> [String; 2] {
    [
        format!("--state=sqlite:{}", dir.join("state.db").display()),
        format!("--blobs=file:{}", dir.join("blobs").display()),
    ]
}

/// `astrolift ARGS` on the stores in `dir`.
fn run_on(dir: &Path, args: &[&str]) -> Run {
    astrolift(
        args.iter()
            .copied()
            .map(str::to_owned)
            .chain(store_args(dir)),
    )
}

/// [`run_on`], asserting it succeeds.
fn run_ok(dir: &Path, args: &[&str]) -> Run {
    let run = run_on(dir, args);
    assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    run
}

fn file_source(path: &Path) -> String {
    format!("file:{}", path.display())
}

/// Registers `catalogue` as the catalogue and `runbooks` as the aliases `steadymd` and
/// `platform` of project `local` (what `check --apply` registers under).
fn register_sources(dir: &Path, catalogue: &Path, runbooks: &Path) {
    run_ok(dir, &["catalogue", "register", &file_source(catalogue)]);
    for alias in ["steadymd", "platform"] {
        let args = ["skill-repo", "register", alias, &file_source(runbooks)];
        run_ok(dir, &[&args[..], &["--project-id", "local"]].concat());
    }
}

/// `check --apply REPO --format json` on the stores in `dir`: its report.
fn check_apply(dir: &Path, repo: &Path) -> Value {
    let repo = repo.to_str().expect("a UTF-8 path");
    let run = run_ok(dir, &["check", "--apply", repo, "--format", "json"]);
    json(&run.stdout)
}

fn codes(report: &Value) -> Vec<String> {
    let diagnostics = report["diagnostics"].as_array().into_iter().flatten();
    let codes = diagnostics.filter_map(|d| d["code"].as_str());
    codes.map(str::to_owned).collect()
}

/// The stored snapshot of the first agent of the report's plan.
fn snapshot_of(dir: &Path, report: &Value) -> Value {
    let hash = report["plan"][0]["snapshot"].as_str().expect("a snapshot");
    let path = dir.join(format!("blobs/snapshots/sha256/{hash}.json"));
    let bytes = std::fs::read(&path).expect("the snapshot is stored");
    serde_json::from_slice(&bytes).expect("snapshot JSON")
}

/// The paths of the first agent's stored archive.
fn archive_paths(dir: &Path, report: &Value) -> Vec<String> {
    let digest = report["plan"][0]["digest"].as_str().expect("a digest");
    let hex = digest.trim_start_matches("sha256:");
    let path = dir.join(format!("blobs/packages/sha256/{hex}.tar.gz"));
    let file = std::fs::File::open(&path).expect("the archive is stored");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let entries = archive.entries().expect("a tar.gz");
    entries
        .map(|entry| {
            let entry = entry.expect("an entry");
            entry.path().expect("a path").display().to_string()
        })
        .collect()
}

/// The snapshot entry of the skill of `kind`.
fn skill<'s>(snapshot: &'s Value, kind: &str) -> &'s Value {
    let skills = snapshot["skills"].as_array().expect("skills");
    let found = skills.iter().find(|s| s["kind"] == kind);
    found.unwrap_or_else(|| panic!("no {kind} skill in {skills:#?}"))
}

#[test]
fn file_sources_resolve_every_skill_of_an_example_without_app_credentials() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runbooks = example_source("runbooks");
    register_sources(dir.path(), &example_source("catalogue"), &runbooks);
    let report = check_apply(dir.path(), &example("single-agent"));
    assert_eq!(codes(&report), Vec::<String>::new());
    assert_eq!(report["plan"][0]["status"], "added");
    let paths = archive_paths(dir.path(), &report);
    for packaged in [
        "skills/pr-review/SKILL.md",
        "skills/platform/runbooks/ci-triage/SKILL.md",
    ] {
        assert!(
            paths.iter().any(|p| p == packaged),
            "{packaged}: {paths:#?}"
        );
    }
    // The examples' sources are folders of this checkout, not checkouts: no commit.
    let snapshot = snapshot_of(dir.path(), &report);
    for kind in ["catalogue", "org"] {
        let entry = skill(&snapshot, kind);
        assert!(entry.get("commit").is_none(), "{entry}");
        assert!(entry["sha256"].is_string(), "{entry}");
    }
    // As stored, and listed as stored.
    let show = run_ok(dir.path(), &["catalogue", "show", "--format", "json"]);
    let canonical = example_source("catalogue").canonicalize().expect("exists");
    let expected = file_source(&canonical);
    assert_eq!(json(&show.stdout)["repository"], expected.as_str());
    let list = run_ok(dir.path(), &["skill-repo", "list", "--format", "json"]);
    let canonical = runbooks.canonicalize().expect("exists");
    let expected = file_source(&canonical);
    for repo in json(&list.stdout).as_array().expect("an array") {
        assert_eq!(repo["repository"], expected.as_str());
    }
}

#[test]
fn validate_reads_file_sources_from_the_state_store_it_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runbooks = example_source("runbooks");
    register_sources(dir.path(), &example_source("catalogue"), &runbooks);
    let [state, _] = store_args(dir.path());
    let repo = example("single-agent");
    let repo = repo.to_str().expect("a UTF-8 path");
    let args = ["validate", repo, "--format", "json", &state];
    let run = astrolift([&args[..], &["--project-id", "local"]].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let unresolved = codes(&json(&run.stdout));
    assert!(
        !unresolved.iter().any(|c| c == "skill/unresolved"),
        "{unresolved:?}"
    );
}

/// A catalogue holding `pr-review@1.2.0`, and an agent repository naming only it.
fn catalogue_and_agent(root: &Path) -> (PathBuf, PathBuf) {
    let catalogue = root.join("catalogue");
    let skill = catalogue.join("skills/pr-review/1.2.0");
    std::fs::create_dir_all(&skill).expect("mkdir");
    let text = "---\nname: pr-review\ndescription: Review a pull request.\n---\nRead the diff.\n";
    std::fs::write(skill.join("SKILL.md"), text).expect("write");
    let agent = root.join("agent");
    std::fs::create_dir_all(&agent).expect("mkdir");
    let manifest = r#"astrolift_version = 1
name = "reviewer"
skills = ["pr-review@1.2.0"]

[[workloads]]
name = "reviewer"
kind = "agent"

  [[workloads.containers]]
  name = "agent"
  is_primary = true
  image_ref = "ghcr.io/example/reviewer:1.0"
"#;
    std::fs::write(agent.join("astrolift.toml"), manifest).expect("write");
    (catalogue, agent)
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

#[test]
fn a_plain_directory_pins_no_commit_and_a_git_checkout_pins_its_head() {
    let root = tempfile::tempdir().expect("temp dir");
    let stores = tempfile::tempdir().expect("temp dir");
    let (catalogue, agent) = catalogue_and_agent(root.path());
    run_ok(
        stores.path(),
        &["catalogue", "register", &file_source(&catalogue)],
    );
    let plain = check_apply(stores.path(), &agent);
    assert_eq!(codes(&plain), Vec::<String>::new());
    let entry = skill(&snapshot_of(stores.path(), &plain), "catalogue").clone();
    assert!(entry.get("commit").is_none(), "{entry}");
    let sha256 = entry["sha256"].clone();

    if git(&catalogue, &["--version"]).is_none() {
        eprintln!("skipped: no `git` here");
        return;
    }
    let setup = [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-q", "-m", "catalogue"],
    ];
    for args in setup {
        assert!(git(&catalogue, args).is_some(), "git {args:?}");
    }
    let head = git(&catalogue, &["rev-parse", "HEAD"]).expect("a HEAD");
    let checkout = check_apply(stores.path(), &agent);
    assert_eq!(codes(&checkout), Vec::<String>::new());
    // The same files: only the pin moved (a new version of the agent).
    assert_eq!(checkout["plan"][0]["status"], "changed");
    let entry = skill(&snapshot_of(stores.path(), &checkout), "catalogue").clone();
    assert_eq!(entry["commit"], head.as_str(), "{entry}");
    assert_eq!(entry["sha256"], sha256);
}

#[test]
fn a_path_that_is_not_a_directory_is_refused_at_registration() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("SKILL.md");
    std::fs::write(&file, "not a directory").expect("write");
    let missing = dir.path().join("missing");
    for source in [
        file_source(&missing),
        file_source(&file),
        "file:".to_owned(),
    ] {
        let catalogue = ["catalogue", "register", source.as_str()];
        let alias = ["skill-repo", "register", "x", &source, "--project-id", "p"];
        for args in [&catalogue[..], &alias[..]] {
            let run = run_on(dir.path(), args);
            assert_eq!(run.code, 2, "{args:?}: {run:?}");
            assert!(run.stderr.contains("error:"), "{}", run.stderr);
        }
    }
    // Nothing was registered.
    let run = run_on(dir.path(), &["catalogue", "show"]);
    assert_eq!(run.code, 2, "{run:?}");
}

#[test]
fn a_relative_path_is_made_absolute_from_the_current_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("skills/catalogue")).expect("mkdir");
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .current_dir(dir.path())
        .args([
            "catalogue",
            "register",
            "file:skills/./catalogue",
            "--format",
            "json",
        ])
        .envs(stores_env(dir.path()))
        .output()
        .expect("runs");
    let run = run_of(output);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let canonical = dir
        .path()
        .join("skills/catalogue")
        .canonicalize()
        .expect("exists");
    let stored = json(&run.stdout)["repository"].clone();
    assert_eq!(stored, file_source(&canonical).as_str());
}

/// README.md step 1: `scripts/demo.sh`, with this build's `astrolift`, on stores of its own.
#[test]
fn the_demo_reports_no_unresolved_skill() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new("bash")
        .arg(repo_root().join("scripts/demo.sh"))
        .env("ASTROLIFT_BIN", env!("CARGO_BIN_EXE_astrolift"))
        .envs(stores_env(dir.path()))
        .env_remove("GITHUB_APP_ID")
        .env_remove("RUST_LOG")
        .output()
        .expect("bash runs");
    let run = run_of(output);
    assert_eq!(run.code, 0, "{run:?}");
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(!all.contains("skill/unresolved"), "{all}");
    for example in ["monorepo", "single-agent"] {
        let section = all
            .split(&format!("== examples/{example}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no {example} section: {all}"));
        let summary = section.lines().find(|l| l.contains(" errors, "));
        let summary = summary.unwrap_or_else(|| panic!("no summary: {section}"));
        assert!(summary.contains("0 errors, 0 warnings"), "{summary}");
    }
}
