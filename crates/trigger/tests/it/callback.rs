//! `POST /callbacks/{task_id}` through `handle_callback`: every answer (202 running, 200
//! terminal, 400, 401 for a missing, wrong or earlier render's key, 404, 409, 413 at the
//! result limit and one byte past it), no answer naming the key, and a two-stage workflow
//! advanced by its stages' callbacks, a duplicate or a timed-out stage's late one changing
//! nothing.

use std::sync::{Arc, Mutex};

use astrolift_dispatch::Answer;
use astrolift_dispatch::callback::{
    CallbackContext, MAX_RESULT_DEPTH, callback_body_limit, handle_callback, nesting_depth,
};
use astrolift_dispatch::content::{ContentSource, RecordOnlyContent};
use astrolift_dispatch::dispatch::{MemoryDispatchQueue, Origin, record};
use astrolift_dispatch::message::Source;
use astrolift_dispatch::render::key_hash;
use astrolift_dispatch::report::{ResultReporter, TerminalResult};
use astrolift_dispatch::stage_deadlines::enforce_deadlines;
use astrolift_dispatch::step_functions::StepFunctions;
use astrolift_dispatch::workflow::{RecordingDispatcher, RunProgress, stage_key, start_run};
use astrolift_manifest::Limits;
use astrolift_store::BoxFuture;
use astrolift_store::StateStore;
use astrolift_store::state::tasks::record_render;
use astrolift_store::state::{
    ReportTarget, RunStatus, SqliteStateStore, TaskStatus, WorkflowRecord,
};
use serde_json::{Value, json};

use crate::message::request;
use crate::support::{headers, limits};
use crate::workflow::{REPO, put_workflow, register_agents, stage, triage_of};

const NOW: i64 = 1_767_225_600;
const KEY: &str = "the-latest-cluster-key";

struct Subject {
    state: Arc<dyn StateStore>,
    queue: MemoryDispatchQueue,
    reporter: Option<RecordingReporter>,
    /// Runs on Step Functions (the callbacks answer task tokens) when set.
    engine: Option<StepFunctions>,
    _dir: tempfile::TempDir,
}

/// Every report handed to it.
#[derive(Debug, Default)]
struct RecordingReporter {
    reports: Mutex<Vec<(ReportTarget, TerminalResult)>>,
}

impl ResultReporter for RecordingReporter {
    fn report<'a>(
        &'a self,
        target: &'a ReportTarget,
        result: &'a TerminalResult,
    ) -> BoxFuture<'a, Result<(), String>> {
        if let Ok(mut reports) = self.reports.lock() {
            reports.push((target.clone(), result.clone()));
        }
        Box::pin(async { Err("recorded, and failing: the callback still answers 200".to_owned()) })
    }
}

const CONTENT: RecordOnlyContent = RecordOnlyContent { lenient: true };

impl Subject {
    async fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("sqlite");
        let subject = Subject {
            state: Arc::new(state),
            queue: MemoryDispatchQueue::new(),
            reporter: Some(RecordingReporter::default()),
            engine: None,
            _dir: dir,
        };
        register_agents(subject.state.as_ref()).await;
        subject
    }

    fn dispatcher(&self) -> RecordingDispatcher<'_> {
        RecordingDispatcher {
            state: self.state.as_ref(),
            queue: Some(&self.queue),
            content: &CONTENT,
            callback_base: None,
        }
    }

    /// A manual dispatch of `triage`, rendered with `KEY`: its task id.
    async fn rendered_dispatch(&self) -> String {
        self.rendered_dispatch_from(&Origin::TRUSTED).await
    }

    /// A dispatch of `triage` caused by `origin`, rendered with `KEY`: its task id.
    async fn rendered_dispatch_from(&self, origin: &Origin) -> String {
        let agent = self
            .state
            .list_agents(REPO)
            .await
            .expect("agents")
            .into_iter()
            .find(|a| a.name == "triage")
            .expect("triage");
        let content = CONTENT.content(&agent, NOW).await.expect("content");
        let mut request = request(&agent, Source::Manual, None, &content, None);
        request.origin = origin;
        let task_id = record(self.state.as_ref(), &request)
            .await
            .expect("records")
            .dispatch
            .task_id;
        self.render_with(&task_id, KEY).await;
        task_id
    }

    async fn render_with(&self, task_id: &str, key: &str) {
        record_render(self.state.tasks(), task_id, Some(&key_hash(key)), NOW)
            .await
            .expect("rendered");
    }

    /// A callback with `key` as its Bearer key.
    async fn call(&self, task_id: &str, key: &str, body: &[u8]) -> Answer {
        self.call_with(task_id, Some(&format!("Bearer {key}")), body)
            .await
    }

    /// A callback with this `Authorization` header, if any.
    async fn call_with(&self, task_id: &str, authorization: Option<&str>, body: &[u8]) -> Answer {
        let headers = match authorization {
            Some(value) => headers(&[("authorization", value)]),
            None => headers(&[]),
        };
        let dispatcher = self.dispatcher();
        let context = CallbackContext {
            state: self.state.as_ref(),
            dispatcher: &dispatcher,
            limits: &limits(),
            now: NOW + 10,
            reporter: self.reporter.as_ref().map(|r| r as &dyn ResultReporter),
            engine: self.engine.as_ref(),
        };
        handle_callback(context, task_id, &headers, body).await
    }
}

