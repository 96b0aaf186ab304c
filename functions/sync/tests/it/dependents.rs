//! Dependents follow through the real queue: the sync of a push to a skill repository
//! queues its dependent's re-sync on the SQS FIFO sync queue (moto), in the dependent's
//! registered-ref lane, and the function runs that message like any other.

use std::sync::Arc;

use astrolift_bot::{JobTrigger, SqsJobQueue, SyncJob};
use astrolift_fake_github::{EXAMPLE_RUNBOOKS, EXAMPLE_RUNBOOKS_SHA};
use serde_json::json;

use crate::support::{
    REPOSITORY, delivered, event, failures, fake_github, fifo_queue, function_queuing, sqs_event,
    stores,
};

/// The installation the fake GitHub covers the example runbooks with.
const RUNBOOKS_INSTALLATION: u64 = 9_001;

#[tokio::test(flavor = "multi_thread")]
async fn a_skill_push_queues_the_dependents_re_sync_in_its_lane_and_the_function_runs_it() {
    if astrolift_store::testing::aws_endpoint("sync dependents SQS FIFO").is_none() {
        return;
    }
    let (client, url) = fifo_queue("deps").await;
    let (stores, _dir) = stores().await;
    let github = fake_github().await;
    let queue = Arc::new(SqsJobQueue::new(client.clone(), url.clone()));
    let function = function_queuing(&github, &stores, Some(queue));

    // The agent repository's push applies (and records what it follows).
    let push = event("sync-batch")["Records"][0].clone();
    let body = push["body"].as_str().expect("body");
    let agents: SyncJob = serde_json::from_str(body).expect("a job");
    let response = function.handle(sqs_event(json!({ "Records": [push.clone()] })), None);
    assert_eq!(failures(&response.await), Vec::<String>::new());

    // A push to the runbooks' main.
    let skill = SyncJob {
        delivery_id: "runbooks-push".into(),
        installation_id: RUNBOOKS_INSTALLATION,
        repository: EXAMPLE_RUNBOOKS.into(),
        repository_id: 4242,
        head_sha: EXAMPLE_RUNBOOKS_SHA.into(),
        before: None,
        ..agents.clone()
    };
    let mut record = push;
    record["messageId"] = json!("m-skill");
    record["body"] = json!(serde_json::to_string(&skill).expect("JSON"));
    record["attributes"]["MessageGroupId"] = json!(skill.message_group_id());
    let response = function.handle(sqs_event(json!({ "Records": [record] })), None);
    assert_eq!(failures(&response.await), Vec::<String>::new());

    // On the queue: the agent repository's re-sync, in its registered ref's lane.
    let queued = delivered(&client, &url).await;
    let records = queued["Records"].as_array().expect("records");
    assert_eq!(records.len(), 1, "{queued:#}");
    let body = records[0]["body"].as_str().expect("body");
    let resync: SyncJob = serde_json::from_str(body).expect("a sync job");
    assert_eq!(resync.trigger, JobTrigger::SkillChanged);
    assert_eq!(resync.repository, REPOSITORY);
    assert_eq!(resync.head_sha, agents.head_sha, "the registered commit");
    let group = &records[0]["attributes"]["MessageGroupId"];
    assert_eq!(group, &json!(agents.message_group_id()));

    // The worker runs it off the queue.
    let response = function.handle(sqs_event(queued), None).await;
    assert_eq!(failures(&response), Vec::<String>::new());
    let runs = github.check_runs();
    let run = runs.last().expect("the re-sync's run");
    let on = (run.repo.as_str(), run.status.as_str());
    assert_eq!(on, ("agents", "completed"));
    let summary = run.summary.clone().unwrap_or_default();
    assert!(
        summary.starts_with("Re-synced because the skill source"),
        "{summary}"
    );
}
