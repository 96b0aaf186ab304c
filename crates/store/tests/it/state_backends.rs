//! Backend specifics: the DynamoDB table shape, TTL, URLs.

use astrolift_store::StateStore;
use astrolift_store::state::{AgentStore, RegistrationStore, TriggerBindingStore};
use astrolift_store::state::{
    RepoRegistration, SqliteStateStore, TableShape, TriggerBinding, table_definition,
};
use astrolift_store::{StoreError, state_store_from_url};

#[tokio::test]
async fn dynamodb_table_has_ttl_on_expires_at() {
    let Some(store) =
        crate::state_contract::dynamo_store("dynamodb_table_has_ttl_on_expires_at").await
    else {
        return;
    };
    assert_eq!(
        store.ttl_attribute().await.unwrap().as_deref(),
        Some("expires_at")
    );
    store.create_table().await.unwrap();
}

#[test]
fn table_shape_is_data() {
    let shape = table_definition();
    let json = serde_json::to_value(&shape).unwrap();
    assert_eq!(json["ttl_attribute"], "expires_at");
    assert_eq!(json["global_secondary_indexes"][0]["name"], "gsi1");
    let back: TableShape = serde_json::from_value(json).unwrap();
    assert_eq!(back, shape);
}

#[tokio::test]
async fn state_urls() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("s.db").display());
    let store = state_store_from_url(&url).await.unwrap();
    assert_eq!(store.location(), url);
    let err = state_store_from_url("postgres://x").await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    assert!(matches!(
        state_store_from_url("dynamodb:a b").await.unwrap_err(),
        StoreError::Invalid(_)
    ));
}

#[tokio::test]
async fn dynamodb_deliveries_carry_the_ttl_attribute() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let Some(store) =
        crate::state_contract::dynamo_store("dynamodb_deliveries_carry_the_ttl_attribute").await
    else {
        return;
    };
    let ttl = std::time::Duration::from_secs(600);
    astrolift_store::state::DeliveryStore::record_delivery(&store, "d-ttl", 1_000, ttl)
        .await
        .unwrap();
    let item = store
        .client()
        .get_item()
        .table_name(store.table())
        .key("pk", AttributeValue::S("DELIVERY#d-ttl".into()))
        .key("sk", AttributeValue::S("DELIVERY".into()))
        .send()
        .await
        .unwrap();
    let expires_at = item.item().and_then(|i| i.get("expires_at")).cloned();
    assert_eq!(expires_at, Some(AttributeValue::N("1600".into())));
}

#[tokio::test]
async fn dynamodb_splits_big_change_sets_into_transactions() {
    use astrolift_store::state::ChangeSet;
    let Some(store) =
        crate::state_contract::dynamo_store("dynamodb_splits_big_change_sets_into_transactions")
            .await
    else {
        return;
    };
    let agents = (0..120)
        .map(|i| {
            crate::state_contract::added(&format!("agents/a{i}/astrolift.toml"), &format!("a{i}"))
        })
        .collect();
    let report = store
        .apply(ChangeSet {
            repository: "octo/agents".into(),
            agents,
            synced: None,
        })
        .await
        .unwrap();
    assert_eq!(
        (report.transactions, report.items_written),
        (3, 240),
        "50 + 50 + 20 agents"
    );
}

/// A state file written before bindings were keyed by repository: opening it migrates the
/// bindings, which a repository's keyed read then finds.
#[tokio::test]
async fn sqlite_migrates_bindings_written_before_the_repository_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let binding = TriggerBinding {
        trigger_id: "trg-old".into(),
        repository: "octo/old".into(),
        manifest_path: "astrolift.toml".into(),
        agent_name: "old".into(),
        name: "issues".into(),
        source: "github".into(),
        definition: serde_json::json!({"events": ["issues"]}),
        snapshot_hash: "snap-old".into(),
    };
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE trigger_bindings (trigger_id TEXT PRIMARY KEY, body TEXT NOT NULL);
             PRAGMA user_version = 1;",
        )
        .unwrap();
        old.execute(
            "INSERT INTO trigger_bindings (trigger_id, body) VALUES (?1, ?2)",
            ("trg-old", serde_json::to_string(&binding).unwrap()),
        )
        .unwrap();
    }
    let store = SqliteStateStore::open(&path).await.unwrap();
    assert_eq!(
        store
            .list_repository_trigger_bindings("octo/old")
            .await
            .unwrap(),
        vec![binding.clone()]
    );
    assert!(
        store
            .list_repository_trigger_bindings("octo/other")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .list_event_trigger_bindings("octo/old", "issues")
            .await
            .unwrap(),
        vec![binding.clone()]
    );
    drop(store);
    // Opening a migrated file again changes nothing.
    let again = SqliteStateStore::open(&path).await.unwrap();
    assert_eq!(again.list_trigger_bindings().await.unwrap().len(), 1);
    assert_eq!(
        again
            .list_event_trigger_bindings("octo/old", "issues")
            .await
            .unwrap()
            .len(),
        1
    );
}

