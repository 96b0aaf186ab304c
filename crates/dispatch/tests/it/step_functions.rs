//! The Step Functions engine's calls against moto's interpreter (`POST /moto-api/config`
//! with `{"stepfunctions": {"execute_state_machine": true}}`): a compiled workflow's state
//! machine, put twice under its name as one machine; an execution named by the run id,
//! started twice as one; each stage's message on the stage queue with its task token; the
//! tokens' results driving the execution to its end; a token answered twice is stale.

use std::time::{Duration, Instant};

use astrolift_dispatch::state_machine::compile;
use astrolift_dispatch::step_functions::{StepFunctions, TaskAnswer};
use astrolift_manifest::workflow::{Stage, Workflow};
use astrolift_store::testing::{aws_endpoint, unique_name};
use serde_json::{Value, json};

const ROLE: &str = "arn:aws:iam::123456789012:role/astrolift-state-machines";

fn two_stages() -> Workflow {
    // `classify` sends heartbeats (`heartbeat = "60s"`); `route` does not.
    let stage = |name: &str, needs: &[&str], heartbeat: Option<u32>| Stage {
        name: name.to_owned(),
        agent: "emr-triage".to_owned(),
        needs: needs.iter().map(|n| (*n).to_owned()).collect(),
        heartbeat_seconds: heartbeat,
        ..Stage::default()
    };
    Workflow {
        path: "workflows/triage.toml".to_owned(),
        name: "triage".to_owned(),
        description: None,
        stages: vec![
            stage("classify", &[], Some(60)),
            stage("route", &["classify"], None),
        ],
    }
}

/// Turns on moto's execution of state machines.
async fn execute_state_machines(endpoint: &str) {
    let config = json!({"stepfunctions": {"execute_state_machine": true}});
    let response = reqwest::Client::new()
        .post(format!("{endpoint}/moto-api/config"))
        .header("content-type", "application/json")
        .body(config.to_string())
        .send()
        .await
        .expect("moto answers");
    assert!(response.status().is_success(), "{}", response.status());
}

/// The next stage message on `queue`: its body, deleted from the queue.
async fn next_stage(sqs: &aws_sdk_sqs::Client, queue: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let received = sqs
            .receive_message()
            .queue_url(queue)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        if let Some(message) = received.messages().first() {
            let receipt = message.receipt_handle().unwrap_or_default();
            sqs.delete_message()
                .queue_url(queue)
                .receipt_handle(receipt)
                .send()
                .await
                .expect("delete");
            return serde_json::from_str(message.body().unwrap_or_default()).expect("JSON");
        }
        assert!(Instant::now() < deadline, "no stage message");
    }
}

