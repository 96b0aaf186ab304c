//! Workflow runs on both state stores (SQLite; DynamoDB against moto): stages
//! dispatched in dependency order with payloads over `{input, stages}`, a
//! failed stage stops its dependents, duplicate and concurrent reports of a
//! stage advance the run once, and the callback entry point.

use std::collections::BTreeMap;
use std::sync::Arc;

use astrolift_dispatch::content::RecordOnlyContent;
use astrolift_dispatch::dispatch::MemoryDispatchQueue;
use astrolift_dispatch::workflow::{
    RecordingDispatcher, RunProgress, advance_workflow_on_callback, report_stage, stage_statuses,
    start_run,
};
use astrolift_manifest::workflow::{Stage, Workflow};
use astrolift_store::StateStore;
use astrolift_store::state::{
    Agent, AgentChange, AgentStatus, AuditAction, ChangeSet, DynamoStateStore, RunStatus,
    SqliteStateStore, StageStatus, WorkflowRecord, WorkflowStatus,
};
use astrolift_store::testing::{aws_endpoint, unique_name};
use serde_json::{Value, json};

use crate::support::limits;

pub(crate) const REPO: &str = "octo/flows";

/// A state store with two active agents and one inactive one.
pub(crate) struct Subject {
    pub(crate) state: Arc<dyn StateStore>,
    _dir: Option<tempfile::TempDir>,
}

pub(crate) async fn sqlite() -> Subject {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("sqlite");
    Subject {
        state: Arc::new(state),
        _dir: Some(dir),
    }
}

pub(crate) async fn dynamodb(test: &str) -> Option<Subject> {
    aws_endpoint(test)?;
    let store = DynamoStateStore::from_env(&unique_name("wf"))
        .await
        .expect("client");
    store.create_table().await.expect("table");
    Some(Subject {
        state: Arc::new(store),
        _dir: None,
    })
}

fn agent(name: &str, status: AgentStatus) -> AgentChange {
    let agent = Agent {
        repository: REPO.to_owned(),
        manifest_path: format!("agents/{name}/astrolift.toml"),
        project_id: "p-1".to_owned(),
        name: name.to_owned(),
        alias: None,
        status,
        snapshot_hash: format!("snap-{name}"),
        payload_digest: "sha256:00".to_owned(),
        commit: "c1".to_owned(),
        version: 0,
        updated_at: 1,
        bindings_digest: None,
        layer_key: None,
        package_build: None,
    };
    AgentChange::new(agent, None, AuditAction::Added, "c1", "test", 1)
}

pub(crate) fn stage(name: &str, agent: &str, needs: &[&str], payload: Option<&str>) -> Stage {
    Stage {
        name: name.to_owned(),
        agent: agent.to_owned(),
        manifest: format!("agents/{agent}/astrolift.toml"),
        skills: vec!["pr-review@1.2.0".to_owned()],
        needs: needs.iter().map(|n| (*n).to_owned()).collect(),
        payload: payload.map(str::to_owned),
        ..Stage::default()
    }
}

/// The workflow `triage` (`workflows/triage.toml`) of these `stages`.
pub(crate) fn triage_of(stages: Vec<Stage>) -> Workflow {
    Workflow {
        path: "workflows/triage.toml".to_owned(),
        name: "triage".to_owned(),
        description: None,
        stages,
    }
}

/// collect → label → report (report also needs collect).
fn triage() -> Workflow {
    triage_of(vec![
        stage("collect", "triage", &[], Some("{issue: .input.issue}")),
        stage(
            "label",
            "triage",
            &["collect"],
            Some("{count: .stages.collect.result.count}"),
        ),
        stage(
            "report",
            "reporter",
            &["collect", "label"],
            Some("{summary: .stages.collect.result, labels: .stages.label.result}"),
        ),
    ])
}

/// Registers the agents (once) and `workflow`.
pub(crate) async fn register(subject: &Subject, workflow: &Workflow) -> WorkflowRecord {
    let known = subject.state.list_agents(REPO).await.expect("agents").len();
    if known == 0 {
        register_agents(subject.state.as_ref()).await;
    }
    put_workflow(subject.state.as_ref(), workflow).await
}