/// What a row sends and the status it gets: (what, task, Authorization, body, status).
type Case<'a> = (&'a str, &'a str, Option<&'a str>, Vec<u8>, u16);

fn report(status: &str, result: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"status": status, "result": result})).expect("json")
}

#[tokio::test]
async fn every_answer_of_the_callback_route() {
    let subject = Subject::new().await;
    let task = subject.rendered_dispatch().await;
    let running = report("running", json!({"step": 1}));
    let bearer = format!("Bearer {KEY}");
    let ours = Some(bearer.as_str());
    // (what, task, Authorization, body, status), in order: each row sees the ones before.
    let cases: Vec<Case<'_>> = vec![
        ("no key", &task, None, running.clone(), 401),
        (
            "another scheme",
            &task,
            Some("Basic dXNlcjpwYXNz"),
            running.clone(),
            401,
        ),
        ("an empty key", &task, Some("Bearer "), running.clone(), 401),
        (
            "a wrong key",
            &task,
            Some("Bearer not-the-key"),
            running.clone(),
            401,
        ),
        (
            "an unknown task",
            "no-such-task",
            ours,
            running.clone(),
            404,
        ),
        ("not JSON", &task, ours, b"{not json".to_vec(), 400),
        ("no status", &task, ours, b"{\"result\":1}".to_vec(), 400),
        (
            "an unknown status",
            &task,
            ours,
            report("done", json!(1)),
            400,
        ),
        (
            "queued is not reported",
            &task,
            ours,
            report("queued", json!(1)),
            400,
        ),
        ("running", &task, ours, running.clone(), 202),
        ("running again", &task, ours, running.clone(), 202),
        (
            "succeeded",
            &task,
            ours,
            report("succeeded", json!({"ok": true})),
            200,
        ),
        (
            "a second terminal report",
            &task,
            ours,
            report("failed", json!(null)),
            409,
        ),
        ("running after the end", &task, ours, running.clone(), 409),
    ];
    for (what, task_id, authorization, body, status) in cases {
        let answer = subject.call_with(task_id, authorization, &body).await;
        assert_eq!(answer.status, status, "{what}: {}", answer.body);
        assert!(
            !answer.body.to_string().contains(KEY),
            "{what}: the key is never echoed"
        );
    }
    let stored = subject
        .state
        .tasks()
        .get_task(&task)
        .await
        .expect("read")
        .expect("the task");
    assert_eq!(
        (stored.status, stored.result.as_deref(), stored.finished_at),
        (TaskStatus::Succeeded, Some("{\"ok\":true}"), Some(NOW + 10))
    );
}

#[tokio::test]
async fn only_the_latest_render_key_is_accepted() {
    let subject = Subject::new().await;
    let task = subject.rendered_dispatch().await;
    subject.render_with(&task, "a-later-key").await;
    let body = report("succeeded", json!(1));
    assert_eq!(subject.call(&task, KEY, &body).await.status, 401);
    assert_eq!(subject.call(&task, "a-later-key", &body).await.status, 200);
}

