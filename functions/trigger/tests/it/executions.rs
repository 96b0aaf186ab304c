//! Workflow runs on Step Functions through the real trigger function, on moto (docs/reference.md
//! §5.6): each execution's stage messages are read off the stage queue as the function's event
//! source delivers them, and each stage's callback comes over the function URL's HTTP route.
//! A three-stage chain and a diamond run to success, a 200 KiB result reaches the next
//! stage's payload, a repeated callback changes nothing, and a failed stage fails the
//! execution with nothing dispatched after it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use astrolift_dispatch::dispatch::MemoryDispatchQueue;
use astrolift_dispatch::render::key_hash;
use astrolift_dispatch::state_machine::compile;
use astrolift_dispatch::step_functions::StepFunctions;
use astrolift_dispatch::testing::MotoStages;
use astrolift_dispatch::workflow::create_run;
use astrolift_manifest::Limits;
use astrolift_manifest::workflow::{Stage, Workflow};
use astrolift_store::StateStore;
use astrolift_store::state::tasks::record_render;
use astrolift_store::state::{WorkflowRecord, WorkflowStatus};
use astrolift_store::testing::{aws_endpoint, unique_name};
use astrolift_trigger::TriggerService;
use serde_json::{Value, json};

use crate::{REPO, TestSecrets, registered_on_sqlite};

const KEY: &str = "an-execution-cluster-key";
const ROLE: &str = "arn:aws:iam::123456789012:role/astrolift-state-machines";

/// A workflow of `emr-triage` stages with these needs; each stage's payload carries the
/// results of its needs.
fn workflow(stages: &[(&str, &[&str])]) -> Workflow {
    let stages = stages
        .iter()
        .map(|(name, needs)| {
            let carried: Vec<String> = needs
                .iter()
                .map(|n| format!("{n}: .stages.{n}.result"))
                .collect();
            Stage {
                name: (*name).to_owned(),
                agent: "emr-triage".to_owned(),
                manifest: "agents/triage/astrolift.toml".to_owned(),
                needs: needs.iter().map(|n| (*n).to_owned()).collect(),
                payload: (!carried.is_empty()).then(|| format!("{{{}}}", carried.join(", "))),
                ..Stage::default()
            }
        })
        .collect();
    Workflow {
        path: "workflows/flow.toml".to_owned(),
        name: "flow".to_owned(),
        description: None,
        stages,
    }
}

/// The function's state, a registered monorepo, and the workflow stored.
struct Stack {
    state: Arc<dyn StateStore>,
    queue: Arc<MemoryDispatchQueue>,
    service: Arc<TriggerService>,
    engine: StepFunctions,
    moto: MotoStages,
    _dir: tempfile::TempDir,
}

async fn stack(test: &str) -> Option<Stack> {
    let endpoint = aws_endpoint(test)?;
    let (state, dir) = registered_on_sqlite().await;
    let moto = MotoStages::start(&endpoint, &unique_name("executions"))
        .await
        .expect("moto's Step Functions and a stage queue");
    let engine = StepFunctions::new(aws_sdk_sfn::Client::new(&moto.sdk), ROLE);
    let queue = Arc::new(MemoryDispatchQueue::new());
    let service = TriggerService::new(
        state.clone(),
        Arc::new(TestSecrets),
        queue.clone(),
        Limits::DEFAULT,
    )
    .with_engine(Some(engine.clone()));
    Some(Stack {
        state,
        queue,
        service: Arc::new(service),
        engine,
        moto,
        _dir: dir,
    })
}

impl Stack {
    /// Starts a run of `workflow` as `dispatch --workflow` does: its execution's ARN.
    async fn start(&self, workflow: &Workflow) -> String {
        let record = WorkflowRecord {
            repository: REPO.into(),
            name: workflow.name.clone(),
            path: workflow.path.clone(),
            status: WorkflowStatus::Active,
            content_hash: format!("sha256:{}", unique_name("h")),
            definition: serde_json::to_string(workflow).expect("json"),
            commit: "c1".into(),
            updated_at: 1,
            version: 1,
            state_machine_arn: None,
            retired_state_machines: Vec::new(),
        };
        let mut definition = compile(workflow, &self.moto.queue)
            .expect("compiles")
            .definition;
        // The compiled retries wait 30 s, doubling; a test need not.
        shorten_retries(&mut definition);
        let arn = self
            .engine
            .put_state_machine(&unique_name("flow"), &definition)
            .await
            .expect("created");
        let run = create_run(self.state.as_ref(), &record, &json!({}), 1)
            .await
            .expect("a run");
        let input = json!({"run_id": run.id, "input": {}});
        self.engine
            .start_execution(&arn, &run.id, &input)
            .await
            .expect("started")
    }

