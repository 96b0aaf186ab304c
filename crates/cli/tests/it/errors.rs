//! How a failure reads (docs/reference.md §3, "Errors"): one or two lines, each cause
//! once, a hint with the next step; the whole chain only with `--verbose`.

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use crate::support::{Run, run_of};

/// Every variable through which the AWS SDK could find credentials, a region or an
/// endpoint outside what a test sets.
const AWS_VARIABLES: &[&str] = &[
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_EC2_METADATA_DISABLED",
];

/// `astrolift agents list` on a DynamoDB state with only `env` as AWS configuration:
/// empty config and credentials files, no instance metadata.
fn agents_list_on_dynamodb(env: &[(&str, &str)], extra: &[&str]) -> Run {
    let args = ["agents", "list", "--state", "dynamodb:astrolift-table"];
    astrolift_with_only_aws_env(&[&args[..], extra].concat(), env)
}

/// `astrolift ARGS` with only `env` as AWS configuration: empty config and credentials
/// files, no instance metadata, one attempt per call.
pub(crate) fn astrolift_with_only_aws_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let no_metadata = [("AWS_EC2_METADATA_DISABLED", "true")];
    astrolift_with_aws_env_and_metadata(args, &[&no_metadata, env].concat())
}

/// [`astrolift_with_only_aws_env`] with the instance metadata service asked, as the SDK
/// does by default (unless `env` disables it).
fn astrolift_with_aws_env_and_metadata(args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").expect("an empty file");
    let mut command = Command::new(env!("CARGO_BIN_EXE_astrolift"));
    command
        .args(args)
        .current_dir(dir.path())
        .env("AWS_CONFIG_FILE", &empty)
        .env("AWS_SHARED_CREDENTIALS_FILE", &empty)
        .env("AWS_MAX_ATTEMPTS", "1")
        .env_remove("RUST_LOG");
    for name in AWS_VARIABLES {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    run_of(command.output().expect("the astrolift binary runs"))
}

/// An address nothing listens on.
pub(crate) fn closed_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let address = listener.local_addr().expect("an address");
    drop(listener);
    format!("http://{address}")
}

