//! `validate` and `check --apply` with a workflow, then `dispatch --workflow`,
//! `workflow-run report`, `workflow-run show` and `workflow-run cancel` on the embedded
//! stores.

use std::path::Path;
use std::process::Command;

use crate::support::{Run, json, run_of, stores_env};

pub(crate) const FLOW: &str = r#"schema = "astrolift.workflow/v1"
name = "triage"

[[stages]]
name = "collect"
agent = "triage"
skills = ["pr-review@1.2.0"]
payload = '{issue: .input.issue}'

[[stages]]
name = "report"
agent = "emr-triage"
needs = ["collect"]
payload = '{summary: .stages.collect.result.summary}'
"#;

fn astrolift(args: &[&str], dir: &Path) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(args)
        .envs(stores_env(dir))
        .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
        .env_remove("RUST_LOG")
        .output()
        .expect("the astrolift binary runs");
    run_of(output)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("readable") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copies");
        }
    }
}

/// `examples/monorepo` plus `workflows/triage.toml` with `flow`, in `dir/repo`.
pub(crate) fn repository(dir: &Path, flow: &str) -> String {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/monorepo");
    let repo = dir.join("repo");
    copy_dir(&examples, &repo);
    std::fs::create_dir_all(repo.join("workflows")).expect("mkdir");
    std::fs::write(repo.join("workflows/triage.toml"), flow).expect("writes");
    repo.to_str().expect("utf-8").to_owned()
}

#[test]
fn validate_reports_workflow_errors_with_positions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let broken = FLOW.replace("needs = [\"collect\"]", "needs = [\"report\"]");
    let repo = repository(dir.path(), &broken);
    let run = astrolift(&["validate", "--format", "json", &repo], dir.path());
    assert_eq!(run.code, 1, "{}", run.stderr);
    let document = json(&run.stdout);
    let cycle = document["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .find(|d| d["code"] == "workflow/cycle")
        .expect("the cycle is reported");
    assert_eq!(cycle["path"], "workflows/triage.toml");
    assert_eq!(cycle["line"], 13);
    assert!(
        cycle["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("report → report")),
        "{cycle}"
    );
}

/// `FLOW` registered with `check --apply` in `dir`.
fn registered(dir: &Path) {
    let repo = repository(dir, FLOW);
    // The example's triage agent names the env spec `triage-prod`.
    let state = format!("--state=sqlite:{}", dir.join("state.db").display());
    crate::support::define_triage_env_spec("local", "local/repo", &[&state]);
    let check = astrolift(&["check", "--apply", "--format", "json", &repo], dir);
    assert_eq!(check.code, 0, "{}\n{}", check.stderr, check.stdout);
    let report = json(&check.stdout);
    assert_eq!(report["workflows"][0]["name"], "triage", "{report}");
    assert_eq!(report["workflows"][0]["status"], "added");
}

/// A run of `triage` started in `dir`: its JSON.
fn started(dir: &Path) -> serde_json::Value {
    let args = [
        "dispatch",
        "--workflow",
        "triage",
        "--input",
        r#"{"issue":"OPS-1"}"#,
    ];
    let started = astrolift(&args, dir);
    assert_eq!(started.code, 0, "{}", started.stderr);
    json(&started.stdout)
}

#[test]
fn a_workflow_runs_from_the_command_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    registered(dir.path());
    let started = started(dir.path());
    assert_eq!(started["status"], "running");
    assert_eq!(started["dispatched"][0]["stage"], "collect");
    assert_eq!(started["dispatched"][0]["skill_refs"][0], "pr-review@1.2.0");
    assert_eq!(started["stages"]["report"]["status"], "waiting");
    let run_id = started["run_id"].as_str().expect("a run id").to_owned();

    let result = r#"{"summary":"flaky test"}"#;
    let report_args = [
        "workflow-run",
        "report",
        &run_id,
        "collect",
        "--status",
        "succeeded",
        "--result",
        result,
    ];
    let collected = json(&astrolift(&report_args, dir.path()).stdout);
    assert_eq!(collected["dispatched"][0]["stage"], "report");
    assert_eq!(collected["changed"], true);
    let again = json(&astrolift(&report_args, dir.path()).stdout);
    assert_eq!(again["changed"], false);
    assert_eq!(again["dispatched"], serde_json::json!([]));

    let done = astrolift(
        &[
            "workflow-run",
            "report",
            &run_id,
            "report",
            "--status",
            "succeeded",
        ],
        dir.path(),
    );
    assert_eq!(json(&done.stdout)["status"], "succeeded", "{}", done.stderr);
    let shown = json(&astrolift(&["workflow-run", "show", &run_id], dir.path()).stdout);
    assert_eq!(shown["status"], "succeeded");
    assert_eq!(shown["stages"]["collect"]["status"], "succeeded");
    assert_eq!(shown["stages"]["collect"]["attempt"], 1);
    let attempts = &shown["stages"]["collect"]["attempts"];
    assert_eq!(attempts[0]["status"], "succeeded", "{shown}");
    assert_eq!(attempts.as_array().map(Vec::len), Some(1));

    // --tail gives up at its timeout while the run is still running: exit 1.
    let tailed = astrolift(
        &[
            "dispatch",
            "--workflow",
            "triage",
            "--input",
            "{}",
            "--tail",
            "--timeout",
            "0",
        ],
        dir.path(),
    );
    assert_eq!(tailed.code, 1, "{}", tailed.stderr);
    assert!(tailed.stderr.contains("still running"), "{}", tailed.stderr);

    for bad in [
        vec!["dispatch", "--workflow", "nowhere", "--input", "{}"],
        vec!["dispatch", "--workflow", "triage", "--input", "[1]"],
        vec![
            "dispatch",
            "triage",
            "--workflow",
            "triage",
            "--input",
            "{}",
        ],
        vec![
            "workflow-run",
            "report",
            &run_id,
            "nope",
            "--status",
            "failed",
        ],
        vec!["workflow-run", "show", "run-missing"],
    ] {
        let refused = astrolift(&bad, dir.path());
        assert_eq!(refused.code, 2, "{bad:?}: {}", refused.stdout);
        assert!(!refused.stderr.is_empty(), "{bad:?}");
    }
}

