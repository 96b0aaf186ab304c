//! Kept requests (docs/reference.md §10, "Kept requests"): what `TriggerService` keeps of
//! the requests it answers, on SQLite and on DynamoDB when moto is running — `202` and `204`
//! only, the 20-request window, the 256 KiB cut, `keep_deliveries = 0`, a GitHub event's
//! header, and the purge of a torn-down agent's bindings.

use astrolift_store::StateStore;
use astrolift_store::state::{
    AgentChange, AgentKey, AgentStatus, AuditAction, ChangeSet, KeptOutcome, KeptRequest,
    MAX_KEPT_BODY,
};
use serde_json::json;

use crate::service::{
    Fixture, GITHUB, JIRA, MANIFEST, REPO, agent, binding, dynamo, jira_spec, post, sqlite,
};
use crate::support::fixture;

const NOW: i64 = 2_000_000_000;
const LEAN: &str = "trg_lean";

async fn kept(state: &dyn StateStore, trigger_id: &str) -> Vec<KeptRequest> {
    state
        .kept_requests()
        .list_kept_requests(trigger_id, REPO, 0, 20)
        .await
        .expect("lists")
}

/// A generic request of `size` bytes exactly that dispatches: the High fixture padded.
fn high_of_size(key: &str, size: usize) -> Vec<u8> {
    let empty = json!({"issue": {"key": key, "fields": {"summary": "s", "priority": {"name": "High"}}}, "pad": ""});
    let base = empty.to_string().len();
    let mut body = empty;
    body["pad"] = json!("x".repeat(size - base));
    let text = body.to_string();
    assert_eq!(text.len(), size);
    text.into_bytes()
}

async fn keeps_what_it_answered(fx: &Fixture) {
    let high = fixture("generic/jira_high.json");
    assert_eq!(post(fx, JIRA, &high).await.status, 202);
    assert_eq!(post(fx, JIRA, &high).await.status, 200, "a duplicate");
    let low = fixture("generic/jira_low.json");
    assert_eq!(post(fx, JIRA, &low).await.status, 204);
    let unsigned = fx.service.handle(JIRA, &Default::default(), &high).await;
    assert_eq!(unsigned.status, 401);
    let requests = kept(fx.state.as_ref(), JIRA).await;
    let outcomes: Vec<KeptOutcome> = requests.iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes.len(), 2, "202 and 204 only: {requests:?}");
    assert!(
        outcomes.contains(&KeptOutcome::Dispatched) && outcomes.contains(&KeptOutcome::Filtered)
    );
    let dispatched = requests
        .iter()
        .find(|r| r.outcome == KeptOutcome::Dispatched)
        .expect("kept");
    assert_eq!(dispatched.body.as_bytes(), high.as_slice());
    assert!(dispatched.headers.is_empty(), "no signature is kept");
    assert_eq!(dispatched.repository, REPO);
    assert!(dispatched.expires_at > dispatched.received_at);
}

async fn keeps_the_last_twenty_and_cuts_at_256_kib(fx: &Fixture) {
    for n in 0..21 {
        let body = high_of_size(&format!("OPS-{n}"), 200 + n);
        assert_eq!(post(fx, JIRA, &body).await.status, 202);
    }
    let requests = kept(fx.state.as_ref(), JIRA).await;
    assert_eq!(requests.len(), 20);
    assert!(
        !requests.iter().any(|r| r.body.contains("\"OPS-0\"")),
        "the oldest went"
    );
    let at_limit = high_of_size("OPS-limit", MAX_KEPT_BODY);
    assert_eq!(post(fx, JIRA, &at_limit).await.status, 202);
    let past = high_of_size("OPS-past", MAX_KEPT_BODY + 1);
    assert_eq!(
        post(fx, JIRA, &past).await.status,
        202,
        "answered as before"
    );
    let requests = kept(fx.state.as_ref(), JIRA).await;
    assert!(requests.iter().any(|r| r.body.len() == MAX_KEPT_BODY));
    assert!(!requests.iter().any(|r| r.body.contains("OPS-past")));
}

async fn keeps_none_with_keep_deliveries_zero(fx: &Fixture) {
    let lean = astrolift_manifest::triggers::TriggerSpec {
        name: "lean".to_owned(),
        keep_deliveries: Some(0),
        ..jira_spec()
    };
    let mut change = AgentChange::new(
        agent("agents/lean/astrolift.toml", "lean", AgentStatus::Active),
        None,
        AuditAction::Added,
        "c0ffee",
        "test",
        1,
    );
    change.put_bindings = vec![binding(LEAN, "agents/lean/astrolift.toml", "lean", &lean)];
    fx.state
        .apply(ChangeSet {
            repository: REPO.to_owned(),
            agents: vec![change],
            synced: None,
        })
        .await
        .expect("registers");
    let high = fixture("generic/jira_high.json");
    assert_eq!(post(fx, LEAN, &high).await.status, 202);
    assert!(kept(fx.state.as_ref(), LEAN).await.is_empty());
}

async fn keeps_a_github_event_and_purges_on_teardown(fx: &Fixture) {
    let opened = fixture("github/octokit_issues_opened.json");
    let results =
        crate::support::fan_out(&fx.service, REPO, "issues", Some("opened"), "d-1", &opened).await;
    assert_eq!(results[0].response.status, 202, "{results:?}");
    let requests = kept(fx.state.as_ref(), GITHUB).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0]
            .headers
            .get("x-github-event")
            .map(String::as_str),
        Some("issues")
    );
    assert_eq!(
        post(fx, JIRA, &fixture("generic/jira_high.json"))
            .await
            .status,
        202
    );
    fx.state
        .teardown(&AgentKey::new(REPO, MANIFEST), NOW, "test")
        .await
        .expect("tears down");
    assert!(kept(fx.state.as_ref(), GITHUB).await.is_empty());
    assert!(kept(fx.state.as_ref(), JIRA).await.is_empty());
}

#[tokio::test]
async fn sqlite_keeps_what_it_answered() {
    keeps_what_it_answered(&sqlite().await).await;
}

#[tokio::test]
async fn sqlite_keeps_the_last_twenty_and_cuts_at_256_kib() {
    keeps_the_last_twenty_and_cuts_at_256_kib(&sqlite().await).await;
}

#[tokio::test]
async fn sqlite_keeps_none_with_keep_deliveries_zero() {
    keeps_none_with_keep_deliveries_zero(&sqlite().await).await;
}

#[tokio::test]
async fn sqlite_keeps_a_github_event_and_purges_on_teardown() {
    keeps_a_github_event_and_purges_on_teardown(&sqlite().await).await;
}

#[tokio::test]
async fn dynamodb_keeps_requests() {
    for scenario in 0..4 {
        let Some(fx) = dynamo("dynamodb_keeps_requests").await else {
            return;
        };
        match scenario {
            0 => keeps_what_it_answered(&fx).await,
            1 => keeps_the_last_twenty_and_cuts_at_256_kib(&fx).await,
            2 => keeps_none_with_keep_deliveries_zero(&fx).await,
            _ => keeps_a_github_event_and_purges_on_teardown(&fx).await,
        }
    }
}
