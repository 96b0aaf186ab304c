//! What the state store contract suites share: the stores under test (SQLite, and
//! DynamoDB on moto) and the fixtures. Each concern of the store has its own suite
//! (`registration_contract`, `installation_contract`, `agent_contract`,
//! `delivery_contract`, `env_spec_contract`, `binding_contract`, `dispatch_contract`,
//! and the task, workflow, workspace, config, skill and outbox contracts), run on both.

use std::sync::Arc;

use astrolift_store::StateStore;
use astrolift_store::state::*;

/// A store under test.
pub struct Subject {
    pub store: Arc<dyn StateStore>,
    /// Keeps a temporary directory alive.
    pub _dir: Option<tempfile::TempDir>,
}

pub(crate) const REPO: &str = "octo/agents";
pub(crate) const NOW: UnixSeconds = 1_767_225_600;

pub(crate) fn agent(manifest: &str, name: &str) -> Agent {
    Agent {
        repository: REPO.into(),
        manifest_path: manifest.into(),
        project_id: "proj-1".into(),
        name: name.into(),
        alias: None,
        status: AgentStatus::Active,
        snapshot_hash: format!("snap-{name}"),
        payload_digest: format!("sha256:{name}"),
        commit: "c1".into(),
        version: 0,
        updated_at: NOW,
        bindings_digest: None,
        layer_key: None,
        package_build: None,
    }
}

pub fn added(manifest: &str, name: &str) -> AgentChange {
    AgentChange::new(
        agent(manifest, name),
        None,
        AuditAction::Added,
        "c1",
        "first registration",
        NOW,
    )
}

pub(crate) fn synced(commit: &str, previous: Option<&str>) -> Option<SyncedCommitUpdate> {
    Some(SyncedCommitUpdate {
        commit: SyncedCommit {
            repository: REPO.into(),
            ref_name: "main".into(),
            commit: commit.into(),
            commit_time: NOW,
            synced_at: NOW,
        },
        expected_previous: previous.map(str::to_owned),
    })
}

pub(crate) fn binding(trigger_id: &str, manifest: &str) -> TriggerBinding {
    TriggerBinding {
        trigger_id: trigger_id.into(),
        repository: REPO.into(),
        manifest_path: manifest.into(),
        agent_name: "triage".into(),
        name: "jira".into(),
        source: "generic".into(),
        definition: serde_json::json!({"filter": ".x == 1", "verify": {"kind": "token", "header": "X-Token"}}),
        snapshot_hash: "snap-triage".into(),
    }
}

pub(crate) fn first_registration() -> ChangeSet {
    let mut triage = added("agents/triage/astrolift.toml", "triage");
    triage
        .put_bindings
        .push(binding("trg-1", "agents/triage/astrolift.toml"));
    ChangeSet {
        repository: REPO.into(),
        agents: vec![
            triage,
            added("agents/review/astrolift.toml", "review"),
            added("astrolift.toml", "root"),
        ],
        synced: synced("c1", None),
    }
}

/// The commit recorded as synced for `REPO`'s `main`.
pub(crate) async fn synced_sha(store: &dyn StateStore) -> String {
    store
        .get_synced_commit(REPO, "main")
        .await
        .unwrap()
        .expect("a synced commit")
        .commit
}

pub(crate) fn registration(
    repository: &str,
    manifest: Option<&str>,
    project: &str,
) -> RepoRegistration {
    RepoRegistration {
        repository: repository.into(),
        installation_id: Some(42),
        project_id: project.into(),
        registered_ref: "main".into(),
        manifest_path: manifest.map(str::to_owned),
        updated_at: NOW,
        last_sync: None,
        previews: false,
    }
}

/// Bindings per agent in [`bindings_of`]: on DynamoDB a `github` binding with one event is
/// three items (by id, repository copy, event copy), and an agent's change is one
/// transaction of at most 100 items.
pub(crate) const BINDINGS_PER_AGENT: usize = 30;

/// `count` GitHub bindings of `repository` on `issues.opened`, [`BINDINGS_PER_AGENT`] per
/// agent.
pub(crate) fn bindings_of(repository: &str, count: usize) -> ChangeSet {
    let mut changes = ChangeSet::new(repository);
    for agent_index in 0..count.div_ceil(BINDINGS_PER_AGENT) {
        let name = format!("a{agent_index:03}");
        let mut change = added(&format!("agents/{name}/astrolift.toml"), &name);
        change.agent.repository = repository.into();
        change.audit.repository = repository.into();
        let first = agent_index * BINDINGS_PER_AGENT;
        change.put_bindings = (first..count.min(first + BINDINGS_PER_AGENT))
            .map(|i| TriggerBinding {
                trigger_id: format!("{repository}-trg-{i:04}").replace('/', "-"),
                repository: repository.into(),
                manifest_path: change.agent.manifest_path.clone(),
                agent_name: name.clone(),
                name: format!("t{i}"),
                source: "github".into(),
                definition: serde_json::json!({"events": ["issues.opened"]}),
                snapshot_hash: change.agent.snapshot_hash.clone(),
            })
            .collect();
        changes.agents.push(change);
    }
    changes
}