#[tokio::test]
async fn a_result_at_the_limit_is_recorded_and_one_byte_past_it_is_413() {
    let subject = Subject::new().await;
    let limit = usize::try_from(Limits::DEFAULT.callback_result).expect("fits");
    // A JSON string of n characters serializes to n + 2 bytes.
    for (extra, status) in [(0, 200), (1, 413)] {
        let task = subject.rendered_dispatch().await;
        let result = json!("x".repeat(limit - 2 + extra));
        assert_eq!(result.to_string().len(), limit + extra);
        let answer = subject.call(&task, KEY, &report("succeeded", result)).await;
        assert_eq!(answer.status, status, "{extra} past: {}", answer.body);
    }
    let task = subject.rendered_dispatch().await;
    let limit = usize::try_from(callback_body_limit(&Limits::DEFAULT)).expect("fits");
    let huge = vec![b' '; limit + 1];
    assert_eq!(subject.call(&task, KEY, &huge).await.status, 413);
}

async fn two_stage_workflow(subject: &Subject) -> WorkflowRecord {
    let workflow = triage_of(vec![
        stage("collect", "triage", &[], Some("{issue: .input.issue}")),
        stage(
            "report",
            "reporter",
            &["collect"],
            Some("{summary: .stages.collect.result}"),
        ),
    ]);
    put_workflow(subject.state.as_ref(), &workflow).await
}

/// A run of [`two_stage_workflow`], started with `{"issue": 7}`.
async fn start_two_stage_run(subject: &Subject) -> RunProgress {
    let record = two_stage_workflow(subject).await;
    start_run_of(subject, &record).await
}

/// A run of the stored workflow `record` on the state-store engine, with `{"issue": 7}`.
async fn start_run_of(subject: &Subject, record: &WorkflowRecord) -> RunProgress {
    start_run(
        subject.state.as_ref(),
        &subject.dispatcher(),
        record,
        &json!({"issue": 7}),
        NOW,
        &limits(),
    )
    .await
    .expect("starts")
}

/// The task of a run's stage's dispatch, rendered with `KEY`.
async fn stage_task(subject: &Subject, run_id: &str, stage: &str) -> String {
    let dispatch = subject
        .state
        .get_dispatch(&stage_key(run_id, stage, 1))
        .await
        .expect("read")
        .expect("the stage's dispatch");
    subject.render_with(&dispatch.task_id, KEY).await;
    dispatch.task_id
}

#[tokio::test]
async fn callbacks_advance_a_two_stage_workflow_once() {
    let subject = Subject::new().await;
    let started = start_two_stage_run(&subject).await;
    let run_id = started.run.id.clone();
    let collect = stage_task(&subject, &run_id, "collect").await;
    let done = report("succeeded", json!({"count": 2}));
    let answer = subject.call(&collect, KEY, &done).await;
    assert_eq!(
        (answer.status, &answer.body["workflow_run"]),
        (200, &json!(run_id))
    );
    let run = |subject: &Subject| {
        let id = run_id.clone();
        let state = Arc::clone(&subject.state);
        async move {
            state
                .workflows()
                .get_workflow_run(&id)
                .await
                .expect("read")
                .expect("the run")
        }
    };
    let after_first = run(&subject).await;
    assert_eq!(after_first.stages["report"].status.as_str(), "dispatched");
    assert_eq!(subject.queue.messages().len(), 2, "collect, then report");

    // The same callback again: 409, and the run does not move.
    let again = subject.call(&collect, KEY, &done).await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(run(&subject).await, after_first);
    assert_eq!(subject.queue.messages().len(), 2);

    let report_task = stage_task(&subject, &run_id, "report").await;
    let reporter_message = &subject.queue.messages()[1];
    assert_eq!(
        reporter_message.payload,
        Some(json!({"summary": {"count": 2}}))
    );
    let answer = subject
        .call(&report_task, KEY, &report("succeeded", json!("sent")))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(run(&subject).await.status, RunStatus::Succeeded);
}

