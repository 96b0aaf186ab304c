//! The KeptRequestStore contract, run against SQLite and DynamoDB (moto): each binding's
//! last accepted requests, newest first, at most its window (20 at the most), read by
//! binding and repository, never expired, and gone with the binding
//! (docs/reference.md §10, "Kept requests").

use std::collections::BTreeMap;

use astrolift_store::state::*;
use astrolift_store::{StateStore, StoreError};

use crate::state_contract::*;

/// The binding of `first_registration`'s triage agent.
const TRIGGER: &str = "trg-1";
const TRIAGE: &str = "agents/triage/astrolift.toml";
const TTL: i64 = KEPT_REQUEST_TTL.as_secs() as i64;

fn kept(trigger_id: &str, received_at: UnixSeconds, id: &str) -> KeptRequest {
    KeptRequest {
        trigger_id: trigger_id.into(),
        repository: REPO.into(),
        id: id.into(),
        received_at,
        expires_at: KeptRequest::expiry_of(received_at),
        headers: BTreeMap::from([
            ("x-github-event".into(), "issues".into()),
            ("x-github-hook-id".into(), "7".into()),
        ]),
        body: format!(r#"{{"id":"{id}","title":"Ünïcode ✓","n":{received_at}}}"#),
        outcome: KeptOutcome::Dispatched,
    }
}

/// `count` requests of `trigger_id`, a second apart from `NOW - count`, ids `r00`, `r01`…
fn series(trigger_id: &str, count: usize) -> Vec<KeptRequest> {
    (0..count)
        .map(|i| kept(trigger_id, NOW - (count - i) as i64, &format!("r{i:02}")))
        .collect()
}

async fn keep_all(store: &dyn KeptRequestStore, requests: &[KeptRequest], keep: usize) {
    for request in requests {
        store.keep_request(request, keep).await.unwrap();
    }
}

/// Every unexpired request of `trigger_id` in `REPO` at `NOW`.
async fn listed(store: &dyn KeptRequestStore, trigger_id: &str) -> Vec<KeptRequest> {
    store
        .list_kept_requests(trigger_id, REPO, NOW, 100)
        .await
        .unwrap()
}

fn ids(requests: &[KeptRequest]) -> Vec<&str> {
    requests.iter().map(|r| r.id.as_str()).collect()
}

/// The requests of `requests` in the order a listing returns them: newest first.
fn newest_first(requests: &[KeptRequest]) -> Vec<KeptRequest> {
    let mut sorted = requests.to_vec();
    sorted.sort_by(|a, b| (b.received_at, &b.id).cmp(&(a.received_at, &a.id)));
    sorted
}

fn writes(state: &dyn StateStore) -> u64 {
    state.stats().writes
}

/// A listing is newest first by (received at, id), every field as kept; a keep makes at
/// most one read (on DynamoDB, of the binding's small key items: never a body).
pub async fn kept_requests_are_listed_newest_first_as_kept(subject: Subject) {
    let state = subject.store.as_ref();
    let store = state.kept_requests();
    assert!(listed(store, TRIGGER).await.is_empty());
    let mut filtered = kept(TRIGGER, NOW - 30, "b");
    filtered.outcome = KeptOutcome::Filtered;
    filtered.headers.clear();
    let requests = vec![
        kept(TRIGGER, NOW - 60, "c"),
        filtered,
        // The same second: the id orders them.
        kept(TRIGGER, NOW - 30, "a"),
        kept(TRIGGER, NOW - 10, "d"),
        // Came before the others but kept last: time orders, not the keeping.
        kept(TRIGGER, NOW - 90, "e"),
    ];
    for request in &requests {
        let (kept, (reads, _)) =
            counted(state, store.keep_request(request, MAX_KEPT_REQUESTS)).await;
        kept.unwrap();
        assert!(reads <= 1, "a keep made {reads} reads");
    }
    let listed = listed(store, TRIGGER).await;
    assert_eq!(ids(&listed), ["d", "b", "a", "c", "e"]);
    assert_eq!(listed, newest_first(&requests), "every field round-trips");
    assert_eq!(listed[1].outcome, KeptOutcome::Filtered);
    assert!(listed[1].headers.is_empty());
}

/// A binding keeps its 20 newest: the 21st pushes the oldest out, deleted, not hidden.
pub async fn a_binding_keeps_its_twenty_newest(subject: Subject) {
    let store = subject.store.kept_requests();
    let requests = series(TRIGGER, MAX_KEPT_REQUESTS + 1);
    // A window past 20 is 20.
    keep_all(store, &requests, 50).await;
    let listed = listed(store, TRIGGER).await;
    assert_eq!(listed.len(), MAX_KEPT_REQUESTS);
    assert_eq!(listed, newest_first(&requests[1..]));
    assert!(listed.iter().all(|r| r.id != "r00"), "the oldest is gone");
    assert_eq!(
        store.purge_kept_requests(TRIGGER).await.unwrap(),
        MAX_KEPT_REQUESTS,
        "the oldest was deleted"
    );
}

/// A binding may keep fewer: its window is its newest `keep`, and a smaller window drops
/// what is past it at the next keep. Keeping none writes nothing.
pub async fn a_binding_may_keep_fewer_or_none(subject: Subject) {
    let state = subject.store.as_ref();
    let store = state.kept_requests();
    let requests = series(TRIGGER, 5);
    keep_all(store, &requests, 3).await;
    assert_eq!(ids(&listed(store, TRIGGER).await), ["r04", "r03", "r02"]);

    let before = writes(state);
    store
        .keep_request(&kept(TRIGGER, NOW, "none"), 0)
        .await
        .unwrap();
    store
        .keep_request(&kept("trg-new", NOW, "none"), 0)
        .await
        .unwrap();
    assert_eq!(writes(state), before, "keeping none writes nothing");
    assert_eq!(ids(&listed(store, TRIGGER).await), ["r04", "r03", "r02"]);
    assert!(listed(store, "trg-new").await.is_empty());

    store
        .keep_request(&kept(TRIGGER, NOW, "r05"), 1)
        .await
        .unwrap();
    assert_eq!(ids(&listed(store, TRIGGER).await), ["r05"]);
    assert_eq!(store.purge_kept_requests(TRIGGER).await.unwrap(), 1);
}

/// A body of exactly 256 KiB is kept whole; one byte more is `Invalid`, writing nothing.
pub async fn a_body_of_256_kib_is_kept_and_a_larger_one_refused(subject: Subject) {
    let state = subject.store.as_ref();
    let store = state.kept_requests();
    let mut largest = kept(TRIGGER, NOW - 2, "largest");
    let prefix = r#"{"pad":""#;
    let room = MAX_KEPT_BODY - prefix.len() - r#""}"#.len();
    largest.body = format!(r#"{prefix}{}"}}"#, "x".repeat(room));
    assert_eq!(largest.body.len(), MAX_KEPT_BODY);
    store
        .keep_request(&largest, MAX_KEPT_REQUESTS)
        .await
        .unwrap();

    let mut over = kept(TRIGGER, NOW - 1, "over");
    over.body = format!(r#"{prefix}{}"}}"#, "x".repeat(room + 1));
    assert_eq!(over.body.len(), MAX_KEPT_BODY + 1);
    let before = writes(state);
    let err = store
        .keep_request(&over, MAX_KEPT_REQUESTS)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    assert!(!err.to_string().contains("xxxx"), "no body in the error");
    assert_eq!(writes(state), before, "a refused keep writes nothing");
    assert_eq!(listed(store, TRIGGER).await, vec![largest]);
}

/// The same id again replaces the request, at its time or at another.
pub async fn the_same_id_again_replaces_the_request(subject: Subject) {
    let store = subject.store.kept_requests();
    keep_all(
        store,
        &[kept(TRIGGER, NOW - 20, "a"), kept(TRIGGER, NOW - 15, "b")],
        MAX_KEPT_REQUESTS,
    )
    .await;
    let mut again = kept(TRIGGER, NOW - 20, "a");
    again.body = r#"{"second":true}"#.into();
    again.outcome = KeptOutcome::Filtered;
    store.keep_request(&again, MAX_KEPT_REQUESTS).await.unwrap();
    let listed_now = listed(store, TRIGGER).await;
    assert_eq!(ids(&listed_now), ["b", "a"]);
    assert_eq!(listed_now[1], again);

    let later = kept(TRIGGER, NOW - 5, "a");
    store.keep_request(&later, MAX_KEPT_REQUESTS).await.unwrap();
    let listed_now = listed(store, TRIGGER).await;
    assert_eq!(ids(&listed_now), ["a", "b"]);
    assert_eq!(listed_now[0], later);
    assert_eq!(store.purge_kept_requests(TRIGGER).await.unwrap(), 2);
}

/// No read returns an expired request (expired at `expires_at` exactly); SQLite's sweep
/// deletes them (and each keep sweeps), DynamoDB's TTL does there.
pub async fn expired_requests_are_not_listed_and_are_swept(subject: Subject) {
    let state = subject.store.as_ref();
    let store = state.kept_requests();
    let sqlite = state.location().starts_with("sqlite:");
    let fresh = kept(TRIGGER, NOW - 10, "fresh");
    let old = kept(TRIGGER, NOW - TTL - 10, "old");
    // The old one last: a keep sweeps what expired by its own time, which the fresh one's
    // would be.
    keep_all(store, &[fresh.clone(), old.clone()], MAX_KEPT_REQUESTS).await;
    assert_eq!(listed(store, TRIGGER).await, vec![fresh.clone()]);
    let at = |now| store.list_kept_requests(TRIGGER, REPO, now, 100);
    assert_eq!(
        at(old.expires_at - 1).await.unwrap(),
        vec![fresh.clone(), old.clone()]
    );
    assert_eq!(at(old.expires_at).await.unwrap(), vec![fresh.clone()]);
    assert_eq!(
        store.sweep_kept_requests(NOW).await.unwrap(),
        usize::from(sqlite)
    );
    let before_expiry = at(old.expires_at - 1).await.unwrap();
    if sqlite {
        assert_eq!(before_expiry, vec![fresh.clone()], "swept");
    } else {
        assert_eq!(before_expiry.len(), 2, "the TTL deletes it, in its time");
    }
    assert_eq!(store.sweep_kept_requests(NOW).await.unwrap(), 0);

    // A keep sweeps on SQLite: what expired by its time is gone with it.
    let older = kept("trg-2", NOW - TTL - 5, "older");
    store.keep_request(&older, MAX_KEPT_REQUESTS).await.unwrap();
    store
        .keep_request(&kept(TRIGGER, NOW, "now"), MAX_KEPT_REQUESTS)
        .await
        .unwrap();
    assert_eq!(store.sweep_kept_requests(NOW).await.unwrap(), 0);
    assert!(listed(store, "trg-2").await.is_empty());
}

/// Reads name the binding's repository: another name reads nothing of it.
pub async fn another_repository_reads_nothing(subject: Subject) {
    let state = subject.store.as_ref();
    let store = state.kept_requests();
    keep_all(store, &series(TRIGGER, 3), MAX_KEPT_REQUESTS).await;
    let (read, (reads, _)) = counted(
        state,
        store.list_kept_requests(TRIGGER, "octo/other", NOW, 100),
    )
    .await;
    assert!(read.unwrap().is_empty());
    assert!(reads <= 1, "no request was read: {reads} reads");
    assert!(
        store
            .list_kept_requests(TRIGGER, "octo/agents-other", NOW, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(listed(store, TRIGGER).await.len(), 3);
}

/// A listing returns at most `limit`, the newest.
pub async fn a_listing_returns_at_most_its_limit(subject: Subject) {
    let store = subject.store.kept_requests();
    let requests = series(TRIGGER, 5);
    keep_all(store, &requests, MAX_KEPT_REQUESTS).await;
    let at_most = |limit| store.list_kept_requests(TRIGGER, REPO, NOW, limit);
    assert_eq!(ids(&at_most(2).await.unwrap()), ["r04", "r03"]);
    assert_eq!(at_most(1).await.unwrap(), vec![requests[4].clone()]);
    assert!(at_most(0).await.unwrap().is_empty());
    assert_eq!(at_most(5).await.unwrap(), newest_first(&requests));
    assert_eq!(at_most(usize::MAX).await.unwrap().len(), 5);
}

/// A purge deletes every request of its binding, expired or not, and says how many; the
/// binding keeps again afterwards.
pub async fn a_purge_deletes_every_request_of_its_binding(subject: Subject) {
    let store = subject.store.kept_requests();
    keep_all(store, &series("trg-2", 2), MAX_KEPT_REQUESTS).await;
    keep_all(store, &series(TRIGGER, 3), MAX_KEPT_REQUESTS).await;
    // Kept last: a later keep would sweep it on SQLite.
    store
        .keep_request(
            &kept(TRIGGER, NOW - TTL - 100, "expired"),
            MAX_KEPT_REQUESTS,
        )
        .await
        .unwrap();
    assert_eq!(store.purge_kept_requests(TRIGGER).await.unwrap(), 4);
    assert!(listed(store, TRIGGER).await.is_empty());
    assert!(
        store
            .list_kept_requests(TRIGGER, REPO, NOW - TTL - 100, 100)
            .await
            .unwrap()
            .is_empty(),
        "the expired one too"
    );
    assert_eq!(
        listed(store, "trg-2").await.len(),
        2,
        "another binding's stay"
    );
    assert_eq!(store.purge_kept_requests(TRIGGER).await.unwrap(), 0);
    assert_eq!(store.purge_kept_requests("trg-none").await.unwrap(), 0);
    let again = kept(TRIGGER, NOW, "again");
    store.keep_request(&again, MAX_KEPT_REQUESTS).await.unwrap();
    assert_eq!(listed(store, TRIGGER).await, vec![again]);
}

/// An agent's teardown deletes its bindings, and their kept requests with them.
pub async fn a_teardown_purges_its_bindings_kept_requests(subject: Subject) {
    let state = subject.store.as_ref();
    state.apply(first_registration()).await.unwrap();
    let store = state.kept_requests();
    keep_all(store, &series(TRIGGER, 2), MAX_KEPT_REQUESTS).await;
    // Not a binding of the agent torn down.
    keep_all(store, &series("trg-2", 1), MAX_KEPT_REQUESTS).await;
    state
        .teardown(&AgentKey::new(REPO, TRIAGE), NOW + 1, "retired")
        .await
        .unwrap();
    assert_eq!(state.get_trigger_binding(TRIGGER).await.unwrap(), None);
    assert!(listed(store, TRIGGER).await.is_empty());
    assert_eq!(store.purge_kept_requests(TRIGGER).await.unwrap(), 0);
    assert_eq!(listed(store, "trg-2").await.len(), 1);
}

/// An apply whose change deletes a binding purges that binding's kept requests, and only
/// those of the bindings it deletes.
pub async fn an_apply_that_deletes_a_binding_purges_its_kept_requests(subject: Subject) {
    let state = subject.store.as_ref();
    let mut changes = first_registration();
    changes.agents[0]
        .put_bindings
        .push(binding("trg-kept", TRIAGE));
    state.apply(changes).await.unwrap();
    let store = state.kept_requests();
    keep_all(store, &series(TRIGGER, 3), MAX_KEPT_REQUESTS).await;
    keep_all(store, &series("trg-kept", 2), MAX_KEPT_REQUESTS).await;

    let key = AgentKey::new(REPO, TRIAGE);
    let current = state.get_agent(&key).await.unwrap().unwrap();
    let mut agent = current.clone();
    agent.commit = "c2".into();
    let mut change = AgentChange::new(
        agent,
        Some(current.version),
        AuditAction::Changed,
        "c2",
        "the jira trigger was removed",
        NOW + 1,
    );
    change.delete_bindings = vec![TRIGGER.into()];
    let report = state
        .apply(ChangeSet {
            repository: REPO.into(),
            agents: vec![change],
            synced: None,
        })
        .await
        .unwrap();
    assert_eq!(report.agents_written, 1);
    assert!(listed(store, TRIGGER).await.is_empty());
    assert_eq!(listed(store, "trg-kept").await.len(), 2);
}

/// Two bindings keep apart: the same ids and times, each its own window.
pub async fn two_bindings_do_not_see_each_others_requests(subject: Subject) {
    let store = subject.store.kept_requests();
    let first = series(TRIGGER, 3);
    let second = series("trg-2", MAX_KEPT_REQUESTS + 2);
    keep_all(store, &first, MAX_KEPT_REQUESTS).await;
    keep_all(store, &second, MAX_KEPT_REQUESTS).await;
    assert_eq!(listed(store, TRIGGER).await, newest_first(&first));
    assert_eq!(listed(store, "trg-2").await, newest_first(&second[2..]));
    assert!(listed(store, "trg").await.is_empty());
    assert_eq!(store.purge_kept_requests("trg-2").await.unwrap(), 20);
    assert_eq!(listed(store, TRIGGER).await, newest_first(&first));
}

/// Keeps of one binding at once all succeed and leave its window's newest: none waits for
/// another, and each deletes only what is past the window it read.
pub async fn keeps_at_once_leave_the_newest(subject: Subject) {
    let requests = series(TRIGGER, MAX_KEPT_REQUESTS + 10);
    let keeps: Vec<_> = requests
        .iter()
        .cloned()
        .map(|request| {
            let state = subject.store.clone();
            tokio::spawn(async move {
                state
                    .kept_requests()
                    .keep_request(&request, MAX_KEPT_REQUESTS)
                    .await
            })
        })
        .collect();
    for keep in keeps {
        keep.await.unwrap().unwrap();
    }
    let store = subject.store.kept_requests();
    assert_eq!(listed(store, TRIGGER).await, newest_first(&requests[10..]));
    assert_eq!(
        store.purge_kept_requests(TRIGGER).await.unwrap(),
        MAX_KEPT_REQUESTS
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_at_once_leave_the_newest() {
    keeps_at_once_leave_the_newest(sqlite_subject().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_keeps_at_once_leave_the_newest() {
    if let Some(subject) = dynamo_subject("dynamodb_keeps_at_once_leave_the_newest").await {
        keeps_at_once_leave_the_newest(subject).await;
    }
}

state_contract_tests!(
    kept_requests_are_listed_newest_first_as_kept,
    a_binding_keeps_its_twenty_newest,
    a_binding_may_keep_fewer_or_none,
    a_body_of_256_kib_is_kept_and_a_larger_one_refused,
    the_same_id_again_replaces_the_request,
    expired_requests_are_not_listed_and_are_swept,
    another_repository_reads_nothing,
    a_listing_returns_at_most_its_limit,
    a_purge_deletes_every_request_of_its_binding,
    a_teardown_purges_its_bindings_kept_requests,
    an_apply_that_deletes_a_binding_purges_its_kept_requests,
    two_bindings_do_not_see_each_others_requests,
);

/// On DynamoDB a binding's requests and their key items are one partition,
/// `KEPT#<trigger id>`, each with `expires_at` a Number (the table's TTL); the requests
/// pushed out of the window are deleted with their keys.
#[tokio::test]
async fn dynamodb_keeps_a_binding_in_one_partition_with_the_ttl_attribute() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let Some(store) = dynamo_store("dynamodb_keeps_a_binding_in_one_partition").await else {
        return;
    };
    let requests = series(TRIGGER, MAX_KEPT_REQUESTS + 2);
    keep_all(&store, &requests, MAX_KEPT_REQUESTS).await;
    let items = store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S(format!("KEPT#{TRIGGER}")))
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    assert_eq!(
        items.len(),
        2 * MAX_KEPT_REQUESTS,
        "20 requests and their keys"
    );
    for item in &items {
        let sk = item.get("sk").and_then(|v| v.as_s().ok()).unwrap();
        let id = item.get("id").and_then(|v| v.as_s().ok()).unwrap();
        let request = requests.iter().find(|r| &r.id == id).unwrap();
        assert_eq!(
            item.get("expires_at"),
            Some(&AttributeValue::N(request.expires_at.to_string())),
            "{sk}: the TTL attribute, a Number"
        );
        assert!(!["r00", "r01"].contains(&id.as_str()), "{sk}: pushed out");
        let body = item.get("body");
        if sk.starts_with("REQUEST#") {
            assert_eq!(body, Some(&AttributeValue::S(request.body.clone())), "{sk}");
        } else {
            assert!(sk.starts_with("KEY#"), "{sk}");
            assert_eq!(body, None, "{sk}: a key item holds no body");
        }
    }
}

/// A file written before requests were kept gets the table when it is opened.
#[tokio::test]
async fn sqlite_adds_the_kept_requests_table_to_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    {
        let store = SqliteStateStore::open(&path).await.unwrap();
        store.apply(first_registration()).await.unwrap();
    }
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch("DROP TABLE kept_requests;").unwrap();
    }
    let store = SqliteStateStore::open(&path).await.unwrap();
    let request = kept(TRIGGER, NOW, "after");
    store
        .kept_requests()
        .keep_request(&request, MAX_KEPT_REQUESTS)
        .await
        .unwrap();
    assert_eq!(listed(store.kept_requests(), TRIGGER).await, vec![request]);
    assert_eq!(store.list_agents(REPO).await.unwrap().len(), 3);
}
