//! `TriggerService`: every status of `handle`, duplicates, the compiled-binding
//! cache, and GitHub fan-out with octokit's example `issues.opened` and
//! `issue_comment.created` payloads — on SQLite, and on DynamoDB (+ SQS) when
//! moto is running.

use std::sync::Arc;

use astrolift_dispatch::Answer;
use astrolift_dispatch::dispatch::{DispatchQueue, MemoryDispatchQueue, SqsDispatchQueue};
use astrolift_manifest::triggers::{TriggerSource, TriggerSpec, Verify};
use astrolift_store::StateStore;
use astrolift_store::state::{
    Agent, AgentChange, AgentStatus, AuditAction, ChangeSet, DynamoStateStore, SqliteStateStore,
    TriggerBinding,
};
use astrolift_store::testing::{FaultPlan, FaultyStateStore, aws_endpoint, unique_name};
use astrolift_trigger::{SecretResolver, TriggerService};
use serde_json::{Value, json};

use crate::support::{FixedSecrets, HOOK_SECRET, fixture, headers, hmac_verify, limits, signed};

pub const REPO: &str = "Codertocat/Hello-World";
pub const MANIFEST: &str = "agents/triage/astrolift.toml";
const SNAPSHOT: &str = "snap-triage-1";
pub const JIRA: &str = "trg_jira";
pub const GITHUB: &str = "trg_new_issue";
const UNSET_SECRET: &str = "trg_unset_secret";
const ORPHANED: &str = "trg_orphaned";

/// A service over `state` with the bindings below, and its in-memory queue.
pub struct Fixture {
    pub service: TriggerService,
    pub queue: Arc<MemoryDispatchQueue>,
    pub state: Arc<dyn StateStore>,
    _dir: Option<tempfile::TempDir>,
}

pub fn trigger(name: &str, source: TriggerSource, verify: Option<Verify>) -> TriggerSpec {
    TriggerSpec {
        name: name.to_owned(),
        source,
        events: Vec::new(),
        verify,
        filter: None,
        payload: None,
        env_spec: None,
        allow_untrusted: false,
        report: None,
        samples: None,
        keep_deliveries: None,
        replay_values: false,
    }
}

pub fn jira_spec() -> TriggerSpec {
    let mut spec = trigger(
        "jira-high-priority",
        TriggerSource::Generic,
        Some(hmac_verify()),
    );
    spec.filter = Some(r#".issue.fields.priority.name == "High""#.to_owned());
    spec.payload = Some(
        r#"{mode: "triage", issue: (.issue.key // error("issue.key is required")), title: .issue.fields.summary}"#
            .to_owned(),
    );
    spec
}

fn github_spec() -> TriggerSpec {
    let mut spec = trigger("new-issue", TriggerSource::Github, None);
    spec.events = vec![
        "issues.opened".to_owned(),
        "issue_comment.created".to_owned(),
    ];
    spec.payload =
        Some(r#"{mode: "triage", issue: .issue.number, repo: .repository.full_name}"#.to_owned());
    spec
}

fn unset_secret_spec() -> TriggerSpec {
    trigger(
        "unset-secret",
        TriggerSource::Generic,
        Some(Verify::Token {
            header: "X-Token".to_owned(),
            secret: "secret://agents/not-configured".to_owned(),
        }),
    )
}

pub fn binding(id: &str, manifest: &str, agent: &str, spec: &TriggerSpec) -> TriggerBinding {
    TriggerBinding {
        trigger_id: id.to_owned(),
        repository: REPO.to_owned(),
        manifest_path: manifest.to_owned(),
        agent_name: agent.to_owned(),
        name: spec.name.clone(),
        source: match spec.source {
            TriggerSource::Generic => "generic",
            TriggerSource::Github => "github",
        }
        .to_owned(),
        definition: serde_json::to_value(spec).expect("serializes"),
        snapshot_hash: SNAPSHOT.to_owned(),
    }
}

pub fn agent(manifest: &str, name: &str, status: AgentStatus) -> Agent {
    Agent {
        repository: REPO.to_owned(),
        manifest_path: manifest.to_owned(),
        project_id: "p-1".to_owned(),
        name: name.to_owned(),
        alias: None,
        status,
        snapshot_hash: SNAPSHOT.to_owned(),
        payload_digest: "sha256:00".to_owned(),
        commit: "c0ffee".to_owned(),
        version: 0,
        updated_at: 1,
        bindings_digest: None,
        layer_key: None,
        package_build: None,
    }
}

/// The active `triage` agent with three bindings, and an orphaned agent with one.
pub async fn register(state: &dyn StateStore) {
    let mut active = AgentChange::new(
        agent(MANIFEST, "triage", AgentStatus::Active),
        None,
        AuditAction::Added,
        "c0ffee",
        "test",
        1,
    );
    active.put_bindings = vec![
        binding(JIRA, MANIFEST, "triage", &jira_spec()),
        binding(GITHUB, MANIFEST, "triage", &github_spec()),
        binding(UNSET_SECRET, MANIFEST, "triage", &unset_secret_spec()),
    ];
    let orphan_manifest = "agents/old/astrolift.toml";
    let mut orphaned = AgentChange::new(
        agent(orphan_manifest, "old", AgentStatus::Orphaned),
        None,
        AuditAction::Added,
        "c0ffee",
        "test",
        1,
    );
    let mut old_spec = jira_spec();
    old_spec.filter = None;
    orphaned.put_bindings = vec![binding(ORPHANED, orphan_manifest, "old", &old_spec)];
    state
        .apply(ChangeSet {
            repository: REPO.to_owned(),
            agents: vec![active, orphaned],
            synced: None,
        })
        .await
        .expect("registers");
}

fn service(state: Arc<dyn StateStore>, queue: Arc<dyn DispatchQueue>) -> TriggerService {
    let secrets: Arc<dyn SecretResolver> = Arc::new(FixedSecrets::new());
    TriggerService::new(state, secrets, queue, limits())
}

pub async fn sqlite() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("sqlite"),
    );
    fixture_over(state, Some(dir)).await
}