/// docs/reference.md §5.6: a stage that reconcile timed out takes no later report of that
/// attempt: its callback is recorded on the task (200), and the run does not move.
#[tokio::test]
async fn a_late_callback_of_a_timed_out_stage_changes_nothing() {
    let subject = Subject::new().await;
    let started = start_two_stage_run(&subject).await;
    let collect = stage_task(&subject, &started.run.id, "collect").await;
    let past_a_day = NOW + 24 * 3600 + 1;
    let dispatcher = subject.dispatcher();
    let pass = enforce_deadlines(subject.state.as_ref(), &dispatcher, past_a_day, &limits())
        .await
        .expect("a pass");
    assert_eq!(pass.timed_out, 1);
    let workflows = subject.state.workflows();
    let timed_out = workflows
        .get_workflow_run(&started.run.id)
        .await
        .expect("read");
    let timed_out = timed_out.expect("the run");
    assert_eq!(timed_out.status, RunStatus::Failed);

    let answer = subject
        .call(&collect, KEY, &report("succeeded", json!({"count": 2})))
        .await;
    assert_eq!(
        (answer.status, &answer.body["workflow_run"]),
        (200, &json!(started.run.id)),
        "{}",
        answer.body
    );
    let after = workflows
        .get_workflow_run(&started.run.id)
        .await
        .expect("read");
    assert_eq!(after, Some(timed_out));
    assert_eq!(
        subject.queue.messages().len(),
        1,
        "the next stage is not dispatched"
    );
}

fn nested(depth: usize) -> Value {
    let mut value = json!("leaf");
    for _ in 0..depth {
        value = json!([value]);
    }
    value
}

