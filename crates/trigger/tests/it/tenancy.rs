//! Tenancy and trust: project-scoped secrets (on moto's Secrets Manager),
//! the trust policy of GitHub-sourced bindings (real payload shapes from
//! `crates/forge/tests/fixtures/payloads`), timestamped signatures, the
//! idempotency key limit, and error bodies that name nothing internal.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use astrolift_dispatch::dispatch::MemoryDispatchQueue;
use astrolift_manifest::triggers::{TriggerSource, TriggerSpec, Verify};
use astrolift_store::StateStore;
use astrolift_store::state::{
    AgentChange, AgentStatus, AuditAction, ChangeSet, SqliteStateStore, TriggerBinding,
};
use astrolift_store::testing::{aws_endpoint, unique_name};
use astrolift_trigger::trust::assess;
use astrolift_trigger::verify::{now_seconds, verify_at};
use astrolift_trigger::{AwsSecretResolver, SecretError, SecretResolver, TriggerService};
use http::HeaderMap;
use serde_json::{Value, json};

use crate::service::{agent, assert_names_nothing_internal};
use crate::support::{FixedSecrets, HOOK_REF, HOOK_SECRET, headers, hmac_hex, limits};

const GITHUB_REPO: &str = "Codertocat/Hello-World";

fn spec(name: &str, source: TriggerSource, verify: Option<Verify>) -> TriggerSpec {
    crate::service::trigger(name, source, verify)
}

/// A stored binding; [`register`] sets its repository and manifest.
fn stored(id: &str, spec: &TriggerSpec) -> TriggerBinding {
    crate::service::binding(id, "", "agent", spec)
}

/// Registers an active agent of `project` in `repository` with `bindings`.
async fn register(
    state: &dyn StateStore,
    repository: &str,
    project: &str,
    bindings: Vec<TriggerBinding>,
) {
    let manifest = "agents/triage/astrolift.toml";
    let mut record = agent(manifest, "agent", AgentStatus::Active);
    record.repository = repository.to_owned();
    record.project_id = project.to_owned();
    let mut change = AgentChange::new(record, None, AuditAction::Added, "c0ffee", "test", 1);
    change.put_bindings = bindings
        .into_iter()
        .map(|b| TriggerBinding {
            repository: repository.to_owned(),
            manifest_path: manifest.to_owned(),
            ..b
        })
        .collect();
    state
        .apply(ChangeSet {
            repository: repository.to_owned(),
            agents: vec![change],
            synced: None,
        })
        .await
        .expect("registers");
}

struct Setup {
    service: TriggerService,
    state: Arc<dyn StateStore>,
    queue: Arc<MemoryDispatchQueue>,
    _dir: tempfile::TempDir,
}

async fn setup(secrets: Arc<dyn SecretResolver>) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("sqlite"),
    );
    let queue = Arc::new(MemoryDispatchQueue::new());
    let service = TriggerService::new(state.clone(), secrets, queue.clone(), limits());
    Setup {
        service,
        state,
        queue,
        _dir: dir,
    }
}

// ---------------------------------------------------------------- trust

/// A real webhook payload of `crates/forge/tests/fixtures/payloads`.
fn payload(path: &str) -> Value {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../forge/tests/fixtures/payloads")
        .join(path);
    let text = std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
    serde_json::from_slice(&text).expect("JSON")
}

/// The pull request opened from a fork `stranger/Hello-World` by `stranger`.
fn fork_pull_request(association: &str) -> Value {
    let mut event = payload("pull_request/opened.with-installation.json");
    event["sender"]["login"] = json!("stranger");
    event["pull_request"]["user"]["login"] = json!("stranger");
    event["pull_request"]["author_association"] = json!(association);
    let head = &mut event["pull_request"]["head"]["repo"];
    head["id"] = json!(999_999);
    head["full_name"] = json!("stranger/Hello-World");
    head["fork"] = json!(true);
    event
}

/// A comment by `stranger` (no association) on the owner's issue.
fn stranger_comment() -> Value {
    let mut event = payload("issue_comment/created.json");
    event["sender"]["login"] = json!("stranger");
    event["comment"]["user"]["login"] = json!("stranger");
    event["comment"]["author_association"] = json!("NONE");
    event
}

