//! The binary end to end: exit codes, formats and usage errors, on the
//! fixture repositories under `tests/fixtures/`.

use std::path::Path;

use crate::sarif_schema::assert_valid_sarif;
use crate::support::{astrolift, fixture, json, validate_fixture, without_version};

/// Fixture repositories and the exit code each must give.
const FIXTURES: &[(&str, i32)] = &[
    ("valid-single", 0),
    ("warnings-only", 0),
    ("no-agents", 0),
    ("errors", 1),
];

#[test]
fn exit_codes_follow_the_findings() {
    for (name, expected) in FIXTURES {
        for format in ["human", "json", "sarif", "github"] {
            let run = validate_fixture(name, format);
            assert_eq!(run.code, *expected, "{name} --format {format}: {run:?}");
        }
    }
}

#[test]
fn json_of_each_fixture() {
    for (name, _) in FIXTURES {
        let run = validate_fixture(name, "json");
        insta::assert_json_snapshot!(format!("json_{name}"), json(&run.stdout));
    }
}

#[test]
fn human_of_each_fixture() {
    for (name, _) in FIXTURES {
        let run = validate_fixture(name, "human");
        assert!(!run.stdout.contains('\u{1b}'), "no colour into a pipe");
        insta::assert_snapshot!(format!("human_{name}"), run.stdout);
    }
}

#[test]
fn github_of_each_fixture() {
    for (name, _) in FIXTURES {
        let run = validate_fixture(name, "github");
        insta::assert_snapshot!(format!("github_{name}"), run.stdout);
    }
}

#[test]
fn sarif_of_each_fixture_is_valid() {
    for (name, _) in FIXTURES {
        let run = validate_fixture(name, "sarif");
        let document = json(&run.stdout);
        assert_valid_sarif(&document);
        insta::assert_json_snapshot!(format!("sarif_{name}"), without_version(document));
    }
}

#[test]
fn human_is_coloured_when_forced() {
    let dir = fixture("errors");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .arg("validate")
        .arg(&dir)
        .env("CLICOLOR_FORCE", "1")
        .env_remove("NO_COLOR")
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&output.stdout).contains("\u{1b}["));
}

#[test]
fn plaintext_secrets_are_never_echoed() {
    for format in ["human", "json", "sarif", "github"] {
        let run = validate_fixture("errors", format);
        assert!(!run.stdout.contains("sk-ant-plaintext-value"), "{format}");
        assert!(!run.stderr.contains("sk-ant-plaintext-value"), "{format}");
    }
}

#[test]
fn dir_defaults_to_the_current_directory() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(["validate", "--format", "json"])
        .current_dir(fixture("valid-single"))
        .output()
        .expect("runs");
    let run = crate::support::run_of(output);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, validate_fixture("valid-single", "json").stdout);
}

#[test]
fn usage_and_io_failures_exit_2() {
    let missing = fixture("does-not-exist");
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["validate".into(), missing.into()],
        vec!["validate".into(), "--format".into(), "xml".into()],
        vec!["validate".into(), "--no-such-flag".into()],
        vec!["no-such-command".into()],
        vec![],
        vec![
            "validate".into(),
            fixture("valid-single").into(),
            "--config".into(),
            "../outside.toml".into(),
        ],
        vec![
            "validate".into(),
            fixture("valid-single").join("astrolift.toml").into(),
        ],
    ];
    for args in cases {
        let run = astrolift(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stdout.is_empty(), "{args:?}: nothing on stdout");
        assert!(!run.stderr.is_empty(), "{args:?}: an explanation on stderr");
    }
}

#[test]
fn help_and_version_exit_0() {
    for flag in ["--help", "--version"] {
        let run = astrolift([flag]);
        assert_eq!(run.code, 0, "{flag}");
        assert!(run.stdout.starts_with("astrolift") || run.stdout.contains("Usage"));
    }
    let run = astrolift(["validate", "--help"]);
    assert_eq!(run.code, 0);
    for format in ["human", "json", "sarif", "github"] {
        assert!(run.stdout.contains(format), "help lists {format}");
    }
}