/// A version-2 state file (bindings keyed by repository, not by event): opening it indexes
/// each `github` binding under the events it lists, and only those.
#[tokio::test]
async fn sqlite_migrates_bindings_written_before_the_event_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let github = |id: &str, events: serde_json::Value| TriggerBinding {
        trigger_id: id.into(),
        repository: "octo/old".into(),
        manifest_path: "astrolift.toml".into(),
        agent_name: "old".into(),
        name: id.into(),
        source: "github".into(),
        definition: serde_json::json!({ "events": events }),
        snapshot_hash: "snap-old".into(),
    };
    let issues = github(
        "trg-issues",
        serde_json::json!(["issues.opened", "issues.closed"]),
    );
    let push = github("trg-push", serde_json::json!(["push"]));
    let mut generic = github("trg-generic", serde_json::json!([]));
    generic.source = "generic".into();
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE trigger_bindings (
                 trigger_id TEXT PRIMARY KEY, repository TEXT NOT NULL, body TEXT NOT NULL);
             CREATE INDEX trigger_bindings_by_repository ON trigger_bindings (repository, trigger_id);
             PRAGMA user_version = 2;",
        )
        .unwrap();
        for binding in [&issues, &push, &generic] {
            old.execute(
                "INSERT INTO trigger_bindings (trigger_id, repository, body) VALUES (?1, ?2, ?3)",
                (
                    &binding.trigger_id,
                    &binding.repository,
                    serde_json::to_string(binding).unwrap(),
                ),
            )
            .unwrap();
        }
    }
    let store = SqliteStateStore::open(&path).await.unwrap();
    let by_event = |event: &'static str| {
        let store = store.clone();
        async move {
            store
                .list_event_trigger_bindings("octo/old", event)
                .await
                .unwrap()
        }
    };
    assert_eq!(by_event("issues").await, vec![issues]);
    assert_eq!(by_event("push").await, vec![push]);
    assert_eq!(by_event("pull_request").await, vec![]);
    assert_eq!(
        store
            .list_repository_trigger_bindings("octo/old")
            .await
            .unwrap()
            .len(),
        3
    );
}

