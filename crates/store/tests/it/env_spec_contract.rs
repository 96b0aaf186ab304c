//! The EnvSpecStore contract, run against SQLite and DynamoDB (moto).

use astrolift_store::state::*;

use crate::state_contract::*;

/// An env spec put, read back and listed; an unknown one is `None`.
pub async fn env_specs_round_trip(subject: Subject) {
    let store = subject.store;
    let spec = EnvSpec {
        name: "triage-prod".into(),
        project_id: Some("proj-a".into()),
        agent_type: Some("claude".into()),
        runtime: Some("claude-code".into()),
        config_repo: "octo/config".into(),
        manifest_path: "envs/prod.yaml".into(),
        updated_at: NOW,
        previews: false,
    };
    store.put_env_spec(&spec).await.unwrap();
    assert_eq!(
        store.get_env_spec("triage-prod").await.unwrap(),
        Some(spec.clone())
    );
    assert_eq!(store.list_env_specs().await.unwrap(), vec![spec]);
    assert_eq!(store.get_env_spec("nope").await.unwrap(), None);
}

pub async fn env_specs_are_usable_only_by_their_project(subject: Subject) {
    let store = subject.store.as_ref();
    let spec = |name: &str, project: Option<&str>| EnvSpec {
        name: name.into(),
        project_id: project.map(str::to_owned),
        agent_type: Some("claude".into()),
        runtime: Some("claude-code".into()),
        config_repo: "octo/config".into(),
        manifest_path: "envs/prod.toml".into(),
        updated_at: NOW,
        previews: false,
    };
    store
        .put_env_spec(&spec("a-prod", Some("proj-a")))
        .await
        .unwrap();
    store
        .put_env_spec(&spec("b-prod", Some("proj-b")))
        .await
        .unwrap();
    // Written before env specs had projects: the field is absent.
    store.put_env_spec(&spec("legacy", None)).await.unwrap();
    let check =
        async |name: &str, project: &str| env_spec_for_project(store, name, project).await.unwrap();
    assert_eq!(
        check("a-prod", "proj-a").await,
        Ok(spec("a-prod", Some("proj-a")))
    );
    assert_eq!(
        check("b-prod", "proj-a").await,
        Err(EnvSpecRefusal::OtherProject)
    );
    assert_eq!(
        check("a-prod", "proj-b").await,
        Err(EnvSpecRefusal::OtherProject)
    );
    assert_eq!(check("nope", "proj-a").await, Err(EnvSpecRefusal::Missing));
    assert_eq!(
        check("legacy", "proj-a").await,
        Err(EnvSpecRefusal::NoProject)
    );
    assert_eq!(check("legacy", "").await, Err(EnvSpecRefusal::NoProject));
    // Re-upserting with a project migrates a legacy spec.
    store
        .put_env_spec(&spec("legacy", Some("proj-a")))
        .await
        .unwrap();
    assert!(check("legacy", "proj-a").await.is_ok());
}

/// `previews` is stored and read with the env spec: on, cleared by an upsert without it,
/// and off on a spec written before it existed.
pub async fn env_specs_record_whether_previews_may_use_them(subject: Subject) {
    let store = subject.store;
    let spec = EnvSpec {
        name: "triage-preview".into(),
        project_id: Some("proj-a".into()),
        agent_type: Some("claude".into()),
        runtime: Some("claude-code".into()),
        config_repo: String::new(),
        manifest_path: String::new(),
        updated_at: NOW,
        previews: true,
    };
    store.put_env_spec(&spec).await.unwrap();
    assert_eq!(
        store.get_env_spec("triage-preview").await.unwrap(),
        Some(spec.clone())
    );
    assert_eq!(store.list_env_specs().await.unwrap(), vec![spec.clone()]);
    let cleared = EnvSpec {
        previews: false,
        ..spec.clone()
    };
    store.put_env_spec(&cleared).await.unwrap();
    let read = store.get_env_spec("triage-preview").await.unwrap().unwrap();
    assert!(!read.previews);
    assert_eq!(
        serde_json::to_value(&read).unwrap()["previews"],
        serde_json::json!(false)
    );

    // Written before env specs had `previews`: read as off.
    let legacy = serde_json::json!({
        "name": "legacy-spec",
        "project_id": "proj-a",
        "agent_type": "claude",
        "runtime": "claude-code",
        "config_repo": "",
        "manifest_path": "",
        "updated_at": NOW,
    });
    put_raw(
        store.as_ref(),
        RawKey {
            sqlite_insert: "INSERT INTO env_specs (name, body) VALUES (?1, ?2)",
            sqlite_keys: &["legacy-spec"],
            dynamo_pk: "ENV_SPECS",
            dynamo_sk: "legacy-spec",
        },
        legacy,
    )
    .await;
    let read = store.get_env_spec("legacy-spec").await.unwrap().unwrap();
    assert!(!read.previews);
    assert_eq!(
        read,
        EnvSpec {
            name: "legacy-spec".into(),
            previews: false,
            ..spec
        }
    );
}

state_contract_tests!(
    env_specs_round_trip,
    env_specs_are_usable_only_by_their_project,
    env_specs_record_whether_previews_may_use_them,
);