#[test]
fn human_is_coloured_on_a_terminal_only() {
    // `script` (util-linux) gives the binary a pseudo-terminal as stdout.
    let Ok(script) = which("script") else {
        return;
    };
    let command = format!(
        "{} validate {}",
        env!("CARGO_BIN_EXE_astrolift"),
        fixture("errors").display()
    );
    let output = std::process::Command::new(script)
        .args(["-qefc", &command, "/dev/null"])
        .env_remove("CLICOLOR_FORCE")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .output()
        .expect("script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("\u{1b}["), "colour on a terminal: {stdout}");
    assert!(
        !validate_fixture("errors", "human")
            .stdout
            .contains('\u{1b}')
    );
}

fn which(program: &str) -> Result<std::path::PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or(())
}

#[test]
fn config_paths_reach_the_validator() {
    let dir = fixture("valid-single");
    // Relative to DIR, or starting with DIR: the same repo-relative path.
    for config in [
        std::path::PathBuf::from("configs/missing.toml"),
        dir.join("configs/missing.toml"),
    ] {
        let run = astrolift([
            "validate".as_ref(),
            dir.as_os_str(),
            "--config".as_ref(),
            config.as_os_str(),
            "--format".as_ref(),
            "json".as_ref(),
        ]);
        assert_eq!(run.code, 1, "a missing config is an error: {run:?}");
        let document = json(&run.stdout);
        // Errors only: its catalogue skill is unresolved here (a warning).
        let paths: Vec<_> = document["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter(|d| d["severity"] == "error")
            .map(|d| d["path"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(paths, ["configs/missing.toml"], "{config:?}");
    }
}

/// A folder above several repositories: past the first three, the
/// `discovery/undiscovered-manifest` notices are one line; the counts keep each.
#[test]
fn undiscovered_manifests_are_summarised_in_human_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    for n in 0..6 {
        let repo = dir.path().join(format!("repo-{n}"));
        std::fs::create_dir_all(&repo).expect("mkdir");
        std::fs::write(repo.join("astrolift.toml"), "name = \"a\"\n").expect("writes");
    }
    let run = astrolift(["validate", dir.path().to_str().expect("utf-8")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout
            .matches("notice[discovery/undiscovered-manifest]")
            .count(),
        3
    );
    let tail = run.stdout.find("note: ").map_or("", |at| &run.stdout[at..]);
    insta::assert_snapshot!(tail);
    let document = json(
        &astrolift([
            "validate",
            "--format",
            "json",
            dir.path().to_str().expect("utf-8"),
        ])
        .stdout,
    );
    let undiscovered = document["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["code"] == "discovery/undiscovered-manifest")
        .count();
    assert_eq!(undiscovered, 6);
}

/// `drift --format human` like every other command; `text`, its old name, still works.
#[test]
fn drift_formats_are_human_and_json() {
    let monorepo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo");
    let dir = monorepo.to_str().expect("utf-8");
    let human = astrolift(["drift", dir, dir, "--format", "human"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    let text = astrolift(["drift", dir, dir, "--format", "text"]);
    assert_eq!(
        (text.code, &text.stdout),
        (0, &human.stdout),
        "{}",
        text.stderr
    );
    assert_eq!(astrolift(["drift", dir, dir]).stdout, human.stdout);
    let json = astrolift(["drift", dir, dir, "--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let help = astrolift(["drift", "--help"]);
    assert!(help.stdout.contains("human"), "{}", help.stdout);
}

/// `serve --help` names the environment serve needs to start.
#[test]
fn serve_help_names_its_environment() {
    let help = astrolift(["serve", "--help"]);
    assert_eq!(help.code, 0, "{}", help.stderr);
    for variable in [
        "GITHUB_APP_ID",
        "GITHUB_APP_PRIVATE_KEY[_FILE]",
        "GITHUB_WEBHOOK_SECRET",
        "ASTROLIFT_CALLBACK_BASE_URL",
    ] {
        assert!(
            help.stdout.contains(variable),
            "{variable}: {}",
            help.stdout
        );
    }
}

/// A project id that cannot name the project's secrets is a usage error that says so.
#[test]
fn a_bad_project_id_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = format!("--state=sqlite:{}", dir.path().join("state.db").display());
    for args in [
        vec![
            "register-repo",
            "octo/agents",
            "--project-id",
            "Bad Project!",
        ],
        vec![
            "env-spec",
            "upsert",
            "x",
            "--project-id",
            "Bad Project!",
            "--agent-type",
            "claude",
            "--runtime",
            "claude-code",
        ],
        vec![
            "skill-repo",
            "register",
            "a",
            "octo/skills",
            "--project-id",
            "..",
        ],
        vec!["check", ".", "--project-id", "a/b"],
    ] {
        let run = astrolift([&args[..], &[state.as_str()]].concat());
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("a project id is 1-128 of A-Z, a-z, 0-9 and `_+=.@-`"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert!(!dir.path().join("state.db").exists(), "nothing was opened");
}

/// `package --all` without `--store` uses the blob store every `--blobs` defaults to.
#[test]
fn package_all_defaults_to_the_embedded_blob_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let monorepo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(["package", "--all"])
        .arg(&monorepo)
        .current_dir(dir.path())
        .env_remove("ASTROLIFT_BLOBS")
        .env_remove("RUST_LOG")
        .output()
        .expect("the astrolift binary runs");
    let run = crate::support::run_of(output);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        dir.path().join(".astrolift/blobs/packages/sha256").is_dir(),
        "{}",
        run.stdout
    );
}

/// A file name that is not UTF-8 anywhere in the tree is a `path/not-utf8` error on that
/// file; the rest is validated (exit 1, not 2).
#[cfg(unix)]
#[test]
fn a_non_utf8_file_name_is_a_diagnostic() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().expect("temp dir");
    crate::support::copy_tree(&fixture("valid-single"), dir.path());
    let bad = std::ffi::OsStr::from_bytes(b"notes-\xff.md");
    std::fs::write(dir.path().join(bad), "x").expect("writes");
    let run = astrolift([
        "validate",
        "--format",
        "json",
        dir.path().to_str().expect("utf-8"),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let document = json(&run.stdout);
    assert_eq!(
        document["agents"].as_array().map(Vec::len),
        Some(1),
        "{document}"
    );
    let error = document["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["code"] == "path/not-utf8")
        .expect("the bad name is reported");
    assert_eq!(error["path"], "notes-\u{fffd}.md");
    assert_eq!(error["severity"], "error");
}

/// A file name with a newline and an escape sequence is the warning
/// `path/control-character`, positioned at the file with the name escaped; no format
/// prints a raw control character, and the github format stays one command a line.
#[test]
fn a_control_character_in_a_file_name_is_escaped_everywhere() {
    let dir = tempfile::tempdir().expect("temp dir");
    crate::support::copy_tree(&fixture("valid-single"), dir.path());
    std::fs::create_dir_all(dir.path().join("brief")).expect("mkdir");
    std::fs::write(dir.path().join("brief/notes\n\u{1b}[31mred.md"), "x").expect("writes");
    let root = dir.path().to_str().expect("utf-8");
    let escaped = "brief/notes\\n\\u{1b}[31mred.md";

    let run = astrolift(["validate", "--format", "json", root]);
    assert_eq!(
        run.code, 0,
        "a warning does not fail validate: {}",
        run.stdout
    );
    let document = json(&run.stdout);
    let warning = document["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["code"] == "path/control-character")
        .expect("the name is reported");
    assert_eq!(warning["path"], escaped);
    assert_eq!(warning["severity"], "warning");
    assert_eq!(
        (warning["line"].as_u64(), warning["column"].as_u64()),
        (Some(1), Some(1))
    );

    for format in ["human", "github"] {
        let run = astrolift(["validate", "--format", format, root]);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        assert!(!run.stdout.contains('\u{1b}'), "{format}: {:?}", run.stdout);
        assert!(run.stdout.contains(escaped), "{format}: {}", run.stdout);
        if format == "github" {
            assert!(
                run.stdout.lines().all(|l| l.starts_with("::")),
                "{}",
                run.stdout
            );
        }
    }
}

/// `assemble --origins`: the merged document and, per JSON Pointer, the file each value
/// came from (docs/reference.md §3).
#[test]
fn assemble_origins_shape() {
    let monorepo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo");
    let root = monorepo.to_str().expect("utf-8");
    let plain = astrolift(["assemble", "config/triage/config.toml", "--root", root]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let with = astrolift([
        "assemble",
        "config/triage/config.toml",
        "--root",
        root,
        "--origins",
    ]);
    assert_eq!(with.code, 0, "{}", with.stderr);
    let with = json(&with.stdout);
    assert_eq!(with["document"], json(&plain.stdout));
    insta::assert_json_snapshot!(with["origins"]);
}