/// The busy repository's bindings: 1,000 on SQLite. On DynamoDB 90 (three agents) make the
/// same proof, since the store counts every record it reads: moto copies the whole table
/// for each transaction, so 1,000 bindings (3,000 items in 34 transactions) took minutes.
pub(crate) fn busy_binding_count(store: &dyn StateStore) -> usize {
    if store.location().starts_with("dynamodb:") {
        3 * BINDINGS_PER_AGENT
    } else {
        1000
    }
}

/// Reads and records read by `read`, counted by the store.
pub(crate) async fn counted<T, F: std::future::Future<Output = T>>(
    store: &dyn StateStore,
    read: F,
) -> (T, (u64, u64)) {
    let before = store.stats();
    let value = read.await;
    let after = store.stats();
    (
        value,
        (
            after.reads - before.reads,
            after.records_read - before.records_read,
        ),
    )
}

pub(crate) async fn sqlite_subject() -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStateStore::open(dir.path().join("nested/state.db"))
        .await
        .unwrap();
    Subject {
        store: Arc::new(store),
        _dir: Some(dir),
    }
}

pub async fn dynamo_store(test: &str) -> Option<DynamoStateStore> {
    crate::support::aws_endpoint(test)?;
    let shared = crate::support::shared_resource(crate::support::SHARED_TABLE);
    let table = shared
        .clone()
        .unwrap_or_else(|| crate::support::unique_name("state"));
    let store = DynamoStateStore::from_env(&table).await.unwrap();
    match shared {
        Some(_) => crate::support::shared_table(&store).await,
        None => store.create_table().await.unwrap(),
    }
    Some(store)
}

pub(crate) async fn dynamo_subject(test: &str) -> Option<Subject> {
    Some(Subject {
        store: Arc::new(dynamo_store(test).await?),
        _dir: None,
    })
}

/// Where a record sits in the store under test, for [`put_raw`]: on SQLite a table's row
/// (its key columns and the record as the `body`), on DynamoDB an item (`pk`, `sk` and the
/// record's fields as attributes).
pub(crate) struct RawKey<'a> {
    /// `INSERT INTO … (key columns…, body) VALUES (?1, …)`: the key values, then the body.
    pub sqlite_insert: &'a str,
    pub sqlite_keys: &'a [&'a str],
    pub dynamo_pk: &'a str,
    pub dynamo_sk: &'a str,
}

/// Writes `record` past the store, as an older version wrote it (e.g. without a field that
/// came later), where the store under test keeps it.
pub(crate) async fn put_raw(store: &dyn StateStore, at: RawKey<'_>, record: serde_json::Value) {
    let location = store.location();
    if let Some(path) = location.strip_prefix("sqlite:") {
        let connection = rusqlite::Connection::open(path).unwrap();
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .unwrap();
        let mut values: Vec<String> = at.sqlite_keys.iter().map(|k| (*k).to_owned()).collect();
        values.push(record.to_string());
        connection
            .execute(at.sqlite_insert, rusqlite::params_from_iter(values))
            .unwrap();
        return;
    }
    let table = location
        .strip_prefix("dynamodb:")
        .expect("a sqlite: or dynamodb: store");
    let dynamo = DynamoStateStore::from_env(table).await.unwrap();
    let serde_json::Value::Object(fields) = record else {
        panic!("a record is an object");
    };
    let mut put = dynamo
        .client()
        .put_item()
        .table_name(table)
        .item("pk", attribute(at.dynamo_pk.into()))
        .item("sk", attribute(at.dynamo_sk.into()));
    for (name, value) in fields {
        put = put.item(name, attribute(value));
    }
    put.send().await.unwrap();
}

/// A JSON value as the DynamoDB store writes it.
fn attribute(value: serde_json::Value) -> aws_sdk_dynamodb::types::AttributeValue {
    use aws_sdk_dynamodb::types::AttributeValue;
    match value {
        serde_json::Value::Null => AttributeValue::Null(true),
        serde_json::Value::Bool(b) => AttributeValue::Bool(b),
        serde_json::Value::Number(n) => AttributeValue::N(n.to_string()),
        serde_json::Value::String(s) => AttributeValue::S(s),
        serde_json::Value::Array(values) => {
            AttributeValue::L(values.into_iter().map(attribute).collect())
        }
        serde_json::Value::Object(map) => {
            AttributeValue::M(map.into_iter().map(|(k, v)| (k, attribute(v))).collect())
        }
    }
}
