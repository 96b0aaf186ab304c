//! The DispatchStore contract, run against SQLite and DynamoDB (moto).

use astrolift_store::state::*;

use crate::state_contract::*;

pub async fn dispatches_are_idempotent(subject: Subject) {
    let store = subject.store;
    let dispatch = Dispatch {
        id: "disp-1".into(),
        idempotency_key: "trg-1:delivery-9".into(),
        trigger_id: "trg-1".into(),
        repository: REPO.into(),
        manifest_path: "agents/triage/astrolift.toml".into(),
        snapshot_hash: "snap-triage".into(),
        payload: Some("{\"mode\":\"triage\"}".into()),
        created_at: NOW,
        status: DispatchStatus::Pending,
        sender: Some("octocat".into()),
        trusted: true,
        task_id: "0b0e7e57-0000-4000-8000-000000000001".into(),
        env_spec: Some("triage-prod".into()),
        message: Some("{\"schema\":\"astrolift.dispatch/v1\"}".into()),
        // Kept as it is, numbers and all, on both stores.
        report: Some(ReportTarget {
            kind: "check".into(),
            repository: "octo/agents".into(),
            installation_id: 31,
            number: 7,
            head_sha: Some("a".repeat(40)),
        }),
    };
    assert_eq!(
        store.record_dispatch(&dispatch).await.unwrap(),
        DispatchOutcome::New
    );
    let retry = Dispatch {
        id: "disp-2".into(),
        created_at: NOW + 1,
        ..dispatch.clone()
    };
    assert_eq!(
        store.record_dispatch(&retry).await.unwrap(),
        DispatchOutcome::Existing("disp-1".into())
    );
    assert_eq!(
        store.get_dispatch("trg-1:delivery-9").await.unwrap(),
        Some(dispatch.clone())
    );
    assert_eq!(store.get_dispatch("other").await.unwrap(), None);

    // Listed newest first, with every field.
    let later = Dispatch {
        id: "disp-3".into(),
        idempotency_key: "manual:3".into(),
        task_id: "0b0e7e57-0000-4000-8000-000000000003".into(),
        created_at: NOW + 5,
        report: None,
        ..dispatch.clone()
    };
    assert_eq!(
        store.record_dispatch(&later).await.unwrap(),
        DispatchOutcome::New
    );
    assert_eq!(
        store.list_dispatches().await.unwrap(),
        vec![later, dispatch]
    );
}

state_contract_tests!(dispatches_are_idempotent,);
