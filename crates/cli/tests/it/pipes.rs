//! What a reader of stdout and stderr sees besides the output (docs/reference.md §3): a
//! closed pipe ends a command quietly with status 0, and colour is only for a terminal.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{fixture, run_of};

fn monorepo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo")
}

/// Runs `astrolift` in `dir` with stdout a pipe whose reader closed before it started:
/// its first write meets a broken pipe. Gives the status and stderr.
fn into_closed_pipe(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .env_remove("RUST_LOG")
        .env_remove("ASTROLIFT_STATE")
        .env_remove("ASTROLIFT_BLOBS")
        .output()
        .expect("the astrolift binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), stderr)
}

#[test]
fn a_closed_pipe_ends_every_kind_of_output_quietly_with_status_0() {
    let repo = monorepo();
    let repo = repo.to_str().expect("utf-8");
    let state = tempfile::tempdir().expect("temp dir");
    let cases: [&[&str]; 6] = [
        &["validate", repo],
        &["validate", repo, "--format", "json"],
        &["validate", repo, "--format", "sarif"],
        &["triggers", "list"],
        &["triggers", "list", "--format", "json"],
        &["assemble", "config/triage/config.toml", "--root", repo],
    ];
    for args in cases {
        let (code, stderr) = into_closed_pipe(args, state.path());
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        // `validate` and `assemble` print their warnings there; nothing else may be.
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_closed_pipe_says_nothing_on_stderr() {
    let state = tempfile::tempdir().expect("temp dir");
    let (code, stderr) = into_closed_pipe(&["triggers", "list"], state.path());
    assert_eq!(code, Some(0));
    assert_eq!(stderr, "");
}

/// `validate` of the fixture with errors, its debug log lines on, with `env` set.
fn validate_logged(env: &[(&str, &str)]) -> crate::support::Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_astrolift"));
    command
        .arg("validate")
        .arg(fixture("errors"))
        .env("RUST_LOG", "debug")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    for (name, value) in env {
        command.env(name, value);
    }
    run_of(command.output().expect("the astrolift binary runs"))
}

#[test]
fn log_lines_on_a_file_or_pipe_are_not_coloured() {
    let run = validate_logged(&[]);
    assert!(run.stderr.contains("DEBUG"), "{}", run.stderr);
    assert!(!run.stderr.contains('\u{1b}'), "{}", run.stderr);
    assert!(!run.stdout.contains('\u{1b}'), "{}", run.stdout);
}

#[test]
fn no_color_wins_over_clicolor_force_for_diagnostics_and_log_lines() {
    let forced = validate_logged(&[("CLICOLOR_FORCE", "1")]);
    assert!(forced.stdout.contains('\u{1b}'), "{}", forced.stdout);
    assert!(forced.stderr.contains('\u{1b}'), "{}", forced.stderr);
    let off = validate_logged(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!off.stdout.contains('\u{1b}'), "{}", off.stdout);
    assert!(!off.stderr.contains('\u{1b}'), "{}", off.stderr);
}

/// No AWS store, queue or secret is configured: the AWS SDK's configuration is never
/// loaded, so its region lookup logs nothing.
#[tokio::test(flavor = "multi_thread")]
async fn serve_on_local_stores_reads_no_aws_configuration() {
    use crate::serve_process::{ServeProcess, ServeSetup, fake_github_with};
    let github = fake_github_with(&[]).await;
    let setup = ServeSetup {
        secret: "local-stores-secret",
        env: Vec::new(),
        register: false,
    };
    let mut server = ServeProcess::start(&github, setup);
    assert_eq!(server.healthz().await, 200);
    let output = server.stop();
    assert!(output.contains("listening"), "{output}");
    assert!(!output.contains("aws_config"), "{output}");
    assert!(!output.contains("WARN"), "{output}");
}

/// Progress (docs/reference.md §3, "Progress") is for a person at a terminal: with stderr
/// a pipe, `check`, `package --all` and `import` write no bar, spinner or carriage return.
#[test]
fn no_progress_is_drawn_when_stderr_is_a_pipe() {
    let repo = monorepo();
    let repo = repo.to_str().expect("utf-8");
    let export = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures/flowise/chatflow-tool-agent.json");
    let export = export.to_str().expect("utf-8");
    let state = tempfile::tempdir().expect("temp dir");
    let cases: [&[&str]; 4] = [
        &["check", repo],
        &["check", repo, "--format", "json"],
        &["package", "--all", repo],
        &["import", "--from", "flowise", export, "--out", "imported"],
    ];
    for args in cases {
        let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
            .args(args)
            .current_dir(state.path())
            .stdin(Stdio::null())
            .env_remove("RUST_LOG")
            .env_remove("ASTROLIFT_STATE")
            .env_remove("ASTROLIFT_BLOBS")
            .output()
            .expect("the astrolift binary runs");
        let run = run_of(output);
        assert!(matches!(run.code, 0 | 1), "{args:?}: {}", run.stderr);
        for drawn in ["\r", "\u{1b}[", "packaging", "importing"] {
            assert!(
                !run.stderr.contains(drawn),
                "{args:?} drew {drawn:?}: {}",
                run.stderr
            );
        }
    }
}
