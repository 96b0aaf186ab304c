//! Dispatch message v1: every path that creates a dispatch (generic trigger,
//! GitHub-sourced fan-out, manual, workflow stage) gives a message valid
//! against `schemas/dispatch.schema.json`, built from a packaged agent
//! (`examples/single-agent`) whose snapshot and archive are in a blob store;
//! the composed prompts, the presigned package URL (a `file://` URL here,
//! S3 on moto) and the inline package.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use astrolift_dispatch::content::env_spec_parts;
use astrolift_dispatch::content::{
    BlobContent, ContentError, ContentSource, RecordOnlyContent, UrlOptions, load_content,
};
use astrolift_dispatch::dispatch::{
    DispatchMessage, DispatchRequest, MemoryDispatchQueue, Origin, record,
};
use astrolift_dispatch::message::{DispatchContent, EnvSpecRef, Source};
use astrolift_manifest::model::{AgentManifest, SkillRef};
use astrolift_manifest::triggers::{TriggerSource, Verify};
use astrolift_manifest::{DirTree, Limits, ValidateOptions, validate_repository};
use astrolift_store::blob::{BlobKey, BlobStore, FsBlobStore, S3BlobStore};
use astrolift_store::state::{
    Agent, AgentChange, AgentStatus, AuditAction, ChangeSet, EnvSpec, SqliteStateStore,
};
use astrolift_store::testing::{aws_endpoint, unique_name};
use astrolift_store::{BlobOptions, StateStore};
use astrolift_trigger::{SecretResolver, TriggerService};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::service::{binding, trigger};
use crate::support::{FixedSecrets, hmac_verify, limits, signed};

const REPO: &str = "Codertocat/Hello-World";
const CALLBACK_BASE: &str = "https://astrolift.example.com/";

fn validator() -> jsonschema::Validator {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/dispatch.schema.json");
    let schema: Value =
        serde_json::from_slice(&std::fs::read(path).expect("the schema exists")).expect("JSON");
    jsonschema::draft202012::options()
        .build(&schema)
        .expect("the schema compiles")
}

/// The message is valid against the schema (every error listed).
pub fn assert_valid(message: &DispatchMessage) {
    let value = serde_json::to_value(message).expect("serializes");
    let errors: Vec<String> = validator()
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{value:#}");
}

/// A packaged agent whose snapshot and archive are in a directory blob store.
pub struct Registered {
    pub blobs: Arc<dyn BlobStore>,
    pub agent: Agent,
    pub manifest: AgentManifest,
    pub archive: Vec<u8>,
    _dir: tempfile::TempDir,
}

fn example() -> (DirTree, AgentManifest) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/single-agent");
    let tree = DirTree::open(root, 10_000).expect("opens");
    let validation = validate_repository(&tree, &ValidateOptions::default());
    let manifest = validation.agents.into_iter().next().expect("one agent");
    (tree, manifest)
}

/// Packages `examples/single-agent` into `blobs` (and returns the agent record).
pub async fn register_example_in(blobs: Arc<dyn BlobStore>) -> (Agent, AgentManifest, Vec<u8>) {
    let (tree, manifest) = example();
    let mut archive = Vec::new();
    let packaged =
        astrolift_package::package_agent(&manifest, &tree, &Limits::DEFAULT, &mut archive)
            .expect("packages");
    let snapshot = packaged.snapshot.canonical_json();
    let snapshot_hash = hex::encode(Sha256::digest(&snapshot));
    blobs
        .put_if_absent(
            &BlobKey::package(&packaged.output.digest).expect("key"),
            archive.clone().into(),
            "application/gzip",
        )
        .await
        .expect("stores the archive");
    blobs
        .put_if_absent(
            &BlobKey::snapshot(&snapshot_hash).expect("key"),
            snapshot.into(),
            "application/json",
        )
        .await
        .expect("stores the snapshot");
    let agent = Agent {
        repository: REPO.to_owned(),
        manifest_path: manifest.manifest.clone(),
        project_id: crate::support::PROJECT.to_owned(),
        name: manifest.name.clone(),
        alias: None,
        status: AgentStatus::Active,
        snapshot_hash,
        payload_digest: packaged.output.digest.clone(),
        commit: "c0ffee".to_owned(),
        version: 0,
        updated_at: 1,
        bindings_digest: None,
        layer_key: None,
        package_build: None,
    };
    (agent, manifest, archive)
}