pub async fn dynamo(test: &str) -> Option<Fixture> {
    aws_endpoint(test)?;
    let store = DynamoStateStore::from_env(&unique_name("trigger"))
        .await
        .expect("dynamodb client");
    store.create_table().await.expect("creates the table");
    Some(fixture_over(Arc::new(store), None).await)
}

async fn fixture_over(state: Arc<dyn StateStore>, dir: Option<tempfile::TempDir>) -> Fixture {
    register(state.as_ref()).await;
    let queue = Arc::new(MemoryDispatchQueue::new());
    Fixture {
        service: service(state.clone(), queue.clone()),
        queue,
        state,
        _dir: dir,
    }
}

fn assert_no_secret(response: &Answer) {
    let text = response.body.to_string();
    assert!(!text.contains(HOOK_SECRET), "{text}");
    assert!(!text.contains(crate::support::APP_SECRET), "{text}");
}

/// An error body names no `secret://` reference, no environment variable and
/// no header the binding expects (the log line may).
pub fn assert_names_nothing_internal(response: &Answer) {
    let text = response.body.to_string().to_ascii_lowercase();
    for internal in [
        "secret://",
        "astrolift_secret",
        "github_webhook_secret",
        "x-signature",
        "x-token",
        "x-timestamp",
        "x-hub-signature",
        "not-configured",
        "jira-hook",
    ] {
        assert!(!text.contains(internal), "{internal} in {text}");
    }
}

pub async fn post(fx: &Fixture, id: &str, body: &[u8]) -> Answer {
    let response = fx.service.handle(id, &signed(body), body).await;
    assert_no_secret(&response);
    assert_names_nothing_internal(&response);
    assert!(response.body.is_object(), "{response:?}");
    response
}

