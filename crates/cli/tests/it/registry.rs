//! The main job and the state commands, on the embedded stores in a temp dir:
//! `check`, `check --apply` twice, `agents list`, `history`, `teardown`,
//! `register-repo`, `env-spec upsert`, `skill-repo`, `catalogue`, and `package`.

use std::path::{Path, PathBuf};

use crate::support::{astrolift, json};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// `--state`/`--blobs` flags pointing into `dir`.
fn stores(dir: &Path) -> Vec<String> {
    vec![
        format!("--state=sqlite:{}", dir.join("state.db").display()),
        format!("--blobs=file:{}", dir.join("blobs").display()),
    ]
}

fn run(args: &[&str], dir: &Path) -> crate::support::Run {
    let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    all.extend(stores(dir));
    astrolift(all)
}

fn plan_statuses(stdout: &str) -> Vec<(String, String)> {
    let report = json(stdout);
    report["plan"]
        .as_array()
        .expect("plan array")
        .iter()
        .map(|e| {
            (
                e["agent"].as_str().unwrap_or_default().to_owned(),
                e["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn check_apply_twice_registers_then_shows_unchanged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let monorepo = example("monorepo");
    let repo = monorepo.to_str().expect("utf-8 path");
    let checked = run(&["check", repo, "--format", "json"], dir.path());
    assert_eq!(checked.code, 0, "{}", checked.stderr);
    let report = json(&checked.stdout);
    for key in ["agent", "manifest", "status", "digest"] {
        assert!(
            report["plan"][0].get(key).is_some(),
            "plan entries carry {key}"
        );
    }
    assert_eq!(
        plan_statuses(&checked.stdout),
        [
            ("weekly-reporter".into(), "disabled".into()),
            ("emr-triage".into(), "added".into())
        ]
    );
    let env_spec = run(
        &[
            "env-spec",
            "upsert",
            "triage-prod",
            "--agent-type",
            "claude",
            "--runtime",
            "claude-code",
            "--project-id",
            "local",
            "--config-repo",
            "octo/config",
            "--manifest-path",
            "envs/triage.toml",
        ],
        dir.path(),
    );
    assert_eq!(env_spec.code, 0, "{}", env_spec.stderr);
    let first = run(&["check", "--apply", repo, "--format", "json"], dir.path());
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(json(&first.stdout)["applied"], true);
    let second = run(&["check", "--apply", repo, "--format", "json"], dir.path());
    assert_eq!(
        plan_statuses(&second.stdout),
        [
            ("weekly-reporter".into(), "disabled".into()),
            ("emr-triage".into(), "unchanged".into())
        ]
    );
    let counts = &json(&second.stdout)["counts"];
    assert_eq!(
        (
            counts["blob_puts"].as_u64(),
            counts["state_writes"].as_u64()
        ),
        (Some(0), Some(0))
    );

    let listed = run(&["agents", "list", "--format", "json"], dir.path());
    let agents = json(&listed.stdout);
    assert_eq!(agents[0]["name"], "emr-triage");
    assert_eq!(agents[0]["status"], "active");

    let torn = run(&["teardown", "triage"], dir.path());
    assert_eq!(torn.code, 0, "{}", torn.stderr);
    // The registration of every manifest still covers it: the next push registers it again.
    let repository = json(&first.stdout)["repository"]
        .as_str()
        .expect("a repository")
        .to_owned();
    assert_eq!(
        torn.stderr,
        format!(
            "warning: {repository} is still registered (ref main, project local): while \
             agents/triage/astrolift.toml is in the repository, the next push to main registers \
             the agent again. Remove the manifest, or unregister it: `astrolift unregister-repo \
             {repository}`\n"
        )
    );
    let history = run(&["history", "emr-triage", "--format", "json"], dir.path());
    let actions: Vec<_> = json(&history.stdout)
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["action"].clone())
        .collect();
    assert_eq!(actions, ["added", "torn_down"]);
}

/// One summary, below the plan: the validation's own line (which counted no agent)
/// is not printed above it, and every count is singular or plural as it should be.
#[test]
fn human_check_summary_counts_the_plan_with_plurals() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repository = crate::support::fixture("reserved-secrets");
    let out = run(&["check", repository.to_str().expect("utf-8")], dir.path());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let summary = out.stdout.lines().last().expect("a summary line");
    assert!(summary.starts_with("1 added; 0 errors, "), "{}", out.stdout);
    assert!(!out.stdout.contains(" agents\n"), "{}", out.stdout);
    assert!(!out.stdout.contains("; 0 agent"), "{}", out.stdout);
    for wrong in ["1 errors", "1 warnings", "1 notices"] {
        assert!(!out.stdout.contains(wrong), "{wrong}: {}", out.stdout);
    }
}

#[test]
fn human_check_prints_the_plan_and_a_summary() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = run(
        &["check", example("single-agent").to_str().expect("utf-8")],
        dir.path(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("added"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("checked only (use --apply to register)"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stderr.contains('\u{1b}'),
        "no progress bar or colour when piped: {:?}",
        out.stderr
    );
}

#[test]
fn register_repo_and_env_spec_upsert() {
    let dir = tempfile::tempdir().expect("temp dir");
    let registered = run(
        &[
            "register-repo",
            "acme/agents",
            "--project-id",
            "p-1",
            "--ref",
            "main",
        ],
        dir.path(),
    );
    assert_eq!(registered.code, 0, "{}", registered.stderr);
    let bad = run(
        &["register-repo", "not a repo", "--project-id", "p-1"],
        dir.path(),
    );
    assert_eq!(bad.code, 2);
    let upsert = |extra: &[&str]| {
        let mut args = vec![
            "env-spec",
            "upsert",
            "triage-prod",
            "--agent-type",
            "claude",
            "--runtime",
            "claude-code",
            "--config-repo",
            "acme/agents",
            "--manifest-path",
            "config/triage/config.toml",
        ];
        args.extend_from_slice(extra);
        run(&args, dir.path())
    };
    // An env spec belongs to a project: `--project-id` is required.
    let without_project = upsert(&[]);
    assert_eq!(without_project.code, 2, "{}", without_project.stderr);
    assert!(without_project.stderr.contains("--project-id"));
    let spec = upsert(&["--project-id", "p-1"]);
    assert_eq!(spec.code, 0, "{}", spec.stderr);
    assert!(
        spec.stdout.contains(
            "triage-prod: project p-1, agent type claude, runtime claude-code, config acme/agents:config/triage/config.toml"
        ),
        "{}",
        spec.stdout
    );
    // A VNC spec without a config manifest; both listed and shown as JSON records.
    let vnc = run(
        &[
            "env-spec",
            "upsert",
            "desk",
            "--project-id",
            "p-1",
            "--agent-type",
            "claude",
            "--runtime",
            "claude-code-vnc",
        ],
        dir.path(),
    );
    assert_eq!(vnc.code, 0, "{}", vnc.stderr);
    let half = run(
        &[
            "env-spec",
            "upsert",
            "half",
            "--project-id",
            "p-1",
            "--agent-type",
            "claude",
            "--runtime",
            "claude-code",
            "--config-repo",
            "acme/agents",
        ],
        dir.path(),
    );
    assert_eq!(
        half.code, 2,
        "--config-repo needs --manifest-path: {}",
        half.stderr
    );
    let listed = run(&["env-spec", "list", "--format", "json"], dir.path());
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let specs = json(&listed.stdout);
    let names: Vec<_> = specs
        .as_array()
        .expect("an array")
        .iter()
        .map(|s| s["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["desk", "triage-prod"]);
    assert_eq!(specs[0]["runtime"], "claude-code-vnc");
    assert_eq!(specs[0]["config_repo"], "");
    let shown = run(
        &["env-spec", "show", "triage-prod", "--format", "json"],
        dir.path(),
    );
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let shown = json(&shown.stdout);
    assert_eq!(
        (
            &shown["project_id"],
            &shown["agent_type"],
            &shown["runtime"],
            &shown["config_repo"],
            &shown["manifest_path"]
        ),
        (
            &serde_json::json!("p-1"),
            &serde_json::json!("claude"),
            &serde_json::json!("claude-code"),
            &serde_json::json!("acme/agents"),
            &serde_json::json!("config/triage/config.toml")
        )
    );
    let missing = run(&["env-spec", "show", "nope"], dir.path());
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("no env spec is named nope"),
        "{}",
        missing.stderr
    );
}

/// One registration per manifest; an overlapping one is refused with both named;
/// `unregister-repo` removes one.
/// `skill-repo register|list|remove` keep a project's aliases; the same alias in another
/// project is another record; `catalogue register|show` keep the one catalogue.
#[test]
fn skill_repos_and_the_catalogue_are_registered() {
    let dir = tempfile::tempdir().expect("temp dir");
    let register = |alias: &str, repo: &str, project: &str| {
        let args = [
            "skill-repo",
            "register",
            alias,
            repo,
            "--project-id",
            project,
            "--format",
            "json",
        ];
        run(&args, dir.path())
    };
    let registered = register("steadymd", "steadymd/runbooks", "p-1");
    assert_eq!(registered.code, 0, "{}", registered.stderr);
    let record = json(&registered.stdout);
    assert_eq!(record["alias"], "steadymd");
    assert_eq!(record["repository"], "steadymd/runbooks");
    assert_eq!(record["project_id"], "p-1");
    assert_eq!(register("steadymd", "other/runbooks", "p-2").code, 0);
    assert_eq!(register("Not_A_Slug", "a/b", "p-1").code, 2);
    assert_eq!(register("ok", "not a repo", "p-1").code, 2);

    let listed = run(&["skill-repo", "list", "--project-id", "p-1"], dir.path());
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(
        listed.stdout,
        "steadymd -> steadymd/runbooks (project p-1)\n1 skill repos\n"
    );
    let all = run(&["skill-repo", "list", "--format", "json"], dir.path());
    let repos = json(&all.stdout);
    let projects: Vec<&str> = repos
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|r| r["project_id"].as_str())
        .collect();
    assert_eq!(projects, ["p-1", "p-2"]);

    let remove = || {
        let args = ["skill-repo", "remove", "steadymd", "--project-id", "p-1"];
        run(&args, dir.path())
    };
    assert_eq!(remove().code, 0);
    let again = remove();
    assert_eq!(again.code, 2);
    assert!(
        again.stderr.contains("no skill repo aliased steadymd"),
        "{}",
        again.stderr
    );
    let left = run(&["skill-repo", "list", "--format", "json"], dir.path());
    assert_eq!(json(&left.stdout).as_array().map(Vec::len), Some(1));

    let none = run(&["catalogue", "show"], dir.path());
    assert_eq!(none.code, 2);
    let catalogue = run(
        &["catalogue", "register", "astrolift/catalogue"],
        dir.path(),
    );
    assert_eq!(catalogue.code, 0, "{}", catalogue.stderr);
    let shown = run(&["catalogue", "show", "--format", "json"], dir.path());
    let record = json(&shown.stdout);
    assert_eq!(record["repository"], "astrolift/catalogue");
    assert_eq!(record["registered_ref"], "main", "--ref defaults to main");
    let moved = run(
        &[
            "catalogue",
            "register",
            "astrolift/skills",
            "--ref",
            "release",
        ],
        dir.path(),
    );
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    let shown = run(&["catalogue", "show"], dir.path());
    assert_eq!(
        shown.stdout,
        "catalogue astrolift/skills at release: `name@version` resolves to skills/<name>/<version>/\n"
    );
}

#[test]
fn register_repo_per_manifest_refuses_overlaps() {
    let dir = tempfile::tempdir().expect("temp dir");
    let register = |extra: &[&str]| {
        let mut args = vec!["register-repo", "acme/mono", "--project-id", "p-1"];
        args.extend_from_slice(extra);
        run(&args, dir.path())
    };
    let triage = register(&["--manifest-path", "agents/triage/astrolift.toml"]);
    assert_eq!(triage.code, 0, "{}", triage.stderr);
    assert!(
        triage
            .stdout
            .contains("registered acme/mono:agents/triage/astrolift.toml"),
        "{}",
        triage.stdout
    );
    let reporter = register(&["--manifest-path", "./agents/reporter/astrolift.toml"]);
    assert_eq!(reporter.code, 0, "{}", reporter.stderr);
    let whole = register(&[]);
    assert_eq!(whole.code, 2, "{}", whole.stdout);
    assert!(
        whole
            .stderr
            .contains("every manifest of acme/mono overlaps")
            && whole.stderr.contains("acme/mono:agents/"),
        "{}",
        whole.stderr
    );
    let not_a_manifest = register(&["--manifest-path", "../x/astrolift.toml"]);
    assert_eq!(not_a_manifest.code, 2, "{}", not_a_manifest.stderr);
    let not_a_manifest = register(&["--manifest-path", "agents/triage/brief.md"]);
    assert_eq!(not_a_manifest.code, 2, "{}", not_a_manifest.stderr);
    for path in [
        "agents/triage/astrolift.toml",
        "agents/reporter/astrolift.toml",
    ] {
        let removed = run(
            &["unregister-repo", "acme/mono", "--manifest-path", path],
            dir.path(),
        );
        assert_eq!(removed.code, 0, "{}", removed.stderr);
    }
    let again = run(
        &[
            "unregister-repo",
            "acme/mono",
            "--manifest-path",
            "agents/triage/astrolift.toml",
        ],
        dir.path(),
    );
    assert_eq!(again.code, 2, "{}", again.stderr);
    // The error says what to check next (docs/reference.md §3, "Errors").
    assert!(
        again
            .stderr
            .contains("no registration of acme/mono:agents/triage/astrolift.toml on ")
            && again.stderr.contains("--manifest-path")
            && again.stderr.contains("--state"),
        "{}",
        again.stderr
    );
    let whole = register(&[]);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
}

#[test]
fn package_prints_exactly_its_digests_size_files_and_writes_no_partial_archive() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("triage.tar.gz");
    let repo = example("monorepo");
    let args = [
        "package",
        repo.to_str().expect("utf-8"),
        "--manifest",
        "agents/triage/astrolift.toml",
        "--out",
        out.to_str().expect("utf-8"),
    ];
    let packaged = astrolift(args);
    assert_eq!(packaged.code, 0, "{}", packaged.stderr);
    let printed = json(&packaged.stdout);
    let keys: Vec<_> = printed
        .as_object()
        .expect("object")
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["digest", "content_digest", "size", "files"]);
    assert_ne!(printed["content_digest"], printed["digest"]);
    assert_eq!(
        printed["size"].as_u64(),
        std::fs::metadata(&out).ok().map(|m| m.len())
    );
    // Over the size limit: a diagnostic, exit 1, and nothing at --out.
    let small = dir.path().join("small.tar.gz");
    let refused = astrolift([
        "package",
        repo.to_str().expect("utf-8"),
        "--manifest",
        "agents/triage/astrolift.toml",
        "--out",
        small.to_str().expect("utf-8"),
        "--max-size",
        "10",
    ]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("package/too-large"),
        "{}",
        refused.stderr
    );
    assert!(!small.exists());
}

/// `check --apply` of a directory without any manifest says so and registers nothing.
#[test]
fn check_apply_of_a_directory_without_manifests_registers_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let applied = run(
        &[
            "check",
            "--apply",
            empty.to_str().expect("utf-8"),
            "--format",
            "json",
        ],
        dir.path(),
    );
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    assert!(
        applied
            .stderr
            .starts_with("nothing registered: no agent, workspace or config manifest"),
        "{}",
        applied.stderr
    );
    let report = json(&applied.stdout);
    assert_eq!(
        (report["mode"].as_str(), report["applied"].as_bool()),
        (Some("check"), Some(false))
    );
    let registrations = run(&["agents", "list", "--format", "json"], dir.path());
    assert_eq!(json(&registrations.stdout), serde_json::json!([]));
    // Nothing is registered, so a push would not sync it: no registration is listed.
    let unregister = run(&["unregister-repo", "local/empty"], dir.path());
    assert_ne!(unregister.code, 0, "{}", unregister.stdout);
}