pub async fn register_example() -> Registered {
    let dir = tempfile::tempdir().expect("tempdir");
    let blobs: Arc<dyn BlobStore> =
        Arc::new(FsBlobStore::new(dir.path().join("blobs")).expect("blob dir"));
    let (agent, manifest, archive) = register_example_in(blobs.clone()).await;
    Registered {
        blobs,
        agent,
        manifest,
        archive,
        _dir: dir,
    }
}

fn content_source(blobs: Arc<dyn BlobStore>) -> BlobContent {
    BlobContent::new(blobs, UrlOptions::default(), Limits::DEFAULT)
}

/// A dispatch request of `agent` without an idempotency key or env spec, at a fixed time.
pub(crate) fn request<'a>(
    agent: &'a Agent,
    source: Source,
    payload: Option<&'a Value>,
    content: &'a DispatchContent,
    callback_base: Option<&'a str>,
) -> DispatchRequest<'a> {
    DispatchRequest {
        source,
        repository: &agent.repository,
        manifest_path: &agent.manifest_path,
        snapshot_hash: &agent.snapshot_hash,
        idempotency_key: None,
        payload,
        origin: &Origin::TRUSTED,
        env_spec: None,
        config: None,
        content,
        callback_base,
        now: 1_767_225_600,
    }
}

async fn sqlite() -> (SqliteStateStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("opens");
    (state, dir)
}

/// The content of the registered agent at `now`, and an empty SQLite state.
async fn content_and_state(
    registered: &Registered,
    now: i64,
) -> (DispatchContent, SqliteStateStore, tempfile::TempDir) {
    let content = content_source(registered.blobs.clone())
        .content(&registered.agent, now)
        .await
        .expect("reads the content");
    let (state, dir) = sqlite().await;
    (content, state, dir)
}

fn local_skill_tools(manifest: &AgentManifest) -> Vec<String> {
    let mut tools: Vec<String> = Vec::new();
    for skill in &manifest.skills {
        if let SkillRef::Local {
            skill: Some(local), ..
        } = skill
        {
            for tool in &local.allowed_tools {
                if !tools.contains(tool) {
                    tools.push(tool.clone());
                }
            }
        }
    }
    tools
}

#[tokio::test]
async fn a_manual_dispatch_carries_everything_the_controller_needs() {
    let registered = register_example().await;
    let (content, state, _dir) = content_and_state(&registered, 1_767_225_600).await;
    let payload = json!({"mode": "smoke"});
    let mut request = request(
        &registered.agent,
        Source::Manual,
        Some(&payload),
        &content,
        Some(CALLBACK_BASE),
    );
    request.env_spec = Some(EnvSpecRef {
        name: "triage-prod".to_owned(),
        agent_type: Some("claude".to_owned()),
        runtime: Some("claude-code-vnc".to_owned()),
    });
    let recorded = record(&state, &request).await.expect("records");
    let message = DispatchMessage::of(&recorded.dispatch).expect("the record keeps the message");
    assert_valid(&message);

    assert_eq!(message.schema, "astrolift.dispatch/v1");
    assert_eq!(message.dispatch_id, recorded.id);
    assert_eq!(message.task_id, recorded.dispatch.task_id);
    assert_eq!(message.source, Source::Manual);
    assert_eq!(message.agent.name, "pr-reviewer");
    assert_eq!(message.agent.snapshot, registered.agent.snapshot_hash);
    assert_eq!(message.payload, Some(payload.clone()));
    assert_eq!(
        message.env_spec.as_ref().map(|e| e.name.as_str()),
        Some("triage-prod")
    );
    assert_eq!(recorded.dispatch.env_spec.as_deref(), Some("triage-prod"));
    assert_eq!(
        message.callback.as_ref().map(|c| c.url.clone()),
        Some(format!(
            "https://astrolift.example.com/callbacks/{}",
            message.task_id
        ))
    );
    // The package: the archive's digest and size, a URL that downloads it.
    assert_eq!(message.package.digest, registered.agent.payload_digest);
    assert_eq!(message.package.size, registered.archive.len() as u64);
    assert_eq!(message.package.expires_at, Some(1_767_225_600 + 3600));
    let url = message.package.url.as_deref().expect("a URL");
    let path = url::Url::parse(url)
        .expect("parses")
        .to_file_path()
        .expect("a file URL");
    let downloaded = std::fs::read(path).expect("downloads");
    assert_eq!(
        format!("sha256:{}", hex::encode(Sha256::digest(&downloaded))),
        message.package.digest
    );
    // The snapshot's parts.
    let brief = message.brief.as_ref().expect("a brief");
    assert_eq!(brief.id, "brief/README.md");
    assert_eq!(message.skill_refs.len(), 3, "{:?}", message.skill_refs);
    assert_eq!(message.skill_refs[0]["kind"], "local");
    assert_eq!(message.skill_refs[1]["kind"], "catalogue");
    assert_eq!(message.skill_refs[2]["kind"], "org");
    assert_eq!(
        message.environment.get("LOG_LEVEL").map(String::as_str),
        Some("info")
    );
    assert_eq!(
        message.secrets.get("GITHUB_TOKEN").map(String::as_str),
        Some("secret://agents/pr-reviewer-github")
    );
    assert!(message.trusted);
    assert_eq!(message.sender, None);
    // The record keeps the payload once (in `payload`, not in `message`).
    let kept = recorded.dispatch.message.as_deref().expect("kept");
    assert!(!kept.contains("\"payload\""), "{kept}");
}

