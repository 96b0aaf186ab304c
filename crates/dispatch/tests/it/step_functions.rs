//! The Step Functions engine's calls against moto's interpreter (`POST /moto-api/config`
//! with `{"stepfunctions": {"execute_state_machine": true}}`): a compiled workflow's state
//! machine, put twice under its name as one machine; an execution named by the run id,
//! started twice as one; each stage's message on the stage queue with its task token; the
//! tokens' results driving the execution to its end; a token answered twice is stale.

use std::time::{Duration, Instant};

use astrolift_dispatch::state_machine::compile;
use astrolift_dispatch::step_functions::{StepFunctions, TaskAnswer};
use astrolift_dispatch::testing::{MotoStages, next_stage_message};
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

/// What a test on moto's Step Functions works with, and a unique name for its resources.
struct World {
    sdk: aws_config::SdkConfig,
    sqs: aws_sdk_sqs::Client,
    name: String,
    queue: String,
}

/// `None` (the test skips) without a local AWS endpoint.
async fn world(test: &str, prefix: &str) -> Option<World> {
    let endpoint = aws_endpoint(test)?;
    let name = unique_name(prefix);
    let moto = MotoStages::start(&endpoint, &name)
        .await
        .expect("moto's Step Functions and a stage queue");
    Some(World {
        sdk: moto.sdk,
        sqs: moto.sqs,
        name,
        queue: moto.queue,
    })
}