fn bytes(event: &Value) -> Vec<u8> {
    serde_json::to_vec(event).expect("serializes")
}

#[test]
fn the_trust_verdict_on_real_payload_shapes() {
    let owner_pr = assess(&bytes(&payload(
        "pull_request/opened.with-installation.json",
    )));
    assert!(owner_pr.trusted, "{owner_pr:?}");
    assert_eq!(owner_pr.sender.as_deref(), Some("Codertocat"));
    let owner_comment = assess(&bytes(&payload("issue_comment/created.json")));
    assert!(owner_comment.trusted, "{owner_comment:?}");
    assert!(assess(&bytes(&payload("issues/opened.json"))).trusted);

    for association in ["CONTRIBUTOR", "OWNER"] {
        let fork = assess(&bytes(&fork_pull_request(association)));
        assert!(!fork.trusted, "a fork is untrusted even for {association}");
        assert_eq!(fork.sender.as_deref(), Some("stranger"));
        assert!(fork.reason.contains("fork"), "{fork:?}");
    }
    let mut deleted_fork = payload("pull_request/opened.with-installation.json");
    deleted_fork["pull_request"]["head"]["repo"] = Value::Null;
    assert!(!assess(&bytes(&deleted_fork)).trusted);

    let stranger = assess(&bytes(&stranger_comment()));
    assert!(!stranger.trusted);
    assert!(stranger.reason.contains("NONE"), "{stranger:?}");
    for association in ["FIRST_TIME_CONTRIBUTOR", "CONTRIBUTOR", "MANNEQUIN", "NONE"] {
        let mut event = stranger_comment();
        event["comment"]["author_association"] = json!(association);
        assert!(!assess(&bytes(&event)).trusted, "{association}");
    }
    for association in ["OWNER", "MEMBER", "COLLABORATOR"] {
        let mut event = stranger_comment();
        event["comment"]["author_association"] = json!(association);
        assert!(assess(&bytes(&event)).trusted, "{association}");
    }
    // A member commenting on a stranger's issue is the member's event.
    let mut member_on_stranger = stranger_comment();
    member_on_stranger["comment"]["author_association"] = json!("MEMBER");
    member_on_stranger["issue"]["user"]["login"] = json!("someone");
    member_on_stranger["issue"]["author_association"] = json!("NONE");
    assert!(assess(&bytes(&member_on_stranger)).trusted);
    // A sender whose association the event does not carry is untrusted.
    let push = assess(&bytes(&payload(
        "push/branch.created.with-installation.json",
    )));
    assert!(!push.trusted, "{push:?}");
    assert!(!assess(b"not json").trusted);
    assert!(!assess(b"[]").trusted);
}

