//! The trigger replay (`astrolift_trigger::replayer`): kept requests through a registered and
//! a head binding, counted as computed by hand; nothing of a body shown unless the registered
//! binding allows values on a private repository; tenant scoping and the binding cap on
//! SQLite.

use std::collections::BTreeMap;
use std::sync::Arc;

use astrolift_manifest::triggers::{TriggerSource, TriggerSpec};
use astrolift_store::StateStore;
use astrolift_store::state::{KeptOutcome, KeptRequest, SqliteStateStore, TriggerBinding};
use astrolift_trigger::replay::{PathChange, Replayed};
use astrolift_trigger::replayer::{
    BindingReplay, MAX_REPLAYED_BINDINGS, ReplayOptions, ReplayTarget, replay_binding,
    replay_bindings,
};
use serde_json::{Value, json};

use crate::support::{hmac_verify, limits, spec};

const REPO: &str = "acme/agents";
const MANIFEST: &str = "agents/triage/astrolift.toml";
const NOW: i64 = 1_800_000_000;
/// In every kept body; must never appear in a replay's output.
const SENTINEL: &str = "sentinel-7f3a-never-shown";

const FILTER: &str = r#".priority == "High""#;
const MAPPING: &str = r#"{issue: .key, title: .summary}"#;

fn head_spec(filter: &str, payload: &str) -> TriggerSpec {
    spec(Some(hmac_verify()), Some(filter), Some(payload))
}

fn registered(id: &str, spec: &TriggerSpec) -> TriggerBinding {
    TriggerBinding {
        trigger_id: id.to_owned(),
        repository: REPO.to_owned(),
        manifest_path: MANIFEST.to_owned(),
        agent_name: "triage".to_owned(),
        name: spec.name.clone(),
        source: "generic".to_owned(),
        definition: serde_json::to_value(spec).expect("a spec serializes"),
        snapshot_hash: "snap-1".to_owned(),
    }
}

fn kept(id: &str, n: i64, body: Value, outcome: KeptOutcome) -> KeptRequest {
    KeptRequest {
        trigger_id: id.to_owned(),
        repository: REPO.to_owned(),
        id: format!("req-{n:02}"),
        received_at: NOW - 1000 + n,
        expires_at: KeptRequest::expiry_of(NOW - 1000 + n),
        headers: BTreeMap::new(),
        body: body.to_string(),
        outcome,
    }
}

/// Five requests: three High (dispatched), one Low and one Critical (filtered).
fn traffic(id: &str) -> Vec<KeptRequest> {
    let issue = |n: i64, priority: &str| json!({"key": format!("OPS-{n}"), "priority": priority, "summary": SENTINEL, "secret": SENTINEL});
    vec![
        kept(id, 1, issue(1, "High"), KeptOutcome::Dispatched),
        kept(id, 2, issue(2, "High"), KeptOutcome::Dispatched),
        kept(id, 3, issue(3, "Low"), KeptOutcome::Filtered),
        kept(id, 4, issue(4, "Critical"), KeptOutcome::Filtered),
        kept(id, 5, issue(5, "High"), KeptOutcome::Dispatched),
    ]
}

fn options(private: bool) -> ReplayOptions {
    ReplayOptions {
        last: 20,
        private,
        now: NOW,
    }
}

async fn replayed(
    registered_spec: &TriggerSpec,
    head: &TriggerSpec,
    private: bool,
) -> BindingReplay {
    let binding = registered("trg_jira", registered_spec);
    let target = ReplayTarget {
        registered: &binding,
        head,
        agent: "triage",
        span: None,
    };
    replay_binding(&target, &traffic("trg_jira"), options(private), &limits())
        .await
        .expect("both bindings compile")
}

fn shown(replay: &BindingReplay) -> String {
    format!(
        "{}\n{replay:?}",
        serde_json::to_string(replay).expect("serializes")
    )
}