/// 202, then 200 with the same id for the same delivery, and one message.
async fn dispatches_once(fx: &Fixture) {
    let body = fixture("generic/jira_high.json");
    let first = post(fx, JIRA, &body).await;
    assert_eq!(first.status, 202, "{first:?}");
    let id = first.body["dispatch_id"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert_eq!(first.body["status"], "queued");
    assert_eq!(first.body["duplicate"], false);
    assert_eq!(first.body["agent"], "triage");
    assert_eq!(first.body["snapshot"], SNAPSHOT);
    let again = post(fx, JIRA, &body).await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.body["dispatch_id"], id.as_str());
    assert_eq!(again.body["duplicate"], true);
    let messages = fx.queue.messages();
    assert_eq!(messages.len(), 1, "a duplicate creates nothing");
    assert_eq!(messages[0].dispatch_id, id);
    assert_eq!(
        messages[0].payload,
        Some(json!({"mode": "triage", "issue": "OPS-17", "title": "Checkout is down"}))
    );
    let key =
        astrolift_trigger::idempotency::idempotency_key(&signed(&body), JIRA, &body, None, 256)
            .expect("a key");
    let stored = fx
        .state
        .get_dispatch(&key)
        .await
        .expect("reads")
        .expect("recorded");
    assert_eq!(stored.id, id);
    assert_eq!(stored.snapshot_hash, SNAPSHOT);
    assert_eq!((stored.sender, stored.trusted), (None, true));
}

/// Every refusal, with its status and a JSON body that names no secret.
async fn refuses(fx: &Fixture) {
    let low = post(fx, JIRA, &fixture("generic/jira_low.json")).await;
    assert_eq!((low.status, &low.body), (204, &json!({})));

    let body = fixture("generic/jira_high.json");
    let forged = headers(&[("X-Signature", &format!("sha256={}", "0".repeat(64)))]);
    let unauthorized = fx.service.handle(JIRA, &forged, &body).await;
    assert_eq!(unauthorized.status, 401, "{unauthorized:?}");
    let unsigned = fx.service.handle(JIRA, &headers(&[]), &body).await;
    assert_eq!(unsigned.status, 401, "{unsigned:?}");

    for id in ["trg_does_not_exist", GITHUB, ORPHANED] {
        let missing = post(fx, id, &body).await;
        assert_eq!(missing.status, 404, "{id}: {missing:?}");
        assert_eq!(missing.body["trigger_id"], id);
    }

    let huge = vec![b' '; 1024 * 1024 + 1];
    assert_eq!(post(fx, JIRA, &huge).await.status, 413);
    // Unsigned too: the size is checked before the signature (as `serve` does).
    let unsigned_huge = fx.service.handle(JIRA, &headers(&[]), &huge).await;
    assert_eq!(unsigned_huge.status, 413, "{unsigned_huge:?}");
    assert_eq!(post(fx, JIRA, b"{not json").await.status, 400);

    let keyless = br#"{"issue":{"fields":{"priority":{"name":"High"}}}}"#;
    let failed = post(fx, JIRA, keyless).await;
    assert_eq!(failed.status, 422, "{failed:?}");
    assert_eq!(failed.body["stage"], "payload mapping");
    let error = failed.body["error"].as_str().expect("a message");
    assert!(error.contains("issue.key is required"), "{error}");

    let token = headers(&[("X-Token", "anything")]);
    let unset = fx.service.handle(UNSET_SECRET, &token, &body).await;
    assert_eq!(unset.status, 500, "{unset:?}");
    assert_no_secret(&unset);
    for refused in [&unauthorized, &unsigned, &unset] {
        assert_names_nothing_internal(refused);
    }

    assert!(fx.queue.messages().is_empty(), "no refusal dispatches");
}