#[tokio::test]
async fn the_system_prompt_is_the_brief_then_skills_then_tools() {
    let registered = register_example().await;
    let (content, state, _dir) = content_and_state(&registered, 0).await;
    let payload = json!({"pr": 7});
    let recorded = record(
        &state,
        &request(
            &registered.agent,
            Source::Manual,
            Some(&payload),
            &content,
            None,
        ),
    )
    .await
    .expect("records");
    let message = DispatchMessage::of(&recorded.dispatch).expect("message");
    let brief = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/single-agent/brief/README.md"),
    )
    .expect("brief");
    let system = &message.prompts.system;
    assert!(system.starts_with(brief.trim_end()), "{system}");
    let skill = system
        .find("## Skill: reviewer")
        .expect("the skill's instructions");
    let tools = system.find("## Tools").expect("the tool contract");
    assert!(brief.trim_end().len() <= skill && skill < tools, "{system}");
    let expected_tools = local_skill_tools(&registered.manifest);
    assert!(!expected_tools.is_empty());
    assert_eq!(message.tools, expected_tools);
    for tool in &expected_tools {
        assert_eq!(
            system.matches(&format!("- `{tool}`")).count(),
            1,
            "{system}"
        );
    }
    assert!(
        message.prompts.kickoff.contains(r#"{"pr":7}"#),
        "{}",
        message.prompts.kickoff
    );
    // No callback route without a base URL.
    assert_eq!(message.callback, None);
    assert_valid(&message);
}

#[tokio::test]
async fn a_workflow_stage_and_the_empty_payload_give_valid_messages() {
    let registered = register_example().await;
    let (content, state, _dir) = content_and_state(&registered, 0).await;
    let source = Source::Workflow {
        workflow_run: "run-1".to_owned(),
        stage: "review".to_owned(),
    };
    for payload in [None, Some(json!({})), Some(Value::Null)] {
        let recorded = record(
            &state,
            &request(
                &registered.agent,
                source.clone(),
                payload.as_ref(),
                &content,
                None,
            ),
        )
        .await
        .expect("records");
        let message = DispatchMessage::of(&recorded.dispatch).expect("message");
        assert_eq!(message.payload, None);
        assert!(
            !serde_json::to_string(&message)
                .expect("json")
                .contains("\"payload\"")
        );
        assert_eq!(recorded.dispatch.trigger_id, "workflow:run-1:review");
        assert_valid(&message);
    }
}

#[tokio::test]
async fn an_inline_package_has_no_url() {
    let registered = register_example().await;
    // A snapshot that says its package ships inline (an agent without [package]).
    let snapshot: Value = serde_json::from_slice(
        &registered
            .blobs
            .get(&BlobKey::snapshot(&registered.agent.snapshot_hash).expect("key"))
            .await
            .expect("reads"),
    )
    .expect("JSON");
    let mut inline = snapshot.clone();
    inline["payload"]["inline"] = json!(true);
    let bytes = serde_json::to_vec(&inline).expect("json");
    let hash = hex::encode(Sha256::digest(&bytes));
    registered
        .blobs
        .put_if_absent(
            &BlobKey::snapshot(&hash).expect("key"),
            bytes.into(),
            "application/json",
        )
        .await
        .expect("stores");
    let content = load_content(
        registered.blobs.as_ref(),
        &hash,
        UrlOptions::default(),
        &Limits::DEFAULT,
        0,
    )
    .await
    .expect("reads");
    let package = content.package.clone().expect("a package");
    assert!(package.inline);
    assert_eq!(package.url, None);
    let mut agent = registered.agent.clone();
    agent.snapshot_hash = hash;
    let (state, _dir) = sqlite().await;
    let recorded = record(
        &state,
        &request(&agent, Source::Manual, None, &content, None),
    )
    .await
    .expect("records");
    let message = DispatchMessage::of(&recorded.dispatch).expect("message");
    assert_eq!(
        serde_json::to_value(&message.package).expect("json")["inline"],
        json!(true)
    );
    assert_valid(&message);
}