/// A failure in two lines, `error:` and `hint:`, without the SDK's dump.
fn assert_two_lines(run: &Run) {
    assert_eq!(run.code, 2, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert!(lines[0].starts_with("error: "), "{}", run.stderr);
    assert!(lines[1].starts_with("hint: "), "{}", run.stderr);
    assert!(!run.stderr.contains("DispatchFailure"), "{}", run.stderr);
}

fn assert_short(run: &Run, words: &str, hint: &str) {
    assert_two_lines(run);
    assert!(run.stderr.contains("DynamoDB Query: "), "{}", run.stderr);
    assert!(run.stderr.contains(words), "{}", run.stderr);
    let hint_line = run.stderr.lines().nth(1).unwrap_or_default();
    assert!(hint_line.contains(hint), "{}", run.stderr);
}

#[test]
fn an_unreachable_aws_endpoint_is_two_lines_with_a_hint() {
    let endpoint = closed_endpoint();
    let env = [
        ("AWS_REGION", "eu-west-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
    ];
    let run = agents_list_on_dynamodb(&env, &[]);
    assert_short(&run, "cannot connect to AWS", &endpoint);

    let verbose = agents_list_on_dynamodb(&env, &["--verbose"]);
    assert_eq!(verbose.code, 2, "{}", verbose.stderr);
    assert!(verbose.stderr.contains("detail:"), "{}", verbose.stderr);
    assert!(
        verbose.stderr.contains("DispatchFailure"),
        "the SDK's own error: {}",
        verbose.stderr
    );
}

#[test]
fn missing_aws_region_or_credentials_say_what_to_set() {
    let credentials = [
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
    ];
    let run = agents_list_on_dynamodb(&credentials, &[]);
    assert_short(&run, "no AWS region set", "AWS_REGION");

    let run = agents_list_on_dynamodb(&[("AWS_REGION", "eu-west-1")], &[]);
    assert_short(&run, "no AWS credentials found", "AWS_ACCESS_KEY_ID");
}

/// With the instance metadata service asked (the SDK's default), a missing region or
/// missing credentials are still the error and its hint alone: none of the SDK's own
/// warnings about the lookups it tried.
#[test]
fn missing_aws_region_or_credentials_with_instance_metadata_are_two_lines() {
    let args = ["agents", "list", "--state", "dynamodb:astrolift-table"];
    let credentials = [
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
    ];
    let run = astrolift_with_aws_env_and_metadata(&args, &credentials);
    assert_eq!(
        run.stderr,
        "error: store unavailable (retryable): DynamoDB Query: no AWS region set\n\
         hint: set AWS_REGION (for example AWS_REGION=eu-west-1)\n"
    );
    let run = astrolift_with_aws_env_and_metadata(&args, &[("AWS_REGION", "eu-west-1")]);
    assert_short(&run, "no AWS credentials found", "AWS_ACCESS_KEY_ID");
}

#[test]
fn a_secret_that_cannot_be_read_says_cannot_verify_once() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo");
    let dir = tempfile::tempdir().expect("temp dir");
    let body = dir.path().join("body.json");
    std::fs::write(&body, r#"{"issue":{"key":"OPS-1"}}"#).expect("a body");
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args([
            "trigger",
            "test",
            "emr-triage",
            "jira-high-priority",
            "--body",
        ])
        .arg(&body)
        .args([
            "--header",
            &format!("X-Signature: sha256={}", "0".repeat(64)),
        ])
        .arg(&repo)
        .env_remove("ASTROLIFT_SECRET_AGENTS_JIRA_HOOK")
        .env_remove("RUST_LOG")
        .output()
        .expect("the astrolift binary runs");
    let run = run_of(output);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("cannot verify").count(),
        1,
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("is not set"), "{}", run.stderr);
}

#[test]
fn an_unreachable_github_is_said_once_with_a_hint() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../bot/tests/it/fixtures/suggestions");
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .arg("suggest")
        .arg(&fixture)
        .args(["--repo", "octo/agents", "--pr", "1", "--head"])
        .arg("0".repeat(40))
        .env("GITHUB_TOKEN", "test-token")
        .env("GITHUB_API_URL", closed_endpoint())
        .env_remove("RUST_LOG")
        .output()
        .expect("the astrolift binary runs");
    let run = run_of(output);
    assert_two_lines(&run);
    assert!(run.stderr.contains("cannot reach GitHub"), "{}", run.stderr);
    assert_eq!(run.stderr.matches("(Connect)").count(), 1, "{}", run.stderr);
}

#[test]
fn an_unreachable_dispatch_queue_is_two_lines_with_a_hint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = format!("--state=sqlite:{}", dir.path().join("state.db").display());
    let blobs = format!("--blobs=file:{}", dir.path().join("blobs").display());
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo");
    crate::support::define_triage_env_spec("local", "local/monorepo", &[&state]);
    let check = crate::support::astrolift([
        "check".as_ref(),
        "--apply".as_ref(),
        repo.as_os_str(),
        state.as_ref(),
        blobs.as_ref(),
    ]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    let endpoint = closed_endpoint();
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(["dispatch", "emr-triage", "--input", r#"{"mode":"triage"}"#])
        .args([&state, &blobs])
        .env(
            "ASTROLIFT_DISPATCH_QUEUE_URL",
            format!("{endpoint}/000000000000/q"),
        )
        .env("AWS_ENDPOINT_URL", &endpoint)
        .env("AWS_REGION", "eu-west-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_MAX_ATTEMPTS", "1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("RUST_LOG")
        .output()
        .expect("the astrolift binary runs");
    let run = run_of(output);
    assert_two_lines(&run);
    let expected = "SQS SendMessage: cannot connect to AWS";
    assert!(run.stderr.contains(expected), "{}", run.stderr);
    let shown = format!("AWS_ENDPOINT_URL is {endpoint}");
    assert!(run.stderr.contains(&shown), "{}", run.stderr);
}