/// docs/reference.md §5.6: cancel skips a running run's waiting stages; again, it changes
/// nothing; a run that failed is refused (exit 2) and stays failed.
#[test]
fn a_running_run_is_cancelled_once_and_a_finished_one_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    registered(dir.path());
    let run_id = started(dir.path())["run_id"]
        .as_str()
        .expect("a run id")
        .to_owned();
    let cancelled = astrolift(&["workflow-run", "cancel", &run_id], dir.path());
    assert_eq!(cancelled.code, 0, "{}", cancelled.stderr);
    assert_eq!(
        cancelled.stdout.trim(),
        format!(
            "cancelled workflow run {run_id}: 1 waiting stage skipped, \
             1 dispatched stage left to finish"
        )
    );
    let cancel_json = ["workflow-run", "cancel", &run_id, "--format", "json"];
    let again = astrolift(&cancel_json, dir.path());
    assert_eq!(again.code, 0, "{}", again.stderr);
    let again = json(&again.stdout);
    assert_eq!(
        (&again["status"], &again["changed"]),
        (&"cancelled".into(), &false.into())
    );
    let shown = json(&astrolift(&["workflow-run", "show", &run_id], dir.path()).stdout);
    assert_eq!(shown["status"], "cancelled");
    assert_eq!(shown["stages"]["report"]["status"], "skipped");
    assert_eq!(shown["stages"]["collect"]["status"], "dispatched");

    let failed_id = started(dir.path())["run_id"]
        .as_str()
        .expect("a run id")
        .to_owned();
    let fail = [
        "workflow-run",
        "report",
        &failed_id,
        "collect",
        "--status",
        "failed",
    ];
    assert_eq!(
        json(&astrolift(&fail, dir.path()).stdout)["status"],
        "failed"
    );
    let refused = astrolift(&["workflow-run", "cancel", &failed_id], dir.path());
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("is failed: only a running run can be cancelled"),
        "{}",
        refused.stderr
    );
    let shown = json(&astrolift(&["workflow-run", "show", &failed_id], dir.path()).stdout);
    assert_eq!(shown["status"], "failed");
    assert_eq!(
        shown["stages"]["collect"]["attempts"][0]["status"],
        "failed"
    );
}