/// The next stage message on `queue`, as JSON.
async fn next_stage(sqs: &aws_sdk_sqs::Client, queue: &str) -> Value {
    let message = next_stage_message(sqs, queue)
        .await
        .expect("a stage message");
    serde_json::to_value(message).expect("json")
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
    let Some(World {
        sdk,
        sqs,
        name,
        queue,
    }) = world(
        "stages_wait_for_their_tokens_and_repeats_change_nothing",
        "stages",
    )
    .await
    else {
        return;
    };
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
    let Some(World {
        sdk,
        sqs,
        name,
        queue,
    }) = world("a_retried_stage_waits_on_a_new_token", "retries").await
    else {
        return;
    };
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

/// Records each stage dispatch once per idempotency key, as the real dispatcher does.
#[derive(Default)]
struct Recorded {
    orders: std::sync::Mutex<Vec<astrolift_dispatch::workflow::StageDispatch>>,
}

impl astrolift_dispatch::workflow::StageDispatcher for Recorded {
    fn dispatch<'a>(
        &'a self,
        stage: &'a astrolift_dispatch::workflow::StageDispatch,
        _now: i64,
    ) -> astrolift_store::BoxFuture<
        'a,
        Result<
            Result<String, astrolift_dispatch::workflow::Refusal>,
            astrolift_dispatch::workflow::WorkflowError,
        >,
    > {
        Box::pin(async move {
            let mut orders = self.orders.lock().expect("orders");
            if !orders
                .iter()
                .any(|o| o.idempotency_key == stage.idempotency_key)
            {
                orders.push(stage.clone());
            }
            Ok(Ok(format!("d-{}", stage.idempotency_key.replace(':', "-"))))
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_execution_dispatches_each_stage_and_callbacks_answer_its_token() {
    use astrolift_dispatch::execution::{
        StageMessage, StageMessageOutcome, answer_stage_callback, dispatch_stage_message,
    };
    use astrolift_dispatch::workflow::{StageAttempt, create_run};
    use astrolift_manifest::Limits;
    use astrolift_store::state::{
        SqliteStateStore, StageResult, StageStatus, StateStore, TaskStatus, WorkflowRecord,
        WorkflowStatus,
    };

    let Some(World {
        sdk,
        sqs,
        name,
        queue,
    }) = world(
        "an_execution_dispatches_each_stage_and_callbacks_answer_its_token",
        "execution",
    )
    .await
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let state = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("sqlite");
    let mut workflow = two_stages();
    workflow.stages[0].retries = 1;
    workflow.stages[1].payload = Some("{labels: .stages.classify.result.labels}".into());
    let record = WorkflowRecord {
        repository: "o/r".into(),
        name: workflow.name.clone(),
        path: workflow.path.clone(),
        status: WorkflowStatus::Active,
        content_hash: "sha256:0123abcd".into(),
        definition: serde_json::to_string(&workflow).expect("json"),
        commit: "c1".into(),
        updated_at: 1,
        version: 1,
        state_machine_arn: None,
        retired_state_machines: Vec::new(),
    };
    let engine = StepFunctions::new(aws_sdk_sfn::Client::new(&sdk), ROLE);
    let mut definition = compile(&workflow, &queue).expect("compiles").definition;
    // The compiled retry waits 30 s; a test need not.
    definition["States"]["classify"]["Retry"][0]["IntervalSeconds"] = json!(1);
    let arn = engine
        .put_state_machine(&name, &definition)
        .await
        .expect("created");
    let run = create_run(&state, &record, &json!({"ticket": "OPS-7"}), 10)
        .await
        .expect("a run");
    let input = json!({"run_id": run.id, "input": {"ticket": "OPS-7"}});
    let execution = engine
        .start_execution(&arn, &run.id, &input)
        .await
        .expect("started");
    let dispatcher = Recorded::default();
    let limits = Limits::DEFAULT;

    let first: StageMessage =
        serde_json::from_value(next_stage(&sqs, &queue).await).expect("a stage message");
    let dispatched = dispatch_stage_message(&state, &dispatcher, &engine, &first, 11, &limits)
        .await
        .expect("dispatched");
    let StageMessageOutcome::Dispatched {
        dispatch_id,
        attempt,
    } = dispatched.clone()
    else {
        panic!("{dispatched:?}");
    };
    assert_eq!(attempt, 1);
    // A redelivered message: the same dispatch, nothing new recorded.
    let again = dispatch_stage_message(&state, &dispatcher, &engine, &first, 12, &limits)
        .await
        .expect("redelivered");
    assert_eq!(again, dispatched);
    assert_eq!(dispatcher.orders.lock().expect("orders").len(), 1);
    let stored = state
        .workflows()
        .get_workflow_run(&run.id)
        .await
        .expect("read")
        .expect("run");
    assert_eq!(
        stored.stages["classify"].dispatch_id.as_deref(),
        Some(dispatch_id.as_str())
    );

    // The attempt fails: the execution retries with a new token, the next attempt's dispatch.
    let first_attempt = StageAttempt {
        run_id: run.id.clone(),
        stage: "classify".into(),
        attempt: 1,
    };
    let answered =
        answer_stage_callback(&state, &engine, &first_attempt, TaskStatus::Failed, "boom")
            .await
            .expect("failure");
    assert_eq!(answered, Some(TaskAnswer::Taken));
    let retry: StageMessage =
        serde_json::from_value(next_stage(&sqs, &queue).await).expect("a stage message");
    assert_ne!(retry.task_token, first.task_token);
    let retried = dispatch_stage_message(&state, &dispatcher, &engine, &retry, 12, &limits)
        .await
        .expect("dispatched");
    assert!(
        matches!(retried, StageMessageOutcome::Dispatched { attempt: 2, .. }),
        "{retried:?}"
    );
    let keys: Vec<String> = dispatcher
        .orders
        .lock()
        .expect("orders")
        .iter()
        .map(|o| o.idempotency_key.clone())
        .collect();
    assert_eq!(keys.len(), 2, "each attempt its own dispatch: {keys:?}");
    // The first attempt's token answers nothing now.
    let stale = answer_stage_callback(&state, &engine, &first_attempt, TaskStatus::Succeeded, "")
        .await
        .expect("answered");
    assert_eq!(
        stale, None,
        "the run keeps only the current attempt's token"
    );

    // Its callback records the result, then answers the token: the next stage is sent.
    let report = StageResult {
        run_id: run.id.clone(),
        stage: "classify".into(),
        attempt: 2,
        status: StageStatus::Succeeded,
        result: Some(r#"{"labels":["p1"]}"#.into()),
        error: None,
        reported_at: 13,
    };
    state
        .workflows()
        .put_stage_result(&report)
        .await
        .expect("stored");
    let classify = StageAttempt {
        run_id: run.id.clone(),
        stage: "classify".into(),
        attempt: 2,
    };
    let answered = answer_stage_callback(&state, &engine, &classify, TaskStatus::Running, "")
        .await
        .expect("heartbeat");
    assert!(answered.is_some());
    let answered = answer_stage_callback(&state, &engine, &classify, TaskStatus::Succeeded, "")
        .await
        .expect("success");
    assert_eq!(answered, Some(TaskAnswer::Taken));
    let second: StageMessage =
        serde_json::from_value(next_stage(&sqs, &queue).await).expect("a stage message");
    assert_eq!(second.stage, "route");
    dispatch_stage_message(&state, &dispatcher, &engine, &second, 14, &limits)
        .await
        .expect("dispatched");
    let orders = dispatcher.orders.lock().expect("orders").clone();
    assert_eq!(
        orders[2].payload,
        Some(json!({"labels": ["p1"]})),
        "{orders:#?}"
    );
    let route = StageAttempt {
        run_id: run.id.clone(),
        stage: "route".into(),
        attempt: 1,
    };
    answer_stage_callback(&state, &engine, &route, TaskStatus::Succeeded, "")
        .await
        .expect("success");
    assert_eq!(state_at_end(&engine, &execution).await, "SUCCEEDED");
    // A late, repeated callback: stale.
    let late = answer_stage_callback(&state, &engine, &route, TaskStatus::Succeeded, "")
        .await
        .expect("answered");
    assert_eq!(late, Some(TaskAnswer::Stale));
}