/// Registers the active agents `triage` and `reporter` and the orphaned `retired` in `REPO`.
pub(crate) async fn register_agents(state: &dyn StateStore) {
    state
        .apply(ChangeSet {
            repository: REPO.to_owned(),
            agents: vec![
                agent("triage", AgentStatus::Active),
                agent("reporter", AgentStatus::Active),
                agent("retired", AgentStatus::Orphaned),
            ],
            synced: None,
        })
        .await
        .expect("agents");
}

/// Registers `workflow` in `REPO`.
pub(crate) async fn put_workflow(state: &dyn StateStore, workflow: &Workflow) -> WorkflowRecord {
    let definition = serde_json::to_string(workflow).expect("json");
    let record = WorkflowRecord {
        repository: REPO.to_owned(),
        name: workflow.name.clone(),
        path: workflow.path.clone(),
        status: WorkflowStatus::Active,
        content_hash: "sha256:test".to_owned(),
        definition,
        commit: "c1".to_owned(),
        updated_at: 1,
        version: 1,
        state_machine_arn: None,
        retired_state_machines: Vec::new(),
    };
    state
        .workflows()
        .put_workflow(&record, None)
        .await
        .expect("workflow");
    record
}

pub(crate) fn dispatched(progress: &RunProgress) -> Vec<(String, Option<Value>)> {
    progress
        .dispatched
        .iter()
        .map(|(order, _)| (order.stage.clone(), order.payload.clone()))
        .collect()
}

/// The dispatcher of these tests: the subject's state, `queue`, and content
/// read from the record alone.
pub(crate) fn test_dispatcher<'a>(
    subject: &'a Subject,
    queue: &'a MemoryDispatchQueue,
) -> RecordingDispatcher<'a> {
    RecordingDispatcher {
        state: subject.state.as_ref(),
        queue: Some(queue),
        content: &RecordOnlyContent { lenient: true },
        callback_base: None,
    }
}

/// The report of `stage`'s current attempt, at 10.
pub(crate) async fn report(
    subject: &Subject,
    queue: &MemoryDispatchQueue,
    run: &str,
    stage: &str,
    status: StageStatus,
    result: Value,
) -> RunProgress {
    let dispatcher = test_dispatcher(subject, queue);
    report_stage(
        subject.state.as_ref(),
        &dispatcher,
        run,
        stage,
        status,
        Some(&result),
        10,
        &limits(),
    )
    .await
    .expect("advances")
}

/// Starts a run of `record` at 5.
pub(crate) async fn start(
    subject: &Subject,
    queue: &MemoryDispatchQueue,
    record: &WorkflowRecord,
) -> RunProgress {
    let dispatcher = test_dispatcher(subject, queue);
    start_run(
        subject.state.as_ref(),
        &dispatcher,
        record,
        &json!({"issue": 7}),
        5,
        &limits(),
    )
    .await
    .expect("starts")
}

async fn stages_dispatch_in_dependency_order(subject: Subject) {
    let record = register(&subject, &triage()).await;
    let queue = MemoryDispatchQueue::new();
    let started = start(&subject, &queue, &record).await;
    let run = started.run.id.clone();
    assert_eq!(
        dispatched(&started),
        [("collect".to_owned(), Some(json!({"issue": 7})))]
    );
    assert_eq!(started.dispatched[0].0.skill_refs, ["pr-review@1.2.0"]);
    assert_eq!(started.run.status, RunStatus::Running);

    let collected = report(
        &subject,
        &queue,
        &run,
        "collect",
        StageStatus::Succeeded,
        json!({"count": 2}),
    )
    .await;
    assert_eq!(
        dispatched(&collected),
        [("label".to_owned(), Some(json!({"count": 2})))]
    );
    let version = collected.run.version;

    // The same report again, and a contradicting one: the first stands.
    for status in [StageStatus::Succeeded, StageStatus::Failed] {
        let again = report(
            &subject,
            &queue,
            &run,
            "collect",
            status,
            json!({"count": 9}),
        )
        .await;
        assert!(!again.changed);
        assert!(again.dispatched.is_empty());
        assert_eq!(again.run.version, version);
    }

    let labelled = report(
        &subject,
        &queue,
        &run,
        "label",
        StageStatus::Succeeded,
        json!(["bug"]),
    )
    .await;
    assert_eq!(
        dispatched(&labelled),
        [(
            "report".to_owned(),
            Some(json!({"summary": {"count": 2}, "labels": ["bug"]}))
        )]
    );
    let done = report(
        &subject,
        &queue,
        &run,
        "report",
        StageStatus::Succeeded,
        Value::Null,
    )
    .await;
    assert_eq!(done.run.status, RunStatus::Succeeded);
    assert!(done.dispatched.is_empty());

    // One queued message per stage, each recorded under its stage's key.
    let messages: Vec<String> = queue
        .messages()
        .iter()
        .map(|m| m.agent.manifest.clone())
        .collect();
    assert_eq!(
        messages,
        [
            "agents/triage/astrolift.toml",
            "agents/triage/astrolift.toml",
            "agents/reporter/astrolift.toml"
        ]
    );
}

