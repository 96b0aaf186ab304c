//! The jq crate: validation compiles with positions, and the sandbox (thread
//! mode, as in any library test harness) runs under its limits. Worker-process
//! containment is tested through the shipped binaries (crates/cli
//! `containment`, functions/trigger `release`).

use std::sync::Arc;

use astrolift_jq::sandbox::{Job, SandboxError, SandboxedProgram, WorkerResult, run_in_worker};
use astrolift_jq::{JqErrorKind, JqLimits, JqProgram};

fn job(text: &str, max_outputs: usize, gate: bool) -> Job {
    Job {
        program: Arc::new(SandboxedProgram::compile(text).expect("compiles")),
        max_outputs,
        gate,
    }
}

async fn run(
    body: &str,
    jobs: Vec<Job>,
    limits: JqLimits,
) -> Vec<Result<Vec<serde_json::Value>, SandboxError>> {
    match run_in_worker(body.as_bytes().to_vec(), jobs, &limits).await {
        WorkerResult::Ran(results) => results,
        other => panic!("not run: {other:?}"),
    }
}

#[test]
fn validation_and_sandbox_refuse_the_same_programs() {
    for text in ["env", ".a | {b: }", "input"] {
        let validation = JqProgram::compile(text).expect_err(text);
        let sandbox = SandboxedProgram::compile(text).expect_err(text);
        assert_eq!(validation, sandbox, "{text}");
    }
    let error = JqProgram::compile(".a | {b: }").expect_err("syntax");
    assert_eq!((error.kind, error.offset), (JqErrorKind::Syntax, 9));
}

#[tokio::test]
async fn a_filter_gates_the_mapping() {
    let jobs = || vec![job(".ok", 1, true), job("{key: .key}", 1, false)];
    let passed = run(r#"{"ok":true,"key":"A-1"}"#, jobs(), JqLimits::DEFAULT).await;
    assert_eq!(passed.len(), 2);
    assert_eq!(passed[1], Ok(vec![serde_json::json!({"key": "A-1"})]));
    let filtered = run(r#"{"ok":false,"key":"A-1"}"#, jobs(), JqLimits::DEFAULT).await;
    assert_eq!(
        filtered.len(),
        1,
        "the mapping does not run after a failed gate"
    );
}

#[tokio::test]
async fn a_loop_stops_at_the_deadline() {
    let limits = JqLimits {
        time_ms: 50,
        ..JqLimits::DEFAULT
    };
    let results = run("{}", vec![job("[repeat(1)] | length", 1, false)], limits).await;
    assert_eq!(results, vec![Err(SandboxError::TimedOut(50))]);
}

#[tokio::test]
async fn output_is_charged_at_the_limit_and_refused_past_it() {
    // `"aaaa"` serializes to 6 bytes, quotes included.
    let at = JqLimits {
        output: 6,
        ..JqLimits::DEFAULT
    };
    let results = run("{}", vec![job("\"aaaa\"", 1, false)], at).await;
    assert_eq!(results, vec![Ok(vec![serde_json::json!("aaaa")])]);
    let past = JqLimits { output: 5, ..at };
    let results = run("{}", vec![job("\"aaaa\"", 1, false)], past).await;
    assert_eq!(results, vec![Err(SandboxError::OutputTooLarge(5))]);
}

#[tokio::test]
async fn a_body_that_is_not_json_is_reported_as_such() {
    let result = run_in_worker(b"{".to_vec(), vec![job(".", 1, false)], &JqLimits::DEFAULT).await;
    assert!(matches!(result, WorkerResult::BadJson(_)), "{result:?}");
}