#[test]
fn a_run_that_fails_as_it_starts_exits_1() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The first stage's payload is a number, not an object: the stage fails at once.
    let flow = FLOW.replace("payload = '{issue: .input.issue}'", "payload = '.input.n'");
    let repo = repository(dir.path(), &flow);
    let state = format!("--state=sqlite:{}", dir.path().join("state.db").display());
    crate::support::define_triage_env_spec("local", "local/repo", &[&state]);
    let check = astrolift(&["check", "--apply", &repo], dir.path());
    assert_eq!(check.code, 0, "{}\n{}", check.stderr, check.stdout);
    let started = astrolift(
        &["dispatch", "--workflow", "triage", "--input", r#"{"n":1}"#],
        dir.path(),
    );
    assert_eq!(started.code, 1, "{}", started.stderr);
    assert_eq!(json(&started.stdout)["status"], "failed");
    assert!(
        started.stderr.contains("stage collect failed: "),
        "{}",
        started.stderr
    );
    assert!(
        started.stderr.contains("failed as it started"),
        "{}",
        started.stderr
    );
}

#[test]
fn a_stage_naming_a_missing_env_spec_fails_check() {
    let dir = tempfile::tempdir().expect("temp dir");
    let flow = FLOW.replace(
        "payload = '{issue: .input.issue}'",
        "payload = '{issue: .input.issue}'\nenv_spec = \"no-such-spec\"",
    );
    let repo = repository(dir.path(), &flow);
    let state = format!("--state=sqlite:{}", dir.path().join("state.db").display());
    crate::support::define_triage_env_spec("local", "local/repo", &[&state]);
    let check = astrolift(&["check", "--apply", "--format", "json", &repo], dir.path());
    assert_eq!(check.code, 1, "{}\n{}", check.stderr, check.stdout);
    let report = json(&check.stdout);
    assert_eq!(report["workflows"][0]["status"], "failed", "{report}");
    let error = report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .find(|d| d["code"] == "workflow/env-spec-not-in-project")
        .expect("the stage's env spec is reported");
    assert_eq!(error["path"], "workflows/triage.toml");
    assert_eq!(error["line"], 9, "{error}");
    assert_eq!(error["severity"], "error");
    // A check of the registered repository (no --apply) fails the same way.
    let again = astrolift(&["check", &repo], dir.path());
    assert_eq!(again.code, 1, "{}\n{}", again.stderr, again.stdout);
    assert!(
        again.stdout.contains("workflow/env-spec-not-in-project"),
        "{}",
        again.stdout
    );
}