#[tokio::test]
async fn a_package_that_cannot_be_delivered_is_refused() {
    let registered = register_example().await;
    let error = RecordOnlyContent { lenient: false }
        .content(&registered.agent, 0)
        .await
        .expect_err("no blob store");
    assert!(matches!(error, ContentError::NoBlobStore), "{error}");
    let empty = tempfile::tempdir().expect("tempdir");
    let blobs = FsBlobStore::new(empty.path()).expect("blob dir");
    let error = load_content(
        &blobs,
        &registered.agent.snapshot_hash,
        UrlOptions::default(),
        &Limits::DEFAULT,
        0,
    )
    .await
    .expect_err("no snapshot");
    assert!(matches!(error, ContentError::MissingSnapshot(_)), "{error}");
}

/// A service over SQLite with the example agent and a generic and a
/// GitHub-sourced binding, reading content from `blobs`.
pub async fn service_with_example(
    registered: &Registered,
    state: Arc<dyn StateStore>,
) -> (TriggerService, Arc<MemoryDispatchQueue>) {
    let manifest = registered.agent.manifest_path.clone();
    let mut generic = trigger("jira", TriggerSource::Generic, Some(hmac_verify()));
    generic.payload = Some("{mode: \"triage\"}".to_owned());
    let mut github = trigger("new-issue", TriggerSource::Github, None::<Verify>);
    github.events = vec!["issues.opened".to_owned()];
    let mut change = AgentChange::new(
        registered.agent.clone(),
        None,
        AuditAction::Added,
        "c0ffee",
        "test",
        1,
    );
    let mut generic_binding = binding("trg_msg_generic", &manifest, "pr-reviewer", &generic);
    generic_binding.snapshot_hash = registered.agent.snapshot_hash.clone();
    let mut github_binding = binding("trg_msg_github", &manifest, "pr-reviewer", &github);
    github_binding.snapshot_hash = registered.agent.snapshot_hash.clone();
    change.put_bindings = vec![generic_binding, github_binding];
    state
        .apply(ChangeSet {
            repository: REPO.to_owned(),
            agents: vec![change],
            synced: None,
        })
        .await
        .expect("registers");
    let queue = Arc::new(MemoryDispatchQueue::new());
    let secrets: Arc<dyn SecretResolver> = Arc::new(FixedSecrets::new());
    let service = TriggerService::new(state, secrets, queue.clone(), limits())
        .with_content(Arc::new(content_source(registered.blobs.clone())))
        .with_callback_base(Some(CALLBACK_BASE.to_owned()));
    (service, queue)
}

#[tokio::test]
async fn trigger_dispatches_queue_the_recorded_message() {
    let registered = register_example().await;
    let (state, _dir) = sqlite().await;
    let state: Arc<dyn StateStore> = Arc::new(state);
    let (service, queue) = service_with_example(&registered, state.clone()).await;
    let body = br#"{"issue":{"key":"ENG-1"}}"#;
    let answer = service.handle("trg_msg_generic", &signed(body), body).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    let event = crate::support::fixture("github/octokit_issues_opened.json");
    let results = crate::support::fan_out(
        &service,
        REPO,
        "issues",
        Some("opened"),
        "delivery-1",
        &event,
    )
    .await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(
        results[0].response.status, 202,
        "{}",
        results[0].response.body
    );
    let messages = queue.messages();
    assert_eq!(messages.len(), 2);
    for message in &messages {
        assert_valid(message);
        assert!(message.package.url.is_some());
        assert!(message.callback.is_some());
    }
    assert_eq!(
        messages[0].source,
        Source::Trigger {
            trigger_id: "trg_msg_generic".to_owned()
        }
    );
    assert_eq!(messages[0].payload, Some(json!({"mode": "triage"})));
    assert_eq!(
        messages[1].source,
        Source::Trigger {
            trigger_id: "trg_msg_github".to_owned()
        }
    );
    assert_eq!(messages[1].sender.as_deref(), Some("Codertocat"));
    // The queued message is the one the record keeps.
    let stored = state
        .get_dispatch(&messages[0].idempotency_key)
        .await
        .expect("reads")
        .expect("recorded");
    assert_eq!(DispatchMessage::of(&stored).expect("message"), messages[0]);
}

