//! The InstallationStore contract, run against SQLite and DynamoDB (moto).

use astrolift_store::state::*;

use crate::state_contract::*;

/// An installation put, read back and deleted.
pub async fn installations_round_trip(subject: Subject) {
    let store = subject.store;
    let installation = Installation {
        installation_id: 42,
        account: "octo".into(),
        repositories: vec![REPO.into()],
        suspended: false,
        updated_at: NOW,
    };
    store.put_installation(&installation).await.unwrap();
    assert_eq!(
        store.get_installation(42).await.unwrap(),
        Some(installation)
    );
    store.delete_installation(42).await.unwrap();
    assert_eq!(store.get_installation(42).await.unwrap(), None);
}

state_contract_tests!(installations_round_trip,);