async fn a_failed_stage_stops_its_dependents(subject: Subject) {
    let record = register(&subject, &triage()).await;
    let queue = MemoryDispatchQueue::new();
    let run = start(&subject, &queue, &record).await.run.id;
    let failed = report(
        &subject,
        &queue,
        &run,
        "collect",
        StageStatus::Cancelled,
        Value::Null,
    )
    .await;
    assert_eq!(failed.run.status, RunStatus::Failed);
    assert!(failed.dispatched.is_empty());
    assert_eq!(
        stage_statuses(&failed.run),
        BTreeMap::from([
            ("collect", "cancelled"),
            ("label", "skipped"),
            ("report", "skipped")
        ])
    );
    assert_eq!(queue.messages().len(), 1);
}

async fn a_payload_or_agent_that_cannot_run_fails_the_stage(subject: Subject) {
    let mut workflow = triage();
    workflow.stages[1].payload = Some("\"not an object\"".to_owned());
    workflow.stages.push(stage("cleanup", "retired", &[], None));
    let record = register(&subject, &workflow).await;
    let queue = MemoryDispatchQueue::new();
    let started = start(&subject, &queue, &record).await;
    // `cleanup`'s agent is orphaned: the run fails at once, `collect` still runs.
    assert_eq!(started.run.status, RunStatus::Failed);
    let cleanup = &started.run.stages["cleanup"];
    assert_eq!(cleanup.status, StageStatus::Failed);
    assert!(cleanup.error.as_deref().unwrap_or("").contains("orphaned"));
    assert_eq!(dispatched(&started).len(), 1);

    let mut workflow = triage();
    workflow.name = "bad-payload".to_owned();
    workflow.stages[1].payload = Some("\"not an object\"".to_owned());
    let record = register(&subject, &workflow).await;
    let run = start(&subject, &queue, &record).await.run.id;
    let after = report(
        &subject,
        &queue,
        &run,
        "collect",
        StageStatus::Succeeded,
        json!({}),
    )
    .await;
    assert_eq!(after.run.status, RunStatus::Failed);
    let label = &after.run.stages["label"];
    assert_eq!(label.status, StageStatus::Failed);
    assert!(
        label
            .error
            .as_deref()
            .unwrap_or("")
            .contains("object or null")
    );
    assert_eq!(after.run.stages["report"].status, StageStatus::Skipped);
}

/// A result nested deeper than the evaluator reads back (126 levels, as a callback accepted
/// before `MAX_RESULT_DEPTH`): the stage that reads it fails with the reason, and the run
/// ends, on the first report and on its repeat, instead of waiting for ever.
async fn a_result_the_run_cannot_read_fails_the_next_stage(subject: Subject) {
    let record = register(&subject, &triage()).await;
    let queue = MemoryDispatchQueue::new();
    let run = start(&subject, &queue, &record).await.run.id;
    let mut deep = json!(1);
    for _ in 0..126 {
        deep = json!([deep]);
    }
    for _ in 0..2 {
        let after = report(
            &subject,
            &queue,
            &run,
            "collect",
            StageStatus::Succeeded,
            deep.clone(),
        )
        .await;
        assert_eq!(after.run.status, RunStatus::Failed, "{after:#?}");
        let label = &after.run.stages["label"];
        assert_eq!(label.status, StageStatus::Failed);
        let error = label.error.as_deref().unwrap_or("");
        assert!(error.contains("cannot be evaluated"), "{error}");
        assert_eq!(after.run.stages["report"].status, StageStatus::Skipped);
    }
}