/// docs/reference.md §8: a stage result one level past `MAX_RESULT_DEPTH` (and one of 126
/// levels, which serde_json's recursion limit alone would accept) is 422 with nothing
/// recorded; the runtime's retry with a result at the bound is recorded and advances the
/// run, whose next payload reads it.
#[tokio::test]
async fn a_result_past_the_depth_bound_is_422_and_the_retry_advances_the_run() {
    let subject = Subject::new().await;
    let started = start_two_stage_run(&subject).await;
    let collect = stage_task(&subject, &started.run.id, "collect").await;
    assert_eq!(nesting_depth(&nested(MAX_RESULT_DEPTH)), MAX_RESULT_DEPTH);
    for depth in [126, MAX_RESULT_DEPTH + 1] {
        let answer = subject
            .call(&collect, KEY, &report("succeeded", nested(depth)))
            .await;
        assert_eq!(answer.status, 422, "{depth}: {}", answer.body);
        let error = answer.body["error"].as_str().unwrap_or("");
        assert!(error.contains(&format!("{depth} levels")), "{error}");
    }
    assert_eq!(subject.queue.messages().len(), 1, "nothing advanced");
    let answer = subject
        .call(
            &collect,
            KEY,
            &report("succeeded", nested(MAX_RESULT_DEPTH)),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let run = subject
        .state
        .workflows()
        .get_workflow_run(&started.run.id)
        .await
        .expect("read")
        .expect("the run");
    assert_eq!(run.stages["report"].status.as_str(), "dispatched");
    assert_eq!(
        subject.queue.messages()[1].payload,
        Some(json!({"summary": nested(MAX_RESULT_DEPTH)}))
    );
}

/// docs/reference.md §10: the first terminal report of a dispatch whose trigger sets
/// `report` goes to the reporter once, with the result; a `running` report, a duplicate
/// terminal one (409) and a dispatch without `report` go nowhere. A reporter that fails
/// does not change the answer: the status is recorded.
#[tokio::test]
async fn the_first_terminal_report_is_reported_back_once() {
    let subject = Subject::new().await;
    let target = ReportTarget {
        kind: "comment".into(),
        repository: REPO.into(),
        installation_id: 31,
        number: 7,
        head_sha: None,
    };
    let origin = Origin {
        sender: Some("octocat".into()),
        trusted: true,
        report: Some(target.clone()),
    };
    let task = subject.rendered_dispatch_from(&origin).await;
    let plain = subject.rendered_dispatch().await;
    let reports = || {
        let reporter = subject.reporter.as_ref().expect("a reporter");
        reporter
            .reports
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    };
    let running = subject
        .call(&task, KEY, &report("running", json!({})))
        .await;
    assert_eq!(running.status, 202);
    assert!(reports().is_empty(), "running is not reported");
    let done = report("succeeded", json!({"labels": ["p1"]}));
    assert_eq!(subject.call(&task, KEY, &done).await.status, 200);
    assert_eq!(subject.call(&task, KEY, &done).await.status, 409);
    assert_eq!(subject.call(&plain, KEY, &done).await.status, 200);
    let reports = reports();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let (reported_to, result) = &reports[0];
    assert_eq!(reported_to, &target);
    assert_eq!(result.status, TaskStatus::Succeeded);
    assert_eq!(result.agent, "triage");
    assert_eq!(result.result, Some(json!({"labels": ["p1"]})));
    assert_eq!(result.conclusion(), "success");
    assert!(
        result.markdown().contains("\"p1\""),
        "{}",
        result.markdown()
    );
}

/// The packager's callback (docs/reference.md "Dependency layers"): a malformed result is
/// 400 and leaves the layer build pending; a good one makes it ready; a repeat is 409.
#[tokio::test]
async fn a_packager_callback_records_its_layers_and_refuses_a_malformed_result() {
    use astrolift_dispatch::layers::{LayerOutcome, PackagerContext, request_layers};
    use astrolift_store::state::{LayerRequest, LayerStatus};
    let subject = Subject::new().await;
    let agents = subject.state.list_agents(REPO).await.expect("agents");
    let triage = agents.iter().find(|a| a.name == "triage").expect("triage");
    let key = "c".repeat(64);
    let request = LayerRequest {
        repository: REPO.to_owned(),
        manifest_path: triage.manifest_path.clone(),
        name: triage.name.clone(),
        project_id: triage.project_id.clone(),
        artifact_ref: format!("sha256:{}", "d".repeat(64)),
        layer_key: key.clone(),
        dependency_files: Vec::new(),
    };
    let context = PackagerContext {
        state: subject.state.as_ref(),
        queue: &subject.queue,
        content: &CONTENT,
        packager: Some("triage"),
        callback_base: None,
        now: NOW,
    };
    let twice = [request.clone(), request];
    let outcomes = request_layers(context, &twice).await.expect("store");
    let LayerOutcome::Dispatched { dispatch_id } = &outcomes[0] else {
        panic!("{outcomes:?}")
    };
    assert_eq!(outcomes[1], LayerOutcome::InFlight);
    assert_eq!(subject.queue.messages().len(), 1);
    let task = subject
        .state
        .tasks()
        .get_dispatch_task(dispatch_id)
        .await
        .expect("read");
    let task_id = task.expect("a task").task_id;
    subject.render_with(&task_id, KEY).await;
    let build = || async {
        let layers = subject.state.layers();
        layers
            .get_layer_build(&key)
            .await
            .expect("read")
            .expect("a build")
    };
    let layer = |mount_path: &str| {
        json!({"status": "ok", "layers": [{"layer_id": "l", "name": "deps",
            "mount_path": mount_path, "digest": format!("sha256:{}", "e".repeat(64))}]})
    };
    let malformed = subject
        .call(&task_id, KEY, &report("succeeded", layer("venv")))
        .await;
    assert_eq!(malformed.status, 400, "{:?}", malformed.body);
    assert_eq!(build().await.status, LayerStatus::Pending);
    let task = subject
        .state
        .tasks()
        .get_task(&task_id)
        .await
        .expect("read");
    assert_eq!(task.expect("a task").status, TaskStatus::Queued);
    let good = subject
        .call(&task_id, KEY, &report("succeeded", layer("/tmp/venv")))
        .await;
    assert_eq!(good.status, 200, "{:?}", good.body);
    let ready = build().await;
    assert_eq!(ready.status, LayerStatus::Ready);
    assert_eq!(ready.layers[0].mount_path, "/tmp/venv");
    let again = subject
        .call(&task_id, KEY, &report("succeeded", layer("/tmp/venv")))
        .await;
    assert_eq!(again.status, 409);
    // Built: the next request reuses it.
    let reused = request_layers(context, &twice[..1]).await.expect("store");
    assert_eq!(reused, [LayerOutcome::Reused]);
}

#[tokio::test(flavor = "multi_thread")]
async fn on_step_functions_a_stage_callback_answers_its_token_and_a_state_run_still_advances() {
    use astrolift_dispatch::execution::{StageMessageOutcome, dispatch_stage_message};
    use astrolift_dispatch::state_machine::compile;
    use astrolift_dispatch::testing::{MotoStages, next_stage_message};
    use astrolift_dispatch::workflow::create_run;

    let Some(endpoint) = astrolift_store::testing::aws_endpoint(
        "on_step_functions_a_stage_callback_answers_its_token_and_a_state_run_still_advances",
    ) else {
        return;
    };
    let mut subject = Subject::new().await;
    let record = two_stage_workflow(&subject).await;
    let name = astrolift_store::testing::unique_name("callbacks");
    let MotoStages { sdk, sqs, queue } = MotoStages::start(&endpoint, &name)
        .await
        .expect("moto's Step Functions and a stage queue");
    let engine = StepFunctions::new(
        aws_sdk_sfn::Client::new(&sdk),
        "arn:aws:iam::123456789012:role/astrolift-state-machines",
    );
    subject.engine = Some(engine.clone());
    let workflow = serde_json::from_str(&record.definition).expect("a workflow");
    let machine = compile(&workflow, &queue).expect("compiles");
    let arn = engine
        .put_state_machine(&name, &machine.definition)
        .await
        .expect("created");
    let run = create_run(subject.state.as_ref(), &record, &json!({"issue": 7}), NOW)
        .await
        .expect("a run");
    let input = json!({"run_id": run.id, "input": {"issue": 7}});
    let execution = engine
        .start_execution(&arn, &run.id, &input)
        .await
        .expect("started");

    // Each stage: its message dispatches it, its callback answers its token.
    for stage in ["collect", "report"] {
        let message = next_stage_message(&sqs, &queue)
            .await
            .expect("a stage message");
        assert_eq!(message.stage, stage);
        let dispatcher = subject.dispatcher();
        let outcome = dispatch_stage_message(
            subject.state.as_ref(),
            &dispatcher,
            &engine,
            &message,
            NOW + 1,
            &limits(),
        )
        .await
        .expect("dispatched");
        let StageMessageOutcome::Dispatched { dispatch_id, .. } = outcome else {
            panic!("{outcome:?}");
        };
        let task = subject
            .state
            .tasks()
            .get_dispatch_task(&dispatch_id)
            .await
            .expect("read")
            .expect("its task");
        subject.render_with(&task.task_id, KEY).await;
        let running = subject
            .call(&task.task_id, KEY, &report("running", json!({})))
            .await;
        assert_eq!(running.status, 202, "{:?}", running.body);
        let done = report("succeeded", json!({"summary": stage}));
        let answer = subject.call(&task.task_id, KEY, &done).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        assert_eq!(answer.body["workflow_run"], json!(run.id));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while engine.execution_state(&execution).await.expect("describe") == "RUNNING" {
        assert!(
            std::time::Instant::now() < deadline,
            "the execution did not end"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        engine.execution_state(&execution).await.expect("describe"),
        "SUCCEEDED"
    );

    // A run of the state-store engine on the same process still advances on its callbacks.
    let progress = start_run_of(&subject, &record).await;
    let (_, first) = &progress.dispatched[0];
    let task = subject
        .state
        .tasks()
        .get_dispatch_task(first)
        .await
        .expect("read")
        .expect("its task");
    subject.render_with(&task.task_id, KEY).await;
    let answer = subject
        .call(&task.task_id, KEY, &report("succeeded", json!({"x": 1})))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let advanced = subject
        .state
        .workflows()
        .get_workflow_run(&progress.run.id)
        .await
        .expect("read")
        .expect("run");
    assert_eq!(
        advanced.stages["report"].status.as_str(),
        "dispatched",
        "{advanced:#?}"
    );
}
