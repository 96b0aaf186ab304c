//! The TriggerBindingStore contract, run against SQLite and DynamoDB (moto): bindings read by repository and event key.

use astrolift_store::state::*;

use crate::state_contract::*;

/// A delivery reads only the bindings of its repository and its event, by key: with many
/// bindings in another repository, none of them is read, and a delivery of another event
/// of the busy repository reads none either (records counted by the store).
pub async fn repository_bindings_are_read_by_key(subject: Subject) {
    let store = subject.store;
    let busy = astrolift_store::testing::unique_name("busy/repo");
    let quiet = astrolift_store::testing::unique_name("quiet/repo");
    let count = busy_binding_count(store.as_ref());
    // A first read migrates older bindings once (DynamoDB); not what is measured here.
    store
        .list_repository_trigger_bindings("warm/up")
        .await
        .unwrap();
    store
        .list_event_trigger_bindings("warm/up", "issues")
        .await
        .unwrap();
    store.apply(bindings_of(&busy, count)).await.unwrap();
    store.apply(bindings_of(&quiet, 1)).await.unwrap();

    let (found, calls) = counted(
        store.as_ref(),
        store.list_event_trigger_bindings(&quiet, "issues"),
    )
    .await;
    let found = found.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].repository, quiet);
    assert_eq!(
        calls,
        (1, 1),
        "one keyed read returning the quiet repository's one binding, none of the busy one's"
    );
    let (found, calls) = counted(
        store.as_ref(),
        store.list_event_trigger_bindings(&busy, "pull_request"),
    )
    .await;
    assert_eq!(found.unwrap(), vec![]);
    assert_eq!(
        calls,
        (1, 0),
        "a delivery of another event reads none of the busy repository's bindings"
    );
    let (found, calls) = counted(
        store.as_ref(),
        store.list_repository_trigger_bindings(&quiet),
    )
    .await;
    assert_eq!(found.unwrap().len(), 1);
    assert_eq!(calls, (1, 1), "the repository listing is keyed too");

    let busy_bindings = store
        .list_event_trigger_bindings(&busy, "issues")
        .await
        .unwrap();
    assert_eq!(busy_bindings.len(), count);
    assert!(
        busy_bindings
            .windows(2)
            .all(|w| w[0].trigger_id < w[1].trigger_id)
    );
    assert_eq!(
        store.list_repository_trigger_bindings(&busy).await.unwrap(),
        busy_bindings
    );

    // A binding that moves to another event leaves the first event's lookup.
    let moved_agent = AgentKey::new(&busy, "agents/a001/astrolift.toml");
    let current = store.get_agent(&moved_agent).await.unwrap().unwrap();
    let mut change = AgentChange::new(
        current.clone(),
        Some(current.version),
        AuditAction::Changed,
        "c2",
        "events changed",
        NOW + 1,
    );
    let mut moved = busy_bindings[BINDINGS_PER_AGENT].clone();
    assert_eq!(moved.manifest_path, moved_agent.manifest_path);
    moved.definition = serde_json::json!({"events": ["push", "issue_comment.created"]});
    change.put_bindings = vec![moved.clone()];
    store
        .apply(ChangeSet {
            repository: busy.clone(),
            agents: vec![change],
            synced: None,
        })
        .await
        .unwrap();
    let issues = store
        .list_event_trigger_bindings(&busy, "issues")
        .await
        .unwrap();
    assert_eq!(issues.len(), count - 1);
    assert!(issues.iter().all(|b| b.trigger_id != moved.trigger_id));
    for event in ["push", "issue_comment"] {
        assert_eq!(
            store
                .list_event_trigger_bindings(&busy, event)
                .await
                .unwrap(),
            vec![moved.clone()],
            "{event}"
        );
    }

    // Teardown deletes every key of its agent's bindings.
    store.teardown(&moved_agent, NOW + 2, "test").await.unwrap();
    let left = store.list_repository_trigger_bindings(&busy).await.unwrap();
    assert_eq!(left.len(), count - BINDINGS_PER_AGENT);
    assert!(
        left.iter()
            .all(|b| b.manifest_path != moved_agent.manifest_path)
    );
    assert_eq!(
        store
            .list_event_trigger_bindings(&busy, "issues")
            .await
            .unwrap(),
        left
    );
    assert_eq!(
        store
            .list_event_trigger_bindings(&busy, "push")
            .await
            .unwrap(),
        vec![]
    );
    assert_eq!(
        store.get_trigger_binding(&moved.trigger_id).await.unwrap(),
        None
    );
}

state_contract_tests!(repository_bindings_are_read_by_key,);
