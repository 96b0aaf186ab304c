//! Shared fixtures: stores, signed requests, the fake GitHub with repositories.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use astrolift_bot::{Answer, Ingress, JobTrigger, SyncJob, SyncRunner};
use astrolift_fake_github::FakeGitHub;
use astrolift_forge::github::{AppCredentials, GitHubApp, GitHubConfig};
use astrolift_forge::webhook::{WebhookRequest, sign};
use astrolift_manifest::Limits;
use astrolift_store::blob::BlobOptions;
use astrolift_store::state::RepoRegistration;
use astrolift_store::state::{DynamoStateStore, SqliteStateStore};
use astrolift_store::{FsBlobStore, S3BlobStore};
use astrolift_sync::Stores;
use http::{HeaderMap, HeaderValue};
use secrecy::SecretString;
use serde_json::{Value, json};

pub const SECRET: &str = "bot-test-secret";
pub const INSTALLATION: u64 = 31;
pub const REPO_ID: u64 = 5150;
pub const MAIN_SHA: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

pub fn examples(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// Embedded stores in a temp dir (kept alive by the returned guard).
pub async fn embedded_stores() -> (Stores, tempfile::TempDir) {
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
    (stores, dir)
}

/// DynamoDB and S3 on moto, when `AWS_ENDPOINT_URL` is set.
pub async fn aws_stores(test: &str) -> Option<Stores> {
    astrolift_store::testing::aws_endpoint(test)?;
    let table = astrolift_store::testing::unique_name("bot");
    let state = DynamoStateStore::from_env(&table).await.expect("dynamo");
    state.create_table().await.expect("table");
    let bucket = astrolift_store::testing::unique_name("bot");
    let blobs = S3BlobStore::from_env(&bucket, "", BlobOptions::default())
        .await
        .expect("s3");
    blobs.create_bucket().await.expect("bucket");
    Some(Stores {
        state: Arc::new(state),
        blobs: Arc::new(blobs),
        concurrency: Default::default(),
    })
}

/// Registers `octo/agents` (every manifest, project `proj-bot`) with the example's env spec
/// and its skill sources.
pub async fn register(stores: &Stores) {
    register_repository(stores).await;
    // The example's catalogue and organization skills resolve through these.
    let state = stores.state.as_ref();
    astrolift_store::testing::register_example_skill_sources(state, "proj-bot")
        .await
        .expect("skill sources");
}

/// [`register`] without the skill sources.
pub async fn register_repository(stores: &Stores) {
    register_repository_of(stores, Some(INSTALLATION)).await;
}

/// [`register_repository`] naming `installation_id` (`None`: as `register-repo` records it).
pub async fn register_repository_of(stores: &Stores, installation_id: Option<u64>) {
    let registration = RepoRegistration {
        repository: "octo/agents".into(),
        installation_id,
        project_id: "proj-bot".into(),
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
    let spec = astrolift_store::testing::triage_env_spec("proj-bot");
    stores.state.put_env_spec(&spec).await.expect("env spec");
}

pub async fn fake_github(fixture: &str) -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", MAIN_SHA, examples(fixture));
    github.add_example_skill_repos();
    github
}

pub fn runner(github: &FakeGitHub, stores: &Stores) -> SyncRunner {
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
        jobs: None,
        dispatches: None,
        workflow_engine: None,
    }
}

pub fn repository() -> Value {
    json!({ "id": REPO_ID, "full_name": "octo/agents", "default_branch": "main" })
}

pub fn push(branch: &str, sha: &str) -> Value {
    json!({
        "ref": format!("refs/heads/{branch}"), "before": "0".repeat(40), "after": sha,
        "deleted": false,
        "head_commit": { "id": sha, "timestamp": "2026-11-29T10:00:00Z" },
        "repository": repository(),
        "installation": { "id": INSTALLATION },
    })
}

/// Headers of a delivery signed with `secret`.
pub fn signed(event: &str, delivery: &str, body: &[u8], secret: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let mut put = |name: &'static str, value: &str| {
        headers.insert(name, HeaderValue::from_str(value).expect("header value"));
    };
    put("x-github-event", event);
    put("x-github-delivery", delivery);
    put("x-hub-signature-256", &sign(body, secret));
    headers
}

/// The job of a push of `MAIN_SHA` to `main`.
pub fn push_job(delivery: &str) -> SyncJob {
    SyncJob {
        version: 1,
        delivery_id: delivery.into(),
        trigger: JobTrigger::Push,
        installation_id: INSTALLATION,
        repository: "octo/agents".into(),
        repository_id: REPO_ID,
        head_sha: MAIN_SHA.into(),
        branch: Some("main".into()),
        fork: false,
        commit_time: Some(1_795_946_400),
        before: None,
        default_branch: Some("main".into()),
        pull_request: None,
        accept_drift: None,
        skill_change: None,
        base_ref: None,
        preview_approved_by: None,
        merged: false,
        comment: None,
    }
}

/// Delivers `body` as event `event` to `ingress`, signed with `secret`.
pub async fn deliver(
    ingress: &Ingress,
    event: &str,
    delivery: &str,
    body: &Value,
    secret: &str,
) -> Answer {
    let bytes = serde_json::to_vec(body).expect("json");
    let headers = signed(event, delivery, &bytes, secret);
    let request = WebhookRequest {
        headers: &headers,
        body: bytes.into(),
        is_base64_encoded: false,
    };
    ingress.receive(request).await
}