    /// Delivers what the stage queue holds to the function, as its event source does.
    async fn deliver_stages(&self) -> usize {
        let received = self
            .moto
            .sqs
            .receive_message()
            .queue_url(&self.moto.queue)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        let records: Vec<Value> = received
            .messages()
            .iter()
            .map(|m| json!({"messageId": m.message_id(), "body": m.body(), "eventSource": "aws:sqs"}))
            .collect();
        if records.is_empty() {
            return 0;
        }
        let answer = astrolift_fn_trigger::handle_invocation(
            &self.service,
            &json!({ "Records": records }).to_string(),
        )
        .await
        .expect("handled");
        assert_eq!(answer, json!({"batchItemFailures": []}));
        for message in received.messages() {
            self.moto
                .sqs
                .delete_message()
                .queue_url(&self.moto.queue)
                .receipt_handle(message.receipt_handle().unwrap_or_default())
                .send()
                .await
                .expect("delete");
        }
        records.len()
    }

    /// POSTs `report` to `/callbacks/{task_id}` through the function URL: (status, body).
    async fn callback(&self, task_id: &str, report: &Value) -> (u64, Value) {
        let path = format!("/callbacks/{task_id}");
        let event = json!({
            "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
            "headers": {"content-type": "application/json", "authorization": format!("Bearer {KEY}")},
            "requestContext": {"http": {"method": "POST", "path": path, "protocol": "HTTP/1.1",
                                        "sourceIp": "203.0.113.10", "userAgent": "runtime"},
                               "accountId": "anonymous", "apiId": "a", "domainName": "a.lambda-url",
                               "requestId": "r", "routeKey": "$default", "stage": "$default",
                               "time": "29/Nov/2026:19:00:00 +0000", "timeEpoch": 1795978800000u64},
            "body": report.to_string(), "isBase64Encoded": false,
        });
        let answer = astrolift_fn_trigger::handle_invocation(&self.service, &event.to_string())
            .await
            .expect("handled");
        let body = serde_json::from_str(answer["body"].as_str().unwrap_or_default())
            .unwrap_or(Value::Null);
        (answer["statusCode"].as_u64().unwrap_or(0), body)
    }

    /// Runs the execution: each dispatched stage reports `report_of(stage)`, until it ends.
    /// Returns its end state and the dispatches, in order.
    async fn run(
        &self,
        execution: &str,
        report_of: impl Fn(&str) -> Value,
    ) -> (String, Vec<astrolift_dispatch::message::DispatchMessage>) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let first = self.queue.messages().len();
        let mut answered = first;
        loop {
            self.deliver_stages().await;
            let messages = self.queue.messages();
            for message in &messages[answered..] {
                let stage = message.source.record_id();
                let stage = stage.rsplit(':').next().unwrap_or_default().to_owned();
                record_render(
                    self.state.tasks(),
                    &message.task_id,
                    Some(&key_hash(KEY)),
                    2,
                )
                .await
                .expect("rendered");
                let (status, body) = self.callback(&message.task_id, &report_of(&stage)).await;
                assert_eq!(status, 200, "{body}");
                let again = self.callback(&message.task_id, &report_of(&stage)).await;
                assert_eq!(
                    again.0, 409,
                    "a repeated callback changes nothing: {}",
                    again.1
                );
            }
            answered = messages.len();
            let state = self
                .engine
                .execution_state(execution)
                .await
                .expect("describe");
            if state != "RUNNING" {
                return (state, self.queue.messages().split_off(first));
            }
            assert!(Instant::now() < deadline, "the execution did not end");
        }
    }
}