fn github_spec(name: &str, allow_untrusted: bool) -> TriggerSpec {
    let mut spec = spec(name, TriggerSource::Github, None);
    spec.events = vec![
        "pull_request.opened".to_owned(),
        "issue_comment.created".to_owned(),
    ];
    spec.payload = Some(r#"{who: .sender.login}"#.to_owned());
    spec.allow_untrusted = allow_untrusted;
    spec
}

/// Fork and stranger events: the strict binding refuses (403, nothing
/// queued), the `allow_untrusted` one dispatches with `trusted: false`; a
/// trusted event dispatches on both with `trusted: true`. The dispatch
/// records and messages carry `sender` and `trusted`.
#[tokio::test]
async fn untrusted_events_dispatch_only_where_allowed() {
    let fx = setup(Arc::new(FixedSecrets::new())).await;
    register(
        fx.state.as_ref(),
        GITHUB_REPO,
        "proj-1",
        vec![
            stored("trg_strict", &github_spec("strict", false)),
            stored("trg_open", &github_spec("open", true)),
        ],
    )
    .await;
    let cases = [
        ("pull_request", fork_pull_request("CONTRIBUTOR"), false),
        ("pull_request", fork_pull_request("OWNER"), false),
        ("issue_comment", stranger_comment(), false),
        (
            "pull_request",
            payload("pull_request/opened.with-installation.json"),
            true,
        ),
        ("issue_comment", payload("issue_comment/created.json"), true),
    ];
    for (n, (event, body, trusted)) in cases.iter().enumerate() {
        let action = body["action"].as_str();
        let delivery = format!("delivery-{n}");
        let results = crate::support::fan_out(
            &fx.service,
            GITHUB_REPO,
            event,
            action,
            &delivery,
            &bytes(body),
        )
        .await;
        assert_eq!(results.len(), 2, "{n}: {results:?}");
        for result in &results {
            let strict = result.trigger_id == "trg_strict";
            let expected = if strict && !trusted { 403 } else { 202 };
            assert_eq!(result.response.status, expected, "{n}: {result:?}");
            if expected == 403 {
                let error = result.response.body["error"].as_str().unwrap_or_default();
                assert!(error.contains("allow_untrusted"), "{error}");
                continue;
            }
            let key = format!("{}:delivery:{delivery}", result.trigger_id);
            let record = fx
                .state
                .get_dispatch(&key)
                .await
                .expect("reads")
                .expect("recorded");
            let sender = body["sender"]["login"].as_str().map(str::to_owned);
            assert_eq!((record.sender, record.trusted), (sender, *trusted), "{n}");
        }
    }
    let messages = fx.queue.messages();
    assert_eq!(
        messages.len(),
        3 + 2 * 2,
        "untrusted events queue only on `open`"
    );
    let untrusted: Vec<_> = messages.iter().filter(|m| !m.trusted).collect();
    assert_eq!(untrusted.len(), 3);
    assert!(untrusted.iter().all(|m| m.trigger_id() == Some("trg_open")));
    assert!(
        untrusted
            .iter()
            .all(|m| m.sender.as_deref() == Some("stranger"))
    );
}

// ---------------------------------------------------- replay protection

fn timed_verify() -> Verify {
    Verify::HmacSha256 {
        header: "X-Signature".to_owned(),
        prefix: Some("sha256=".to_owned()),
        secret: HOOK_REF.to_owned(),
        timestamp_header: Some("X-Timestamp".to_owned()),
        tolerance_seconds: Some(300),
    }
}

/// Headers for `body` signed as `"{timestamp}.{body}"`.
fn timed(timestamp: &str, body: &[u8], extra: &[(&str, &str)]) -> HeaderMap {
    let mut signed = timestamp.as_bytes().to_vec();
    signed.push(b'.');
    signed.extend_from_slice(body);
    let signature = format!("sha256={}", hmac_hex(&signed, HOOK_SECRET));
    let mut pairs = vec![
        ("X-Signature", signature.as_str()),
        ("X-Timestamp", timestamp),
    ];
    pairs.extend_from_slice(extra);
    headers(&pairs)
}

#[tokio::test]
async fn the_tolerance_window_at_its_edges() {
    let body = br#"{"a":1}"#;
    let now = 1_800_000_000;
    let secrets = FixedSecrets::new();
    for (skew, accepted) in [
        (0, true),
        (300, true),
        (-300, true),
        (301, false),
        (-301, false),
    ] {
        let at = (now + skew).to_string();
        let result = verify_at(
            &timed_verify(),
            &timed(&at, body, &[]),
            body,
            &secrets,
            "p",
            now,
        )
        .await;
        assert_eq!(result.is_ok(), accepted, "skew {skew}: {result:?}");
        if let Err(error) = result {
            assert_eq!(error.status(), 401);
        }
    }
}

#[tokio::test]
async fn timestamped_signatures_refuse_stale_and_replayed_requests() {
    let fx = setup(Arc::new(FixedSecrets::new())).await;
    let binding = stored(
        "trg_timed",
        &spec("timed", TriggerSource::Generic, Some(timed_verify())),
    );
    register(fx.state.as_ref(), "acme/a", "proj-1", vec![binding]).await;
    let body = br#"{"issue":"A-1"}"#;
    let now = now_seconds().to_string();

    let first = fx
        .service
        .handle("trg_timed", &timed(&now, body, &[]), body)
        .await;
    assert_eq!(first.status, 202, "{first:?}");
    // The same timestamp and signature, with a fresh Idempotency-Key: a replay.
    let replay = timed(&now, body, &[("Idempotency-Key", "a-new-key")]);
    let again = fx.service.handle("trg_timed", &replay, body).await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.body["dispatch_id"], first.body["dispatch_id"]);
    assert_eq!(again.body["duplicate"], true);

    let stale = (now_seconds() - 301).to_string();
    let future = (now_seconds() + 3600).to_string();
    let untimed = headers(&[(
        "X-Signature",
        &format!("sha256={}", hmac_hex(body, HOOK_SECRET)),
    )]);
    let mut body_only = untimed.clone();
    body_only.insert("x-timestamp", now.parse().expect("header value"));
    let malformed = timed("17e8", body, &[]);
    for (case, request) in [
        ("stale", timed(&stale, body, &[])),
        ("future", timed(&future, body, &[])),
        ("missing", untimed),
        ("signature without the timestamp", body_only),
        ("malformed", malformed),
    ] {
        let response = fx.service.handle("trg_timed", &request, body).await;
        assert_eq!(response.status, 401, "{case}: {response:?}");
        assert_names_nothing_internal(&response);
    }
    assert_eq!(fx.queue.messages().len(), 1);
}