/// octokit's `issues.opened` and `issue_comment.created` reach the `github`
/// binding; other actions, events and repositories dispatch nothing.
async fn fans_out(fx: &Fixture) {
    let opened = fixture("github/octokit_issues_opened.json");
    let results = crate::support::fan_out(
        &fx.service,
        REPO,
        "issues",
        Some("opened"),
        "delivery-1",
        &opened,
    )
    .await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].trigger_id, GITHUB);
    assert_eq!(results[0].response.status, 202, "{results:?}");
    let first_id = results[0].response.body["dispatch_id"].clone();

    let comment = fixture("github/octokit_issue_comment_created.json");
    let results = crate::support::fan_out(
        &fx.service,
        REPO,
        "issue_comment",
        Some("created"),
        "delivery-2",
        &comment,
    )
    .await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].response.status, 202, "{results:?}");

    let redelivered = crate::support::fan_out(
        &fx.service,
        REPO,
        "issues",
        Some("opened"),
        "delivery-1",
        &opened,
    )
    .await;
    assert_eq!(redelivered[0].response.status, 200);
    assert_eq!(redelivered[0].response.body["dispatch_id"], first_id);

    for (repo, event, action) in [
        (REPO, "issues", Some("closed")),
        (REPO, "issue_comment", Some("deleted")),
        (REPO, "pull_request", Some("opened")),
        (REPO, "push", None),
        ("someone/else", "issues", Some("opened")),
    ] {
        let none =
            crate::support::fan_out(&fx.service, repo, event, action, "delivery-3", &opened).await;
        assert!(none.is_empty(), "{repo} {event} {action:?}: {none:?}");
    }

    let payloads: Vec<Option<Value>> = fx.queue.messages().into_iter().map(|m| m.payload).collect();
    let expected = Some(json!({"mode": "triage", "issue": 1, "repo": REPO}));
    assert_eq!(payloads, vec![expected.clone(), expected]);
}

#[tokio::test]
async fn sqlite_dispatches_once() {
    dispatches_once(&sqlite().await).await;
}

#[tokio::test]
async fn sqlite_refusals() {
    refuses(&sqlite().await).await;
}

#[tokio::test]
async fn sqlite_github_fan_out() {
    fans_out(&sqlite().await).await;
}

/// A delivery reads only the bindings of its repository that list its event, and loads an
/// agent only for a binding that matches: with 1,000 bindings of a busy repository stored,
/// a delivery for another repository, or of another event, reads none of them (records
/// counted by the store).
#[tokio::test]
async fn deliveries_read_only_their_repository_and_event() {
    let fx = sqlite().await;
    let busy = "busy/repo";
    let mut changes = ChangeSet::new(busy);
    // 40 agents of 25: a change of one agent is one transaction of at most 100 items.
    for agent_index in 0..40 {
        let manifest = format!("agents/a{agent_index}/astrolift.toml");
        let mut owner = agent(&manifest, &format!("a{agent_index}"), AgentStatus::Active);
        owner.repository = busy.to_owned();
        let mut change = AgentChange::new(owner, None, AuditAction::Added, "c0ffee", "test", 1);
        change.audit.repository = busy.to_owned();
        change.put_bindings = (0..25)
            .map(|i| {
                let mut binding = binding(
                    &format!("trg_busy_{agent_index}_{i:03}"),
                    &manifest,
                    &format!("a{agent_index}"),
                    &github_spec(),
                );
                binding.repository = busy.to_owned();
                binding
            })
            .collect();
        changes.agents.push(change);
    }
    fx.state
        .apply(changes)
        .await
        .expect("registers 1,000 bindings");
    let opened = fixture("github/octokit_issues_opened.json");

    let read = |repository: &'static str, event: &'static str, action: Option<&'static str>| {
        let fx = &fx;
        let opened = opened.clone();
        async move {
            let before = fx.state.stats();
            let results = crate::support::fan_out(
                &fx.service,
                repository,
                event,
                action,
                "delivery-count",
                &opened,
            )
            .await;
            let after = fx.state.stats();
            (results.len(), after.records_read - before.records_read)
        }
    };
    // Another repository's delivery: none of the busy repository's bindings is read.
    assert_eq!(read(REPO, "pull_request", Some("opened")).await, (0, 0));
    assert_eq!(read("someone/else", "issues", Some("opened")).await, (0, 0));
    // The busy repository's delivery of another event reads none of them either.
    assert_eq!(read(busy, "push", None).await, (0, 0));
    // A binding listed for the event whose action does not match: the binding is read,
    // its agent is not.
    assert_eq!(read(REPO, "issues", Some("closed")).await, (0, 1));
}

#[tokio::test]
async fn dynamodb_dispatches_once_refuses_and_fans_out() {
    for scenario in 0..3 {
        let Some(fx) = dynamo("dynamodb_dispatches_once_refuses_and_fans_out").await else {
            return;
        };
        match scenario {
            0 => dispatches_once(&fx).await,
            1 => refuses(&fx).await,
            _ => fans_out(&fx).await,
        }
    }
}

