//! The LayerStore contract, run against SQLite and DynamoDB (moto): a layer key's build,
//! written with versions, and records of older versions still loading.

use astrolift_store::StoreError;
use astrolift_store::state::*;

use crate::state_contract::Subject;

fn build(key: &str, status: LayerStatus, version: u64) -> LayerBuild {
    LayerBuild {
        layer_key: key.into(),
        status,
        layers: Vec::new(),
        error: None,
        dispatch_id: Some(format!("d-{version}")),
        repository: "octo/agents".into(),
        manifest_path: "astrolift.toml".into(),
        artifact_ref: format!("sha256:{}", "a".repeat(64)),
        attempts: 1,
        updated_at: 1_767_225_600,
        version,
    }
}

pub async fn layer_builds_are_written_with_versions(subject: Subject) {
    let store = subject.store.layers();
    let key = astrolift_store::testing::unique_name("layerkey");
    assert_eq!(store.get_layer_build(&key).await.unwrap(), None);
    let pending = build(&key, LayerStatus::Pending, 1);
    store.put_layer_build(&pending, None).await.unwrap();
    // A second sync that saw no build loses the race: it dispatches nothing.
    let again = store.put_layer_build(&pending, None).await;
    assert!(matches!(again, Err(StoreError::Conflict(_))), "{again:?}");
    let mut ready = build(&key, LayerStatus::Ready, 2);
    ready.layers = vec![Layer {
        layer_id: "l-1".into(),
        name: "python-deps".into(),
        mount_path: "/tmp/venv".into(),
        digest: format!("sha256:{}", "b".repeat(64)),
    }];
    let stale = store.put_layer_build(&ready, Some(2)).await;
    assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");
    store.put_layer_build(&ready, Some(1)).await.unwrap();
    assert_eq!(store.get_layer_build(&key).await.unwrap(), Some(ready));
    let other = format!("{key}-other");
    assert_eq!(store.get_layer_build(&other).await.unwrap(), None);
}

/// An agent record written before layers existed (no `layer_key`) loads with `None`, and
/// one with a key keeps it.
pub async fn agents_keep_their_layer_key(subject: Subject) {
    let repository = astrolift_store::testing::unique_name("octo/layers");
    let mut agent = crate::state_contract::agent("a/astrolift.toml", "a");
    agent.repository = repository.clone();
    agent.layer_key = Some("c".repeat(64));
    let change = AgentChange::new(agent.clone(), None, AuditAction::Added, "c1", "", 0);
    subject
        .store
        .apply(ChangeSet {
            repository: repository.clone(),
            agents: vec![change],
            synced: None,
        })
        .await
        .unwrap();
    let read = subject
        .store
        .get_agent(&agent.key())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.layer_key, agent.layer_key);
    let old: Agent = serde_json::from_str(
        r#"{"repository":"o/r","manifest_path":"astrolift.toml","project_id":"p","name":"a",
            "alias":null,"status":"active","snapshot_hash":"s","payload_digest":"d",
            "commit":"c","version":1,"updated_at":0}"#,
    )
    .unwrap();
    assert_eq!(old.layer_key, None);
}

concurrent_contract_tests!(
    layer_builds_are_written_with_versions,
    agents_keep_their_layer_key
);