#[tokio::test]
async fn a_missing_package_is_a_500_and_records_nothing() {
    let registered = register_example().await;
    let (state, _dir) = sqlite().await;
    let state: Arc<dyn StateStore> = Arc::new(state);
    let (service, queue) = service_with_example(&registered, state.clone()).await;
    // The archive disappears from the blob store.
    let empty = tempfile::tempdir().expect("tempdir");
    let service = service.with_content(Arc::new(content_source(Arc::new(
        FsBlobStore::new(empty.path()).expect("blob dir"),
    ))));
    let body = br#"{"issue":{"key":"ENG-2"}}"#;
    let headers = crate::support::headers(&[
        (
            "X-Signature",
            &format!(
                "sha256={}",
                crate::support::hmac_hex(body, crate::support::HOOK_SECRET)
            ),
        ),
        ("Idempotency-Key", "k-missing"),
    ]);
    let answer = service.handle("trg_msg_generic", &headers, body).await;
    assert_eq!(answer.status, 500, "{}", answer.body);
    assert!(queue.messages().is_empty());
    let key = "trg_msg_generic:key:k-missing";
    assert_eq!(state.get_dispatch(key).await.expect("reads"), None);
}

#[tokio::test]
async fn s3_presigned_package_urls_download_the_archive() {
    if aws_endpoint("s3_presigned_package_urls_download_the_archive").is_none() {
        return;
    }
    let store = S3BlobStore::from_env(&unique_name("dispatch"), "blobs", BlobOptions::default())
        .await
        .expect("client");
    store.create_bucket().await.expect("creates the bucket");
    let blobs: Arc<dyn BlobStore> = Arc::new(store);
    let (agent, _, archive) = register_example_in(blobs.clone()).await;
    let urls = UrlOptions {
        expiry: Duration::from_secs(600),
    };
    let content = load_content(
        blobs.as_ref(),
        &agent.snapshot_hash,
        urls,
        &Limits::DEFAULT,
        10,
    )
    .await
    .expect("reads");
    let package = content.package.expect("a package");
    assert_eq!(package.expires_at, Some(610));
    let url = package.url.expect("a URL");
    assert!(url.starts_with("http"), "{url}");
    let response = reqwest::get(&url).await.expect("GET");
    assert_eq!(response.status(), 200);
    let downloaded = response.bytes().await.expect("body");
    assert_eq!(downloaded.as_ref(), archive.as_slice());
    assert_eq!(
        format!("sha256:{}", hex::encode(Sha256::digest(&downloaded))),
        package.digest
    );
}

/// A snapshot's archive is read once per content source: the second
/// dispatch of the same snapshot is served without the package object
/// (only its URL is presigned again), with the same prompts.
#[tokio::test]
async fn a_snapshots_archive_is_read_once_per_content_source() {
    let registered = register_example().await;
    let source = content_source(registered.blobs.clone());
    let first = source
        .content(&registered.agent, 1)
        .await
        .expect("reads the content");
    let key = BlobKey::package(&registered.agent.payload_digest).expect("a package key");
    let archive_file = registered._dir.path().join("blobs").join(key.as_str());
    std::fs::remove_file(&archive_file).expect("the archive is a file of the blob directory");
    let second = source
        .content(&registered.agent, 2)
        .await
        .expect("served from what the first dispatch read");
    assert_eq!(second.prompts, first.prompts);
    assert_eq!(second.snapshot, first.snapshot);
    let fresh = content_source(registered.blobs.clone())
        .content(&registered.agent, 3)
        .await;
    assert!(
        matches!(fresh, Err(ContentError::MissingPackage(_))),
        "another source reads the archive itself: {fresh:?}"
    );
}

fn config_spec() -> EnvSpec {
    EnvSpec {
        name: "triage-cfg".into(),
        project_id: Some("p".into()),
        agent_type: Some("claude".into()),
        runtime: Some("claude-code".into()),
        config_repo: "octo/config".into(),
        manifest_path: "envs/triage.toml".into(),
        updated_at: 0,
        previews: false,
    }
}

