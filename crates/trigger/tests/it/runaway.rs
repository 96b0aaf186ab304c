//! The jq sandbox: runaway programs give a 422 within a bounded time, and
//! the process keeps serving.

use std::time::{Duration, Instant};

use astrolift_trigger::{Outcome, TriggerError, evaluate};

use crate::support::{FixedSecrets, binding, limits, signed};

/// Runs `payload` as a mapping and returns the error and how long it took.
async fn run_mapping(payload: &str) -> (Result<Outcome, TriggerError>, Duration) {
    let binding = binding(None, Some(payload));
    let body = br#"{"issue":{"key":"A-1"}}"#;
    let start = Instant::now();
    let result = evaluate(
        &binding,
        crate::support::PROJECT,
        &signed(body),
        body,
        &FixedSecrets::new(),
        &limits(),
    )
    .await;
    (result, start.elapsed())
}

async fn assert_runaway_422(program: &str, expect: &str) {
    let (result, took) = run_mapping(program).await;
    let error = result.expect_err(program);
    assert_eq!(error.status(), 422, "{program}: {error}");
    let message = error.to_string();
    assert!(message.contains(expect), "{program}: {message}");
    // The deadline is 100 ms; the caller never waits much past deadline + grace.
    assert!(
        took < Duration::from_millis(1_000),
        "{program} took {took:?}"
    );
    // And the process still evaluates the next request correctly.
    let (next, _) = run_mapping("{key: .issue.key}").await;
    assert_eq!(
        next.expect("next request"),
        Outcome::Dispatch {
            payload: Some(serde_json::json!({"key": "A-1"}))
        }
    );
}

#[tokio::test]
async fn tail_recursion_forever_times_out() {
    assert_runaway_422("def f: f; f", "ran longer than 100 ms").await;
}

#[tokio::test]
async fn unbounded_recursion_is_stopped_before_the_stack_overflows() {
    assert_runaway_422("def f: 1+f; f", "recursed too deeply").await;
}

#[tokio::test]
async fn huge_range_collection_times_out() {
    assert_runaway_422("[range(1e9)]", "ran longer than 100 ms").await;
}

#[tokio::test]
async fn endless_generator_stops_at_the_second_output() {
    assert_runaway_422("repeat(1)", "yields more than 1 value").await;
}

#[tokio::test]
async fn endless_generator_collected_times_out() {
    assert_runaway_422("[repeat(1)]", "ran longer than 100 ms").await;
}

#[tokio::test]
async fn try_cannot_swallow_the_budget() {
    assert_runaway_422("[limit(1e9; repeat(1))?]", "ran longer than 100 ms").await;
    // These recurse through `try`/`catch`, so which bound stops them first
    // depends on the machine's speed: the depth limit on a fast machine, the
    // 100 ms deadline on a loaded CI runner. Either is a bounded 422, and
    // both messages end "and was stopped"; the test accepts both.
    assert_runaway_422("def f: try f catch f; f", "and was stopped").await;
    assert_runaway_422("def f: try error(1) catch f; f", "and was stopped").await;
    assert_runaway_422("def f: (1+f)?; f", "and was stopped").await;
}

#[tokio::test]
async fn nested_definitions_are_guarded_everywhere() {
    assert_runaway_422("{a: (def g: g; g)}", "ran longer than 100 ms").await;
    assert_runaway_422(".[def g: g; g]", "ran longer than 100 ms").await;
    assert_runaway_422("\"\\(def g: g; g)\"", "ran longer than 100 ms").await;
    assert_runaway_422(
        "reduce (def g: g; g) as $x (0; .)",
        "ran longer than 100 ms",
    )
    .await;
    assert_runaway_422("[while(true; .)]", "ran longer than 100 ms").await;
    assert_runaway_422("[recurse(.)]", "ran longer than 100 ms").await;
    assert_runaway_422("last(range(1e12))", "ran longer than 100 ms").await;
}

#[tokio::test]
async fn output_size_is_bounded() {
    let (result, _) = run_mapping("{big: (\"abcdefgh\" * 40000)}").await;
    let error = result.expect_err("too large");
    assert_eq!(error.status(), 422);
    assert!(
        error.to_string().contains("larger than 262144 bytes"),
        "{error}"
    );
}

#[tokio::test]
async fn deeply_nested_output_is_refused() {
    let (result, _) = run_mapping("{deep: (reduce range(1000) as $i (0; [.]))}").await;
    let error = result.expect_err("too deep");
    assert_eq!(error.status(), 422);
    assert!(error.to_string().contains("nests deeper"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn many_runaways_in_parallel_leave_the_process_up() {
    // Half the evaluation slots, so that other tests of this binary running
    // at the same time are never refused as busy.
    let parallel = (astrolift_jq::sandbox::max_concurrent() / 2).max(1);
    let mut runs = tokio::task::JoinSet::new();
    for _ in 0..parallel {
        runs.spawn(run_mapping("def f: f; f"));
    }
    for (result, _) in runs.join_all().await {
        assert_eq!(result.expect_err("runaway").status(), 422);
    }
    if parallel > 1 {
        // They really ran at the same time.
        assert!(astrolift_jq::sandbox::peak_in_flight() >= 2);
    }
    let (next, _) = run_mapping("{key: .issue.key}").await;
    assert!(next.is_ok());
}

#[tokio::test]
async fn deep_values_built_in_a_loop_do_not_overflow_when_dropped() {
    // Nests as deep as 100 ms allows; converting refuses it, and dropping it
    // (a native recursion with no guard) must fit in the worker's stack.
    let (result, _) = run_mapping("{deep: (reduce range(1e7) as $i (0; [.]))}").await;
    let error = result.expect_err("too deep or too long");
    assert_eq!(error.status(), 422, "{error}");
    let (next, _) = run_mapping("{key: .issue.key}").await;
    assert!(next.is_ok());
}