// ------------------------------------------------------ idempotency key

#[tokio::test]
async fn idempotency_keys_over_256_bytes_are_400() {
    let fx = setup(Arc::new(FixedSecrets::new())).await;
    let verify = crate::support::hmac_verify();
    let binding = stored(
        "trg_keyed",
        &spec("keyed", TriggerSource::Generic, Some(verify)),
    );
    register(fx.state.as_ref(), "acme/a", "proj-1", vec![binding]).await;
    let body = br#"{"issue":"A-1"}"#;
    for (header, size, status) in [
        ("Idempotency-Key", 256, 202),
        ("Idempotency-Key", 257, 400),
        ("Idempotency-Key", 10 * 1024, 400),
        ("X-GitHub-Delivery", 257, 400),
    ] {
        let key = "k".repeat(size);
        let mut request = crate::support::signed(body);
        request.insert(
            http::HeaderName::from_static(if header == "Idempotency-Key" {
                "idempotency-key"
            } else {
                "x-github-delivery"
            }),
            key.parse().expect("header value"),
        );
        let response = fx.service.handle("trg_keyed", &request, body).await;
        assert_eq!(
            response.status, status,
            "{header} of {size} bytes: {response:?}"
        );
        let text = response.body.to_string();
        assert!(text.len() < 512, "the key is not echoed: {text}");
        assert_names_nothing_internal(&response);
    }
    assert_eq!(fx.queue.messages().len(), 1);
}

// ----------------------------------------------- project-scoped secrets

fn token(secret: &str) -> TriggerSpec {
    spec(
        "hook",
        TriggerSource::Generic,
        Some(Verify::Token {
            header: "X-Token".to_owned(),
            secret: secret.to_owned(),
        }),
    )
}

#[test]
fn secret_ids_stay_under_their_project() {
    use astrolift_trigger::secrets::scoped_secret_id;
    assert_eq!(
        scoped_secret_id("astrolift/", "proj-a", "secret://agents/hook").as_deref(),
        Ok("astrolift/proj-a/agents/hook")
    );
    assert_eq!(
        scoped_secret_id("astrolift/", "proj-a", "secret://../proj-b/hook").as_deref(),
        Ok("astrolift/proj-a/../proj-b/hook"),
        "a literal name under proj-a, never proj-b's secret"
    );
    for project in ["", "a/b", ".", "..", "a b", "arn:aws:x"] {
        assert!(
            matches!(
                scoped_secret_id("astrolift/", project, "secret://x"),
                Err(SecretError::InvalidProject(_))
            ),
            "{project:?}"
        );
    }
}