/// docs/reference.md §13: a config whose files cannot be delivered fails the dispatch
/// with the documented error; an env spec without a config needs no blob store.
#[tokio::test]
async fn a_config_that_cannot_be_delivered_is_refused() {
    let (state, _dir) = sqlite().await;
    let spec = config_spec();
    let no_store = RecordOnlyContent { lenient: false };
    let error = env_spec_parts(&no_store, &state, Some(&spec), 0)
        .await
        .expect_err("no blob store");
    assert!(
        matches!(error, ContentError::ConfigNoBlobStore { .. }),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "env spec triage-cfg names a config manifest, whose files no blob store can deliver"
    );
    let plain = EnvSpec {
        config_repo: String::new(),
        manifest_path: String::new(),
        ..config_spec()
    };
    let (reference, config) = env_spec_parts(&no_store, &state, Some(&plain), 0)
        .await
        .expect("no config to deliver");
    assert_eq!(reference.map(|r| r.name), Some("triage-cfg".to_owned()));
    assert_eq!(config, None);

    let empty = tempfile::tempdir().expect("tempdir");
    let blobs = Arc::new(FsBlobStore::new(empty.path()).expect("blob dir"));
    let source = BlobContent::new(blobs, UrlOptions::default(), Limits::DEFAULT);
    let error = env_spec_parts(&source, &state, Some(&spec), 0)
        .await
        .expect_err("not packaged");
    assert!(
        matches!(error, ContentError::ConfigNotPackaged { .. }),
        "{error}"
    );
}

/// A config bundle is content-addressed, so a content source reads it once: the second
/// dispatch is served after the bundle object is gone (only the package record is read
/// again, and each file's URL presigned again); another source reads it itself.
#[tokio::test]
async fn a_config_bundle_is_read_once_per_content_source() {
    let (state, _dir) = sqlite().await;
    let spec = config_spec();
    let blob_dir = tempfile::tempdir().expect("tempdir");
    let blobs = Arc::new(FsBlobStore::new(blob_dir.path()).expect("blob dir"));
    let file = b"echo triage\n".to_vec();
    let file_hex = hex::encode(Sha256::digest(&file));
    let file_key = BlobKey::config_file(&file_hex).expect("a key");
    blobs
        .put_if_absent(&file_key, file.clone().into(), "application/octet-stream")
        .await
        .expect("puts the file");
    let bundle = json!({
        "document": {"name": "triage"},
        "files": [{"path": "bin/run.sh", "digest": format!("sha256:{file_hex}"),
                   "size": file.len(), "mode": "0755"}],
    })
    .to_string();
    let bundle_hex = hex::encode(Sha256::digest(bundle.as_bytes()));
    let bundle_key = BlobKey::config_bundle(&bundle_hex).expect("a key");
    blobs
        .put_if_absent(&bundle_key, bundle.into_bytes().into(), "application/json")
        .await
        .expect("puts the bundle");
    let record = astrolift_store::state::ConfigPackage {
        repository: spec.config_repo.clone(),
        manifest_path: spec.manifest_path.clone(),
        bundle_hash: bundle_hex,
        commit: "c0ffee".into(),
        updated_at: 1,
        version: 1,
    };
    state
        .config_packages()
        .put_config_package(&record, None)
        .await
        .expect("records the package");
    let source = BlobContent::new(blobs.clone(), UrlOptions::default(), Limits::DEFAULT);
    let (_, first) = env_spec_parts(&source, &state, Some(&spec), 1)
        .await
        .expect("delivers the config");
    std::fs::remove_file(blob_dir.path().join(bundle_key.as_str())).expect("a blob file");
    let (_, second) = env_spec_parts(&source, &state, Some(&spec), 1)
        .await
        .expect("served from what the first dispatch read");
    assert_eq!(second, first);
    assert_eq!(
        first.as_ref().map(|c| c["files"][0]["mode"].clone()),
        Some(json!("0755"))
    );
    let fresh = BlobContent::new(blobs, UrlOptions::default(), Limits::DEFAULT);
    let error = env_spec_parts(&fresh, &state, Some(&spec), 1)
        .await
        .expect_err("another source reads the bundle itself");
    assert!(matches!(error, ContentError::MissingConfig(_)), "{error}");
}