/// DynamoDB: a `github` binding stored without its event copy (written by an older version)
/// is found by event once a store backfills the copies; the backfill runs once per table
/// (a marker item) and again when the marker is deleted.
#[tokio::test]
async fn dynamodb_backfills_event_copies_of_older_bindings() {
    use astrolift_store::state::ChangeSet;
    let test = "dynamodb_backfills_event_copies_of_older_bindings";
    let Some(store) = crate::state_contract::dynamo_store(test).await else {
        return;
    };
    let repository = crate::support::unique_name("octo/older");
    let mut change = crate::state_contract::added("astrolift.toml", "older");
    change.agent.repository = repository.clone();
    change.audit.repository = repository.clone();
    let binding = TriggerBinding {
        trigger_id: crate::support::unique_name("trg-older"),
        repository: repository.clone(),
        manifest_path: "astrolift.toml".into(),
        agent_name: "older".into(),
        name: "issues".into(),
        source: "github".into(),
        definition: serde_json::json!({"events": ["issues.opened"]}),
        snapshot_hash: change.agent.snapshot_hash.clone(),
    };
    change.put_bindings = vec![binding.clone()];
    let mut changes = ChangeSet::new(&repository);
    changes.agents.push(change);
    store.apply(changes).await.unwrap();
    // What an older version wrote: no event copy, no migration marker.
    delete_raw(
        &store,
        [
            (
                format!("REPO#{repository}"),
                format!("EVENT#issues#TRIGGER#{}", binding.trigger_id),
            ),
            (
                "MIGRATIONS".to_owned(),
                "REPO_TRIGGER_EVENT_COPIES".to_owned(),
            ),
        ],
    )
    .await;
    // A store that has not migrated yet (a new process) backfills on its first read by event.
    let fresh = astrolift_store::state::DynamoStateStore::from_env(store.table())
        .await
        .unwrap();
    assert_eq!(
        fresh
            .list_event_trigger_bindings(&repository, "issues")
            .await
            .unwrap(),
        vec![binding.clone()]
    );
    let before = fresh.stats();
    assert_eq!(
        fresh
            .list_event_trigger_bindings(&repository, "issues")
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(fresh.stats().reads - before.reads, 1, "migrated once");
}

/// A state file written when a repository held one registration (keyed by repository, with a
/// `manifest_path` that was never read): opening it makes that row the registration of every
/// manifest, so the repository syncs as it did, and drops the old table.
#[tokio::test]
async fn sqlite_migrates_single_registrations_to_every_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let old_body = serde_json::json!({
        "repository": "octo/old", "installation_id": 7, "project_id": "p",
        "registered_ref": "main", "manifest_path": "agents/a/astrolift.toml", "updated_at": 1
    });
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE registrations (repository TEXT PRIMARY KEY, body TEXT NOT NULL);",
        )
        .unwrap();
        old.execute(
            "INSERT INTO registrations (repository, body) VALUES (?1, ?2)",
            ("octo/old", old_body.to_string()),
        )
        .unwrap();
    }
    let store = SqliteStateStore::open(&path).await.unwrap();
    let expected = RepoRegistration {
        repository: "octo/old".into(),
        installation_id: Some(7),
        project_id: "p".into(),
        registered_ref: "main".into(),
        manifest_path: None,
        updated_at: 1,
        last_sync: None,
        previews: false,
    };
    assert_eq!(
        store.get_registration("octo/old").await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        store
            .list_repository_registrations("octo/old")
            .await
            .unwrap(),
        vec![expected.clone()]
    );
    drop(store);
    let again = SqliteStateStore::open(&path).await.unwrap();
    assert_eq!(again.list_registrations().await.unwrap(), vec![expected]);
    let raw = rusqlite::Connection::open(&path).unwrap();
    let old_tables: i64 = raw
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'registrations'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(old_tables, 0);
}

/// The DynamoDB item of a repository's single registration already sits at the key of the
/// registration of every manifest; the `manifest_path` it carries is read as absent and the
/// item rewritten without it.
#[tokio::test]
async fn dynamodb_migrates_single_registrations_to_every_manifest() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let Some(store) = crate::state_contract::dynamo_store(
        "dynamodb_migrates_single_registrations_to_every_manifest",
    )
    .await
    else {
        return;
    };
    let repo = astrolift_store::testing::unique_name("octo/legacy");
    let s = |v: &str| AttributeValue::S(v.into());
    store
        .client()
        .put_item()
        .table_name(store.table())
        .item("pk", s("REGISTRATIONS"))
        .item("sk", s(&repo))
        .item("repository", s(&repo))
        .item("installation_id", AttributeValue::N("7".into()))
        .item("project_id", s("p"))
        .item("registered_ref", s("main"))
        .item("manifest_path", s("agents/a/astrolift.toml"))
        .item("updated_at", AttributeValue::N("1".into()))
        .send()
        .await
        .unwrap();
    let migrated = store.list_repository_registrations(&repo).await.unwrap();
    assert_eq!(migrated.len(), 1);
    assert_eq!(migrated[0].manifest_path, None);
    assert_eq!(migrated[0].project_id, "p");
    let item = store
        .client()
        .get_item()
        .table_name(store.table())
        .key("pk", s("REGISTRATIONS"))
        .key("sk", s(&repo))
        .send()
        .await
        .unwrap();
    assert_eq!(
        item.item().and_then(|i| i.get("manifest_path")),
        Some(&AttributeValue::Null(true))
    );
    // Per-manifest registrations of the migrated repository now overlap it.
    let narrow = RepoRegistration {
        manifest_path: Some("agents/a/astrolift.toml".into()),
        ..migrated[0].clone()
    };
    assert!(matches!(
        store.put_registration(&narrow).await.unwrap_err(),
        StoreError::Overlap(_)
    ));
    assert!(
        store
            .list_registrations()
            .await
            .unwrap()
            .contains(&migrated[0])
    );
}