/// Project A's bindings name project B's secret every way they can: none
/// reads it (500, a configuration error that names nothing), A's own
/// secret works, and a missing secret is 500 while B's binding dispatches.
#[tokio::test]
async fn a_project_cannot_read_another_projects_secret() {
    let Some(_) = aws_endpoint("a_project_cannot_read_another_projects_secret") else {
        return;
    };
    let config = astrolift_store::load_sdk_config().await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
    let prefix = format!("{}/", unique_name("astrolift-tenancy"));
    // `agents/hook` is where an unscoped resolver would find B's secret.
    for (name, value) in [
        (format!("{prefix}proj-b/agents/hook"), "b-secret"),
        (format!("{prefix}proj-a/agents/own"), "a-secret"),
        (format!("{prefix}agents/hook"), "unscoped-secret"),
        ("agents/hook".to_owned(), "b-secret"),
    ] {
        let created = client
            .create_secret()
            .name(&name)
            .secret_string(value)
            .send()
            .await;
        if created.is_err() {
            client
                .put_secret_value()
                .secret_id(&name)
                .secret_string(value)
                .send()
                .await
                .expect("creates or updates");
        }
    }
    let resolver = AwsSecretResolver::new(client, Duration::from_secs(300)).with_prefix(&prefix);
    let fx = setup(Arc::new(resolver)).await;
    register(
        fx.state.as_ref(),
        "bee/b",
        "proj-b",
        vec![stored("trg_b", &token("secret://agents/hook"))],
    )
    .await;
    let mut own = token("secret://agents/own");
    own.name = "own".to_owned();
    let mut dots = token("secret://../proj-b/agents/hook");
    dots.name = "dots".to_owned();
    register(
        fx.state.as_ref(),
        "acme/a",
        "proj-a",
        vec![
            stored("trg_a_cross", &token("secret://agents/hook")),
            stored("trg_a_dots", &dots),
            stored("trg_a_own", &own),
        ],
    )
    .await;
    let body = br#"{"x":1}"#;
    let with = |value: &str| headers(&[("X-Token", value)]);

    // B's binding reads B's secret (and fills the cache first).
    assert_eq!(
        fx.service
            .handle("trg_b", &with("b-secret"), body)
            .await
            .status,
        202
    );
    for id in ["trg_a_cross", "trg_a_dots"] {
        for value in ["b-secret", "unscoped-secret"] {
            let response = fx.service.handle(id, &with(value), body).await;
            assert_eq!(response.status, 500, "{id}: {response:?}");
            assert_names_nothing_internal(&response);
            assert!(!response.body.to_string().contains("proj-b"));
        }
    }
    assert_eq!(
        fx.service
            .handle("trg_a_own", &with("b-secret"), body)
            .await
            .status,
        401
    );
    assert_eq!(
        fx.service
            .handle("trg_a_own", &with("a-secret"), body)
            .await
            .status,
        202
    );
    let messages = fx.queue.messages();
    assert_eq!(
        messages
            .iter()
            .filter_map(|m| m.trigger_id())
            .collect::<Vec<_>>(),
        ["trg_b", "trg_a_own"]
    );
}

/// A Secrets Manager that cannot be reached is 503 (retry), not 500.
#[tokio::test]
async fn an_unreachable_secret_store_is_503() {
    use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_secretsmanager::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        // Nothing listens on the discard port.
        .endpoint_url("http://127.0.0.1:9")
        .retry_config(aws_sdk_secretsmanager::config::retry::RetryConfig::disabled())
        .build();
    let client = aws_sdk_secretsmanager::Client::from_conf(config);
    let resolver = AwsSecretResolver::new(client, Duration::from_secs(300));
    let error = resolver
        .resolve("proj-a", "secret://agents/hook")
        .await
        .expect_err("unreachable");
    assert!(error.is_unavailable(), "{error}");
    let fx = setup(Arc::new(resolver)).await;
    register(
        fx.state.as_ref(),
        "acme/a",
        "proj-a",
        vec![stored("trg_a", &token("secret://agents/hook"))],
    )
    .await;
    let response = fx
        .service
        .handle("trg_a", &headers(&[("X-Token", "x")]), br#"{}"#)
        .await;
    assert_eq!(response.status, 503, "{response:?}");
    assert_names_nothing_internal(&response);
}