/// Two reports of one stage at once: one advance, one dispatch of the next stage.
async fn concurrent_reports_advance_once(subject: Subject) {
    let record = register(&subject, &triage()).await;
    let queue = Arc::new(MemoryDispatchQueue::new());
    let run = start(&subject, &queue, &record).await.run.id;
    let tasks: Vec<_> = (0..2)
        .map(|i| {
            let state = Arc::clone(&subject.state);
            let queue = Arc::clone(&queue);
            let run = run.clone();
            tokio::spawn(async move {
                let dispatcher = RecordingDispatcher {
                    state: state.as_ref(),
                    queue: Some(queue.as_ref()),
                    content: &RecordOnlyContent { lenient: true },
                    callback_base: None,
                };
                report_stage(
                    state.as_ref(),
                    &dispatcher,
                    &run,
                    "collect",
                    StageStatus::Succeeded,
                    Some(&json!({"count": i})),
                    10,
                    &limits(),
                )
                .await
                .expect("advances")
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.expect("joins"));
    }
    let changed: Vec<&RunProgress> = outcomes.iter().filter(|o| o.changed).collect();
    assert_eq!(changed.len(), 1, "{outcomes:#?}");
    let final_run = subject
        .state
        .workflows()
        .get_workflow_run(&run)
        .await
        .expect("read")
        .expect("run");
    assert_eq!(
        final_run.version, 3,
        "created, collect dispatched, label dispatched"
    );
    assert_eq!(final_run.stages["label"].status, StageStatus::Dispatched);
    let labels: Vec<_> = queue
        .messages()
        .into_iter()
        .filter(|m| m.payload.is_some() && m.payload != Some(json!({"issue": 7})))
        .collect();
    assert_eq!(labels.len(), 1, "the label stage is queued once");
}

async fn the_callback_entry_point_finds_the_stage(subject: Subject) {
    let record = register(&subject, &triage()).await;
    let queue = MemoryDispatchQueue::new();
    let started = start(&subject, &queue, &record).await;
    let key = started.dispatched[0].0.idempotency_key.clone();
    let dispatch = subject
        .state
        .get_dispatch(&key)
        .await
        .expect("read")
        .expect("recorded under the stage key");
    assert_eq!(dispatch.id, started.dispatched[0].1);
    let dispatcher = test_dispatcher(&subject, &queue);
    let progress = advance_workflow_on_callback(
        subject.state.as_ref(),
        &dispatcher,
        &dispatch,
        StageStatus::Succeeded,
        Some(&json!({"count": 1})),
        20,
        &limits(),
    )
    .await
    .expect("advances")
    .expect("a workflow dispatch");
    assert_eq!(
        dispatched(&progress),
        [("label".to_owned(), Some(json!({"count": 1})))]
    );
    let mut other = dispatch.clone();
    other.trigger_id = "manual".to_owned();
    other.idempotency_key = "manual:octo/flows:agents/triage/astrolift.toml:id:x".to_owned();
    let none = advance_workflow_on_callback(
        subject.state.as_ref(),
        &dispatcher,
        &other,
        StageStatus::Succeeded,
        None,
        20,
        &limits(),
    )
    .await
    .expect("no error");
    assert_eq!(none, None);
}

macro_rules! on_both_stores {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test(super::sqlite().await).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    if let Some(subject) = super::dynamodb(stringify!($test)).await {
                        super::$test(subject).await;
                    }
                }
            )*
        }
    };
}

pub(crate) use on_both_stores;

on_both_stores!(
    stages_dispatch_in_dependency_order,
    a_failed_stage_stops_its_dependents,
    a_payload_or_agent_that_cannot_run_fails_the_stage,
    concurrent_reports_advance_once,
    the_callback_entry_point_finds_the_stage,
    a_result_the_run_cannot_read_fails_the_next_stage,
);