#[tokio::test]
async fn the_dispatch_message_reaches_sqs() {
    let Some(fx) = dynamo("the_dispatch_message_reaches_sqs").await else {
        return;
    };
    let config = astrolift_store::load_sdk_config().await;
    let sqs = SqsDispatchQueue::create(
        aws_sdk_sqs::Client::new(&config),
        &unique_name("dispatches"),
    )
    .await
    .expect("creates");
    let sqs = Arc::new(sqs);
    let over_sqs = service(fx.state.clone(), sqs.clone());
    let body = fixture("generic/jira_high.json");
    let response = over_sqs.handle(JIRA, &signed(&body), &body).await;
    assert_eq!(response.status, 202, "{response:?}");
    let messages = sqs.receive(1).await.expect("receives");
    assert_eq!(messages.len(), 1);
    assert_eq!(
        Value::String(messages[0].dispatch_id.clone()),
        response.body["dispatch_id"]
    );
}

#[tokio::test]
async fn programs_compile_once_per_binding_and_snapshot() {
    let fx = sqlite().await;
    let high = fixture("generic/jira_high.json");
    let low = fixture("generic/jira_low.json");
    for body in [&high, &low, &high, &low] {
        post(&fx, JIRA, body).await;
    }
    assert_eq!(fx.service.compilations(), 1);
    assert_eq!(fx.service.cached_bindings(), 1);

    let mut changed = binding(JIRA, MANIFEST, "triage", &jira_spec());
    changed.snapshot_hash = "snap-triage-2".to_owned();
    let mut agent = fx
        .state
        .get_agent(&astrolift_store::state::AgentKey::new(REPO, MANIFEST))
        .await
        .expect("reads")
        .expect("exists");
    let version = agent.version;
    agent.snapshot_hash = "snap-triage-2".to_owned();
    let mut change = AgentChange::new(agent, Some(version), AuditAction::Changed, "c1", "t", 2);
    change.put_bindings = vec![changed];
    fx.state
        .apply(ChangeSet {
            repository: REPO.to_owned(),
            agents: vec![change],
            synced: None,
        })
        .await
        .expect("updates");
    post(&fx, JIRA, &low).await;
    post(&fx, JIRA, &low).await;
    assert_eq!(
        fx.service.compilations(),
        2,
        "a new snapshot compiles again"
    );
    assert_eq!(fx.service.cached_bindings(), 1);
}

#[tokio::test]
async fn an_unreachable_store_is_503() {
    let fx = sqlite().await;
    let faulty: Arc<dyn StateStore> = Arc::new(FaultyStateStore::new(
        fx.state.clone(),
        FaultPlan::nth_call(1),
    ));
    let unreachable = service(faulty, fx.queue.clone());
    let body = fixture("generic/jira_high.json");
    let response = unreachable.handle(JIRA, &signed(&body), &body).await;
    assert_eq!(response.status, 503, "{response:?}");
    assert!(response.body["error"].is_string());

    let faulty: Arc<dyn StateStore> = Arc::new(FaultyStateStore::new(
        fx.state.clone(),
        FaultPlan::nth_write(1),
    ));
    let failing_writes = service(faulty, fx.queue.clone());
    let response = failing_writes.handle(JIRA, &signed(&body), &body).await;
    assert_eq!(
        response.status, 503,
        "the dispatch record failed: {response:?}"
    );
    assert!(
        fx.queue.messages().is_empty(),
        "nothing is queued unrecorded"
    );

    let faulty: Arc<dyn StateStore> = Arc::new(FaultyStateStore::new(
        fx.state.clone(),
        FaultPlan::nth_call(1),
    ));
    let results = service_fan_out(faulty, &fx).await;
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].trigger_id, "");
    assert_eq!(results[0].response.status, 503);
}

async fn service_fan_out(
    state: Arc<dyn StateStore>,
    fx: &Fixture,
) -> Vec<astrolift_trigger::FanOutResult> {
    crate::support::fan_out(
        &service(state, fx.queue.clone()),
        REPO,
        "issues",
        Some("opened"),
        "d",
        &fixture("github/octokit_issues_opened.json"),
    )
    .await
}