#[tokio::test]
async fn counts_match_the_replay_computed_by_hand() {
    let before = head_spec(FILTER, MAPPING);
    // Critical now dispatches too; the title becomes a number (its length) and `mode` is added.
    let after = head_spec(
        r#".priority == "High" or .priority == "Critical""#,
        r#"{issue: .key, title: (.summary | length), mode: "triage"}"#,
    );
    let replay = replayed(&before, &after, false).await;
    // High ×3: changed; Low: filtered both times (unchanged); Critical: newly dispatched.
    assert_eq!(replay.replayed, 5);
    let counts = replay.counts;
    assert_eq!(
        (
            counts.unchanged,
            counts.changed,
            counts.newly_filtered,
            counts.newly_dispatched,
            counts.error
        ),
        (1, 3, 0, 1, 0),
        "{replay:#?}"
    );
    assert_eq!(replay.lost_dispatches(), 0);
    let Replayed::Changed { diff } = &replay.requests[0].replayed else {
        panic!("the first row is a changed request: {replay:#?}");
    };
    let paths: Vec<String> = diff
        .paths
        .iter()
        .map(|c| c.describe(str::to_owned))
        .collect();
    assert_eq!(
        paths,
        [
            ".mode added (string of 6)",
            ".title changed (string of 25 → number)"
        ]
    );
    assert!(matches!(diff.paths[0], PathChange::Added { .. }));
    assert!(!shown(&replay).contains(SENTINEL), "{}", shown(&replay));
}

#[tokio::test]
async fn an_unchanged_mapping_replays_as_unchanged() {
    let before = head_spec(FILTER, MAPPING);
    let same = head_spec(FILTER, "{title: .summary, issue: .key}");
    let replay = replayed(&before, &same, false).await;
    assert_eq!(replay.counts.unchanged, 5, "{replay:#?}");
    assert!(replay.requests.is_empty());
}

#[tokio::test]
async fn a_head_that_fails_or_filters_a_dispatched_request_loses_it_and_hides_the_error() {
    let before = head_spec(FILTER, MAPPING);
    // OPS-5 now fails with an error that quotes the body; OPS-2 is filtered out.
    let after = head_spec(
        r#".priority == "High" and .key != "OPS-2""#,
        r#"if .key == "OPS-5" then error("bad: \(.secret)") else {issue: .key, title: .summary} end"#,
    );
    let replay = replayed(&before, &after, false).await;
    let counts = replay.counts;
    assert_eq!(
        (counts.unchanged, counts.newly_filtered, counts.error),
        (3, 1, 1),
        "{replay:#?}"
    );
    assert_eq!(replay.lost_dispatches(), 2);
    let error = replay
        .requests
        .iter()
        .find_map(|r| match &r.replayed {
            Replayed::Error {
                error,
                was_dispatched,
            } => Some((error.clone(), *was_dispatched)),
            _ => None,
        })
        .expect("an error row");
    assert_eq!(error, ("the payload mapping failed".to_owned(), true));
    assert!(!shown(&replay).contains(SENTINEL), "{}", shown(&replay));
}