/// Every `Retry` of `definition` waits 1 s.
fn shorten_retries(definition: &mut Value) {
    match definition {
        Value::Object(map) => {
            if let Some(Value::Array(retriers)) = map.get_mut("Retry") {
                for retrier in retriers {
                    retrier["IntervalSeconds"] = json!(1);
                }
            }
            map.values_mut().for_each(shorten_retries);
        }
        Value::Array(items) => items.iter_mut().for_each(shorten_retries),
        _ => {}
    }
}

fn succeeded(stage: &str) -> Value {
    json!({"status": "succeeded", "result": {"from": stage}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_and_a_diamond_run_to_success_through_the_trigger_function() {
    let Some(stack) =
        stack("a_chain_and_a_diamond_run_to_success_through_the_trigger_function").await
    else {
        return;
    };
    let chain = workflow(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]);
    let execution = stack.start(&chain).await;
    let big = "x".repeat(200 * 1024);
    let (end, dispatched) = stack
        .run(&execution, |stage| match stage {
            "a" => json!({"status": "succeeded", "result": {"blob": big}}),
            other => succeeded(other),
        })
        .await;
    assert_eq!(end, "SUCCEEDED");
    assert_eq!(dispatched.len(), 3);
    let b = dispatched[1].payload.as_ref().expect("b's payload");
    assert_eq!(
        b["a"]["blob"].as_str().map(str::len),
        Some(200 * 1024),
        "a's 200 KiB result reaches b"
    );

    let diamond = workflow(&[("a", &[]), ("b", &["a"]), ("c", &["a"]), ("d", &["b", "c"])]);
    let execution = stack.start(&diamond).await;
    let (end, dispatched) = stack.run(&execution, succeeded).await;
    assert_eq!(end, "SUCCEEDED");
    assert_eq!(dispatched.len(), 4);
    let d = dispatched[3].payload.as_ref().expect("d's payload");
    assert_eq!(
        (&d["b"]["from"], &d["c"]["from"]),
        (&json!("b"), &json!("c"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_stage_fails_the_execution_and_nothing_runs_after_it() {
    let Some(stack) = stack("a_failed_stage_fails_the_execution_and_nothing_runs_after_it").await
    else {
        return;
    };
    let chain = workflow(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]);
    let execution = stack.start(&chain).await;
    let (end, dispatched) = stack
        .run(&execution, |stage| match stage {
            "b" => json!({"status": "failed", "result": {"error": "no"}}),
            other => succeeded(other),
        })
        .await;
    assert_eq!(end, "FAILED");
    assert_eq!(dispatched.len(), 2, "c is never dispatched");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_attempt_is_retried_and_a_silent_stage_times_out() {
    let Some(stack) = stack("a_failed_attempt_is_retried_and_a_silent_stage_times_out").await
    else {
        return;
    };
    let mut retried = workflow(&[("a", &[]), ("b", &["a"])]);
    retried.stages[0].retries = 1;
    let execution = stack.start(&retried).await;
    let attempts = std::sync::atomic::AtomicUsize::new(0);
    let (end, dispatched) = stack
        .run(&execution, |stage| {
            let first =
                stage == "a" && attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
            if first {
                json!({"status": "failed", "result": {"error": "flaky"}})
            } else {
                succeeded(stage)
            }
        })
        .await;
    assert_eq!(end, "SUCCEEDED");
    let keys: Vec<&str> = dispatched
        .iter()
        .map(|m| m.idempotency_key.as_str())
        .collect();
    assert_eq!(keys.len(), 3, "a twice, then b: {keys:?}");
    assert!(
        keys[1].ends_with(":a:2"),
        "the retry is attempt 2: {keys:?}"
    );

    // A stage that never calls back: its execution fails when its timeout (30 s) passes.
    let mut silent = workflow(&[("a", &[])]);
    silent.stages[0].timeout_seconds = 30;
    let execution = stack.start(&silent).await;
    assert_eq!(stack.deliver_stages().await, 1);
    let deadline = Instant::now() + Duration::from_secs(90);
    while stack
        .engine
        .execution_state(&execution)
        .await
        .expect("describe")
        == "RUNNING"
    {
        assert!(
            Instant::now() < deadline,
            "the silent stage did not time out"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(
        stack
            .engine
            .execution_state(&execution)
            .await
            .expect("describe"),
        "FAILED"
    );
}