/// A state file written before skill sources existed (schema version 3): opening it adds
/// the empty skill repository and catalogue tables, and what it held stays.
#[tokio::test]
async fn sqlite_files_from_before_skill_sources_get_their_tables() {
    use astrolift_store::state::Catalogue;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let registration = RepoRegistration {
        repository: "octo/old".into(),
        installation_id: None,
        project_id: "p".into(),
        registered_ref: "main".into(),
        manifest_path: None,
        updated_at: 1,
        last_sync: None,
        previews: false,
    };
    {
        let store = SqliteStateStore::open(&path).await.unwrap();
        store.put_registration(&registration).await.unwrap();
    }
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch("DROP TABLE skill_repos; DROP TABLE catalogue; PRAGMA user_version = 3;")
            .unwrap();
    }
    let store = SqliteStateStore::open(&path).await.unwrap();
    let skills = store.skills();
    assert_eq!(skills.list_skill_repos(None).await.unwrap(), vec![]);
    assert_eq!(skills.get_catalogue().await.unwrap(), None);
    let repo = astrolift_store::state::SkillRepo {
        project_id: "p".into(),
        alias: "runbooks".into(),
        repository: "octo/runbooks".into(),
        updated_at: 2,
    };
    skills.put_skill_repo(&repo).await.unwrap();
    let catalogue = Catalogue {
        repository: "octo/catalogue".into(),
        registered_ref: "main".into(),
        updated_at: 2,
    };
    skills.put_catalogue(&catalogue).await.unwrap();
    assert_eq!(
        skills.list_skill_repos(Some("p")).await.unwrap(),
        vec![repo]
    );
    assert_eq!(skills.get_catalogue().await.unwrap(), Some(catalogue));
    assert_eq!(
        store.get_registration("octo/old").await.unwrap(),
        Some(registration)
    );
}

/// A skill repository an older version wrote (no copy keyed by repository, no marker) is
/// found by repository once a store backfills the copies; a deleted one is not brought back.
#[tokio::test]
async fn dynamodb_backfills_repository_copies_of_older_skill_repositories() {
    let test = "dynamodb_backfills_repository_copies_of_older_skill_repositories";
    let Some(store) = crate::state_contract::dynamo_store(test).await else {
        return;
    };
    let project = crate::support::unique_name("proj-older");
    let repository = crate::support::unique_name("acme/older-skills");
    let repo = astrolift_store::state::SkillRepo {
        project_id: project.clone(),
        alias: "older".into(),
        repository: repository.clone(),
        updated_at: 1,
    };
    store.skills().put_skill_repo(&repo).await.unwrap();
    // What an older version wrote: no copy, no migration marker.
    delete_raw(
        &store,
        [
            (
                format!("SKILL_SOURCE#{}", repository.to_ascii_lowercase()),
                format!("{project}#older"),
            ),
            ("MIGRATIONS".to_owned(), "SKILL_SOURCE_COPIES".to_owned()),
        ],
    )
    .await;
    let fresh = astrolift_store::state::DynamoStateStore::from_env(store.table())
        .await
        .unwrap();
    assert_eq!(
        fresh.skills().skill_repos_of(&repository).await.unwrap(),
        vec![repo]
    );
    assert!(
        fresh
            .skills()
            .delete_skill_repo(&project, "older")
            .await
            .unwrap()
    );
    assert!(
        fresh
            .skills()
            .skill_repos_of(&repository)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Deletes the items at `keys` (pk, sk) past the store: what an older version did not write.
async fn delete_raw(
    store: &astrolift_store::state::DynamoStateStore,
    keys: impl IntoIterator<Item = (String, String)>,
) {
    for (pk, sk) in keys {
        store
            .client()
            .delete_item()
            .table_name(store.table())
            .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(pk))
            .key("sk", aws_sdk_dynamodb::types::AttributeValue::S(sk))
            .send()
            .await
            .unwrap();
    }
}

/// A state file written before deliveries recorded their state: its deliveries count as
/// succeeded (a redelivery is a duplicate, as it was), and they move like new ones.
#[tokio::test]
async fn sqlite_deliveries_from_before_their_state_are_duplicates() {
    use astrolift_store::state::{DeliveryOutcome, DeliveryState, DeliveryStore};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(SqliteStateStore::open(&path).await.unwrap());
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(
            "DROP TABLE deliveries;
             CREATE TABLE deliveries (delivery_id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL);
             INSERT INTO deliveries VALUES ('d-old', 10000);",
        )
        .unwrap();
    }
    let store = SqliteStateStore::open(&path).await.unwrap();
    let ttl = std::time::Duration::from_secs(60);
    assert_eq!(
        store.record_delivery("d-old", 9000, ttl).await.unwrap(),
        DeliveryOutcome::Duplicate
    );
    assert!(
        store
            .mark_delivery("d-old", DeliveryState::Failed, 9001)
            .await
            .unwrap()
    );
    assert_eq!(
        store.record_delivery("d-old", 9002, ttl).await.unwrap(),
        DeliveryOutcome::New
    );
}

