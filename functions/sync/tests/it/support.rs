//! Shared fixtures: the sample batches, the fake GitHub serving the sample
//! repository, and the function over a runner against it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use astrolift_bot::{JobQueue, SyncRunner};
use astrolift_fake_github::FakeGitHub;
use astrolift_fn_sync::SyncFunction;
use astrolift_forge::github::{AppCredentials, GitHubApp, GitHubConfig};
use astrolift_manifest::Limits;
use astrolift_store::FsBlobStore;
use astrolift_store::state::{RepoRegistration, SqliteStateStore};
use astrolift_sync::Stores;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use secrecy::SecretString;
use serde_json::{Value, json};

/// The sample repository of `events/` (events/generate.py).
pub const OWNER: &str = "astrolift-demo";
pub const REPOSITORY: &str = "astrolift-demo/agents";
pub const INSTALLATION: u64 = 51234567;
pub const MAIN_SHA: &str = "3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a";
pub const PR_SHA: &str = "9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d";

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `events/<name>.json`.
pub fn event(name: &str) -> Value {
    let path = root().join("events").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("json")
}

/// The SQS event Lambda would deliver.
pub fn sqs_event(value: Value) -> SqsEvent {
    serde_json::from_value(value).expect("an SQS event")
}

/// The record ids of `response`, in order.
pub fn failures(response: &SqsBatchResponse) -> Vec<String> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

/// The message ids of `event`'s records.
pub fn message_ids(event: &Value) -> Vec<String> {
    event["Records"]
        .as_array()
        .expect("Records")
        .iter()
        .map(|r| r["messageId"].as_str().expect("messageId").to_owned())
        .collect()
}

/// A fake GitHub serving `agents` (main: the monorepo; the PR head: the single agent)
/// and `other` (main: the single agent).
pub async fn fake_github() -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    let examples = root().join("examples");
    github.add_repo(OWNER, "agents", "main", MAIN_SHA, examples.join("monorepo"));
    github.add_repo(
        OWNER,
        "agents",
        "triage-billing",
        PR_SHA,
        examples.join("single-agent"),
    );
    github.add_repo(
        OWNER,
        "other",
        "main",
        MAIN_SHA,
        examples.join("single-agent"),
    );
    github.add_example_skill_repos();
    github
}

/// SQLite state and directory blobs in a temp dir, the sample repository registered on `main`.
pub async fn stores() -> (Stores, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("sqlite");
    let blobs = FsBlobStore::new(dir.path().join("blobs")).expect("blob dir");
    let stores = Stores {
        state: Arc::new(state),
        blobs: Arc::new(blobs),
        concurrency: Default::default(),
    };
    let registration = RepoRegistration {
        repository: REPOSITORY.into(),
        installation_id: Some(INSTALLATION),
        project_id: "proj-events".into(),
        registered_ref: "main".into(),
        manifest_path: None,
        updated_at: 1,
        last_sync: None,
        previews: false,
    };
    stores
        .state
        .put_registration(&registration)
        .await
        .expect("registered");
    // The example's triage trigger names `triage-prod`: an env spec of the project.
    let spec = astrolift_store::testing::triage_env_spec("proj-events");
    stores.state.put_env_spec(&spec).await.expect("env spec");
    // Its catalogue and organization skills resolve through the example skill sources.
    let state = stores.state.as_ref();
    astrolift_store::testing::register_example_skill_sources(state, "proj-events")
        .await
        .expect("skill sources");
    (stores, dir)
}

/// The function over a runner against `github`, as `from_env` builds it
/// but with fast retries.
pub fn function(github: &FakeGitHub, stores: &Stores) -> SyncFunction {
    function_queuing(github, stores, None)
}

/// [`function`], queuing the re-syncs of skill sources' dependents on `jobs`.
pub fn function_queuing(
    github: &FakeGitHub,
    stores: &Stores,
    jobs: Option<Arc<dyn JobQueue>>,
) -> SyncFunction {
    SyncFunction::new(runner(github, stores, jobs))
}

/// The runner [`function_queuing`] runs.
pub fn runner(github: &FakeGitHub, stores: &Stores, jobs: Option<Arc<dyn JobQueue>>) -> SyncRunner {
    let mut config = GitHubConfig::new(github.base_url()).expect("config");
    config.retry.base_delay = Duration::from_millis(10);
    let credentials = AppCredentials::new(
        github.app_id(),
        SecretString::from(github.private_key_pem().to_owned()),
    )
    .expect("credentials");
    SyncRunner {
        stores: stores.clone(),
        github: Arc::new(GitHubApp::new(config, credentials).expect("app")),
        limits: Limits::DEFAULT,
        function: "test",
        fail_run_patience: Duration::from_secs(2),
        progress: Default::default(),
        jobs,
        dispatches: None,
        workflow_engine: None,
    }
}

/// A FIFO queue on moto named after `prefix`: its client and URL.
pub async fn fifo_queue(prefix: &str) -> (aws_sdk_sqs::Client, String) {
    let sdk = astrolift_store::load_sdk_config().await;
    let client = aws_sdk_sqs::Client::new(&sdk);
    let name = astrolift_store::testing::unique_name(prefix);
    let created = client
        .create_queue()
        .queue_name(format!("{name}.fifo"))
        .attributes(aws_sdk_sqs::types::QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("creates the queue");
    let url = created.queue_url().expect("a queue url").to_owned();
    (client, url)
}

/// What the queue holds, as the SQS event Lambda would deliver to the sync function.
pub async fn delivered(client: &aws_sdk_sqs::Client, url: &str) -> serde_json::Value {
    let received = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
        .send()
        .await
        .expect("receives");
    let records: Vec<_> = received
        .messages()
        .iter()
        .map(|m| {
            let group = m
                .attributes()
                .and_then(|a| {
                    a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId)
                })
                .cloned()
                .unwrap_or_default();
            json!({
                "messageId": m.message_id(),
                "body": m.body(),
                "attributes": {"MessageGroupId": group},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    json!({ "Records": records })
}