/// `check`'s human output has a row per workflow and per config manifest, in the agents'
/// columns, and its summary counts them by status, singular and plural right
/// (docs/reference.md §4, "`check` (human)").
#[test]
fn check_human_lists_workflows_and_configs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = repository(dir.path(), FLOW);
    let state = format!("--state=sqlite:{}", dir.path().join("state.db").display());
    crate::support::define_triage_env_spec("local", "local/repo", &[&state]);
    // The plan's rows and the summary (the lines after the diagnostics), each 12-digit
    // digest masked: it varies with the examples' content.
    let rows = |run: &Run| -> Vec<String> {
        let lines: Vec<&str> = run.stdout.lines().collect();
        let start = lines
            .iter()
            .rposition(|l| l.is_empty())
            .map_or(0, |i| i + 1);
        lines[start..]
            .iter()
            .map(|line| {
                line.split(' ')
                    .map(|word| {
                        let digest =
                            word.len() == 12 && word.bytes().all(|b| b.is_ascii_hexdigit());
                        if digest { "############" } else { word }
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    };
    let first = astrolift(&["check", "--apply", &repo], dir.path());
    assert_eq!(first.code, 0, "{}", first.stdout);
    let again = astrolift(&["check", "--apply", &repo], dir.path());
    assert_eq!(again.code, 0, "{}", again.stdout);
    insta::assert_snapshot!([rows(&first), rows(&again)].concat().join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn on_step_functions_a_run_is_an_execution_and_cancel_stops_it() {
    use astrolift_dispatch::state_machine::{compile, state_machine_name};
    use astrolift_dispatch::step_functions::StepFunctions;
    use astrolift_dispatch::testing::{MotoStages, next_stage_message};
    use astrolift_store::StateStore;
    use astrolift_store::state::SqliteStateStore;

    let Some(endpoint) = astrolift_store::testing::aws_endpoint(
        "on_step_functions_a_run_is_an_execution_and_cancel_stops_it",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    registered(dir.path());
    let name = astrolift_store::testing::unique_name("cli-runs");
    let moto = MotoStages::start(&endpoint, &name)
        .await
        .expect("moto's Step Functions and a stage queue");
    let role = "arn:aws:iam::123456789012:role/astrolift-state-machines";
    // A prefix of this run's own: the machine's name is otherwise the same on every run.
    let prefix = format!("{}-", astrolift_store::testing::unique_name("cli"));
    let prefix = prefix.as_str();
    // What the sync function does on this engine: the machine of the workflow's content.
    let state = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("sqlite");
    let mut record = state
        .workflows()
        .get_workflow("local/repo", "triage")
        .await
        .expect("read")
        .expect("registered");
    let hash = record.content_hash.trim_start_matches("sha256:").to_owned();
    let machine_name =
        state_machine_name(prefix, &record.repository, &record.name, &hash).expect("a name");
    let workflow = serde_json::from_str(&record.definition).expect("a workflow");
    let machine = compile(&workflow, &moto.queue).expect("compiles");
    let engine = StepFunctions::new(aws_sdk_sfn::Client::new(&moto.sdk), role);
    let arn = engine
        .put_state_machine(&machine_name, &machine.definition)
        .await
        .expect("created");
    let version = record.version;
    record.state_machine_arn = Some(arn);
    record.version += 1;
    state
        .workflows()
        .put_workflow(&record, Some(version))
        .await
        .expect("recorded");

    let on_sfn = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_astrolift"))
            .args(args)
            .envs(stores_env(dir.path()))
            .env("ASTROLIFT_WORKFLOW_ENGINE", "stepfunctions")
            .env("ASTROLIFT_STAGE_QUEUE_URL", &moto.queue)
            .env("ASTROLIFT_STATE_MACHINE_ROLE_ARN", role)
            .env("ASTROLIFT_STATE_MACHINE_PREFIX", prefix)
            .env_remove("ASTROLIFT_DISPATCH_QUEUE_URL")
            .output()
            .expect("the astrolift binary runs");
        run_of(output)
    };
    let input = r#"{"issue":"OPS-1"}"#;
    let started = on_sfn(&["dispatch", "--workflow", "triage", "--input", input]);
    assert_eq!(started.code, 0, "{}", started.stderr);
    let run = json(&started.stdout);
    let run_id = run["run_id"].as_str().expect("a run id").to_owned();
    let execution = run["execution_arn"]
        .as_str()
        .expect("an execution")
        .to_owned();
    assert!(execution.ends_with(&format!(":{run_id}")), "{run}");
    let first = next_stage_message(&moto.sqs, &moto.queue)
        .await
        .expect("the first stage's message");
    assert_eq!(
        (first.run_id.as_str(), first.stage.as_str()),
        (run_id.as_str(), "collect")
    );

    let shown = on_sfn(&["workflow-run", "show", &run_id]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let shown = json(&shown.stdout);
    assert_eq!(
        (&shown["execution"]["arn"], &shown["execution"]["status"]),
        (&serde_json::json!(execution), &serde_json::json!("RUNNING")),
        "{shown}"
    );
    let cancelled = on_sfn(&["workflow-run", "cancel", &run_id, "--format", "json"]);
    assert_eq!(cancelled.code, 0, "{}", cancelled.stderr);
    assert_eq!(json(&cancelled.stdout)["status"], "cancelled");
    assert_eq!(
        engine.execution_state(&execution).await.expect("describe"),
        "ABORTED"
    );

    // A run whose execution ended without it: refused, as a finished run is.
    let other = on_sfn(&["dispatch", "--workflow", "triage", "--input", input]);
    let other = json(&other.stdout);
    let other_execution = other["execution_arn"].as_str().expect("an execution");
    engine
        .stop_execution(other_execution, "stopped in the console")
        .await
        .expect("stopped");
    let other_id = other["run_id"].as_str().expect("a run id");
    let refused = on_sfn(&["workflow-run", "cancel", other_id]);
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("cannot be cancelled: its execution is "),
        "{}",
        refused.stderr
    );
}