/// A state file whose `jobs` table keeps each record as one JSON body, in either shape
/// deployed builds wrote (a rowid table indexed on every state, then clustered by id with
/// the partial index): opening it rewrites the table with each field in its column, the
/// records unchanged, and drops the old indexes; opening it again changes nothing.
#[tokio::test]
async fn sqlite_jobs_written_as_json_bodies_are_kept() {
    use astrolift_store::state::{JobJson, JobRecord, JobState, JobStore};
    let record = |id: &str, state: JobState, error: Option<&str>| JobRecord {
        id: id.into(),
        state,
        attempts: 2,
        job: JobJson::of(&serde_json::json!({"repository": "octo/a", "n": [1, 2]})).unwrap(),
        queued_at: 10,
        updated_at: 11,
        error: error.map(str::to_owned),
    };
    let records = [
        record("001", JobState::Queued, None),
        record(
            "002",
            JobState::Failed,
            Some("GitHub answered 404 \"Not Found\""),
        ),
        record("003", JobState::Running, None),
    ];
    let old_tables = [
        "CREATE TABLE jobs (id TEXT PRIMARY KEY, state TEXT NOT NULL, body TEXT NOT NULL);
         CREATE INDEX jobs_by_state ON jobs (state, id);",
        "CREATE TABLE jobs (id TEXT PRIMARY KEY, state TEXT NOT NULL, body TEXT NOT NULL)
           WITHOUT ROWID;
         CREATE INDEX jobs_waiting ON jobs (state, id) WHERE state = 'queued' OR state = 'failed';",
    ];
    for old_table in old_tables {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        drop(SqliteStateStore::open(&path).await.unwrap());
        {
            let old = rusqlite::Connection::open(&path).unwrap();
            old.execute_batch(&format!("DROP TABLE jobs; {old_table}"))
                .unwrap();
            for job in &records {
                let body = serde_json::to_string(job).unwrap();
                old.execute(
                    "INSERT INTO jobs (id, state, body) VALUES (?1, ?2, ?3)",
                    (&job.id, job.state.as_str(), body),
                )
                .unwrap();
            }
        }
        for _ in 0..2 {
            let store = SqliteStateStore::open(&path).await.unwrap();
            assert_eq!(store.list_jobs(None).await.unwrap(), records, "{old_table}");
            for (state, job) in [JobState::Queued, JobState::Failed, JobState::Running]
                .into_iter()
                .zip(&records)
            {
                assert_eq!(
                    store.list_jobs(Some(state)).await.unwrap(),
                    std::slice::from_ref(job)
                );
            }
            drop(store);
            let raw = rusqlite::Connection::open(&path).unwrap();
            let schema: Vec<String> = raw
                .prepare("SELECT name FROM sqlite_master WHERE tbl_name LIKE 'jobs%' ORDER BY name")
                .unwrap()
                .query_map([], |row| row.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(schema, ["jobs", "jobs_waiting"]);
        }
    }
}