#[tokio::test]
async fn values_need_the_registered_key_and_a_private_repository() {
    let mut before = head_spec(FILTER, MAPPING);
    let after = head_spec(FILTER, r#"{issue: .key, title: .secret, n: 1}"#);
    // The head alone asking for values shows none.
    let head_asks = TriggerSpec {
        replay_values: true,
        ..after.clone()
    };
    let replay = replayed(&before, &head_asks, true).await;
    assert!(!replay.values && replay.requests.iter().all(|r| r.payloads.is_none()));
    before.replay_values = true;
    let public = replayed(&before, &after, false).await;
    assert!(!public.values);
    assert!(!shown(&public).contains(SENTINEL));
    let private = replayed(&before, &after, true).await;
    assert!(private.values);
    let payloads = private.requests[0]
        .payloads
        .as_ref()
        .expect("payloads shown");
    assert_eq!(payloads.head["n"], json!(1));
}

#[tokio::test]
async fn twenty_runaway_bodies_cost_twenty_bounded_evaluations_a_side() {
    let before = head_spec(FILTER, MAPPING);
    let runaway = head_spec("[range(1e9)] | length > 0", MAPPING);
    let binding = registered("trg_jira", &before);
    let target = ReplayTarget {
        registered: &binding,
        head: &runaway,
        agent: "triage",
        span: None,
    };
    let bodies: Vec<KeptRequest> = (0..20)
        .map(|n| {
            kept(
                "trg_jira",
                n,
                json!({"key": n, "priority": "High"}),
                KeptOutcome::Dispatched,
            )
        })
        .collect();
    let replay = replay_binding(&target, &bodies, options(false), &limits())
        .await
        .expect("compiles");
    assert_eq!(replay.replayed + replay.skipped, 20);
    assert_eq!(replay.counts.error, replay.replayed, "{replay:#?}");
}

#[tokio::test]
async fn another_repository_reads_none_and_at_most_eight_bindings_replay() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .expect("opens");
    let state: Arc<dyn StateStore> = Arc::new(store);
    let before = head_spec(FILTER, MAPPING);
    let after = head_spec(FILTER, "{issue: .key}");
    let bindings: Vec<TriggerBinding> = (0..10)
        .map(|n| registered(&format!("trg_{n:02}"), &before))
        .collect();
    for binding in &bindings {
        for request in traffic(&binding.trigger_id) {
            state
                .kept_requests()
                .keep_request(&request, 20)
                .await
                .expect("kept");
        }
    }
    let targets: Vec<ReplayTarget<'_>> = bindings
        .iter()
        .map(|registered| ReplayTarget {
            registered,
            head: &after,
            agent: "triage",
            span: None,
        })
        .collect();
    let elsewhere = replay_bindings(
        state.as_ref(),
        "mallory/copy",
        &targets[..1],
        options(false),
        &limits(),
    )
    .await;
    assert_eq!(elsewhere.bindings[0].replayed, 0, "{elsewhere:#?}");
    let replay = replay_bindings(state.as_ref(), REPO, &targets, options(false), &limits()).await;
    assert_eq!(replay.bindings.len(), MAX_REPLAYED_BINDINGS);
    assert!(
        replay
            .bindings
            .iter()
            .all(|b| b.replayed == 5 && b.counts.changed == 3)
    );
    let named: Vec<&str> = replay
        .not_replayed
        .iter()
        .map(|n| n.trigger_id.as_str())
        .collect();
    assert_eq!(named, ["trg_08", "trg_09"]);
}

#[tokio::test]
async fn a_github_binding_replays_only_the_events_it_lists() {
    let mut before = spec(None, None, Some("{n: .issue.number}"));
    before.source = TriggerSource::Github;
    before.events = vec!["issues.opened".to_owned()];
    let mut after = before.clone();
    after.events = vec!["issues.opened".to_owned(), "issues.closed".to_owned()];
    let mut binding = registered("trg_gh", &before);
    binding.source = "github".to_owned();
    let event = |n: i64, action: &str| {
        let mut request = kept(
            "trg_gh",
            n,
            json!({"action": action, "issue": {"number": n}}),
            KeptOutcome::Dispatched,
        );
        request
            .headers
            .insert("x-github-event".to_owned(), "issues".to_owned());
        request
    };
    let requests = [event(1, "opened"), event(2, "closed")];
    let target = ReplayTarget {
        registered: &binding,
        head: &after,
        agent: "triage",
        span: None,
    };
    let replay = replay_binding(&target, &requests, options(false), &limits())
        .await
        .expect("compiles");
    let counts = replay.counts;
    assert_eq!(
        (counts.unchanged, counts.newly_dispatched),
        (1, 1),
        "{replay:#?}"
    );
}