async fn state_at_end(engine: &StepFunctions, execution: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let state = engine.execution_state(execution).await.expect("describe");
        if state != "RUNNING" {
            return state;
        }
        assert!(Instant::now() < deadline, "the execution is still running");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stages_wait_for_their_tokens_and_repeats_change_nothing() {
    let Some(endpoint) = aws_endpoint("stages_wait_for_their_tokens_and_repeats_change_nothing")
    else {
        return;
    };
    execute_state_machines(&endpoint).await;
    let sdk = astrolift_store::load_sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let name = unique_name("stages");
    let queue = sqs
        .create_queue()
        .queue_name(&name)
        .send()
        .await
        .expect("stage queue")
        .queue_url
        .expect("a URL");
    let engine = StepFunctions::new(aws_sdk_sfn::Client::new(&sdk), ROLE);
    let machine = compile(&two_stages(), &queue).expect("compiles");
    let arn = engine
        .put_state_machine(&name, &machine.definition)
        .await
        .expect("created");
    let again = engine
        .put_state_machine(&name, &machine.definition)
        .await
        .expect("found");
    assert_eq!(arn, again, "one name, one machine");
    // The same name with another stage queue (the stack's queue moved): updated in place.
    let moved = compile(&two_stages(), "https://sqs.example/elsewhere").expect("compiles");
    let updated = engine
        .put_state_machine(&name, &moved.definition)
        .await
        .expect("updated");
    assert_eq!(arn, updated);
    engine
        .put_state_machine(&name, &machine.definition)
        .await
        .expect("back to the stage queue");

    let input = json!({"run_id": "run-d-1", "input": {"ticket": "OPS-7"}});
    let execution = engine
        .start_execution(&arn, "run-d-1", &input)
        .await
        .expect("started");
    let repeated = engine
        .start_execution(&arn, "run-d-1", &input)
        .await
        .expect("the same run");
    assert_eq!(execution, repeated);

    let first = next_stage(&sqs, &queue).await;
    assert_eq!(
        (&first["run_id"], &first["stage"]),
        (&json!("run-d-1"), &json!("classify"))
    );
    let token = first["task_token"].as_str().expect("a token").to_owned();
    assert_eq!(
        engine.send_task_heartbeat(&token).await.expect("heartbeat"),
        TaskAnswer::Taken
    );
    let output = json!({"stage": "classify", "status": "succeeded"});
    assert_eq!(
        engine
            .send_task_success(&token, &output)
            .await
            .expect("success"),
        TaskAnswer::Taken
    );
    let second = next_stage(&sqs, &queue).await;
    assert_eq!(second["stage"], "route");
    let route = second["task_token"].as_str().expect("a token").to_owned();
    let output = json!({"stage": "route", "status": "succeeded"});
    engine
        .send_task_success(&route, &output)
        .await
        .expect("success");
    assert_eq!(state_at_end(&engine, &execution).await, "SUCCEEDED");
    // The first token again, after its task ended: stale, nothing changes.
    assert_eq!(
        engine
            .send_task_success(&token, &output)
            .await
            .expect("answered"),
        TaskAnswer::Stale
    );

    // A stage's failure fails the execution; the idle machine is then deleted.
    let failing = engine
        .start_execution(&arn, "run-d-2", &json!({"run_id": "run-d-2", "input": {}}))
        .await
        .expect("started");
    let stage = next_stage(&sqs, &queue).await;
    let token = stage["task_token"].as_str().expect("a token");
    engine
        .send_task_failure(token, "failed", "the agent reported failed")
        .await
        .expect("failure");
    assert_eq!(state_at_end(&engine, &failing).await, "FAILED");
    let described = aws_sdk_sfn::Client::new(&sdk)
        .describe_execution()
        .execution_arn(&failing)
        .send()
        .await
        .expect("describe");
    assert_eq!(
        (described.error(), described.cause()),
        (Some("failed"), Some("the agent reported failed"))
    );

    // Stopped while a stage waits: aborted at once, and the stage's token is stale.
    let stopped = engine
        .start_execution(&arn, "run-d-3", &json!({"run_id": "run-d-3", "input": {}}))
        .await
        .expect("started");
    let stage = next_stage(&sqs, &queue).await;
    let token = stage["task_token"].as_str().expect("a token");
    // Running executions keep their machine.
    assert!(!engine.delete_if_idle(&arn).await.expect("listed"));
    engine
        .stop_execution(&stopped, "cancelled by `astrolift workflow-run cancel`")
        .await
        .expect("stopped");
    assert_eq!(
        engine.execution_state(&stopped).await.expect("describe"),
        "ABORTED"
    );
    assert_eq!(
        engine
            .send_task_success(token, &output)
            .await
            .expect("answered"),
        TaskAnswer::Stale
    );
    assert!(engine.delete_if_idle(&arn).await.expect("deleted"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_stage_waits_on_a_new_token() {
    let Some(endpoint) = aws_endpoint("a_retried_stage_waits_on_a_new_token") else {
        return;
    };
    execute_state_machines(&endpoint).await;
    let sdk = astrolift_store::load_sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let name = unique_name("retries");
    let queue = sqs
        .create_queue()
        .queue_name(&name)
        .send()
        .await
        .expect("stage queue")
        .queue_url
        .expect("a URL");
    let mut workflow = two_stages();
    workflow.stages.truncate(1);
    workflow.stages[0].retries = 1;
    let mut definition = compile(&workflow, &queue).expect("compiles").definition;
    // The compiled retry waits 30 s; a test need not.
    definition["States"]["classify"]["Retry"][0]["IntervalSeconds"] = json!(1);
    let engine = StepFunctions::new(aws_sdk_sfn::Client::new(&sdk), ROLE);
    let arn = engine
        .put_state_machine(&name, &definition)
        .await
        .expect("created");
    let input = json!({"run_id": "run-r-1", "input": {}});
    let execution = engine
        .start_execution(&arn, "run-r-1", &input)
        .await
        .expect("started");
    let first = next_stage(&sqs, &queue).await;
    let first_token = first["task_token"].as_str().expect("a token").to_owned();
    engine
        .send_task_failure(&first_token, "failed", "attempt 1 failed")
        .await
        .expect("failure");
    let second = next_stage(&sqs, &queue).await;
    let second_token = second["task_token"].as_str().expect("a token").to_owned();
    assert_ne!(first_token, second_token, "each attempt has its own token");
    let output = json!({"stage": "classify", "status": "succeeded"});
    engine
        .send_task_success(&second_token, &output)
        .await
        .expect("success");
    assert_eq!(state_at_end(&engine, &execution).await, "SUCCEEDED");
}
