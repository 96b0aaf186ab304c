//! The DeliveryStore contract, run against SQLite and DynamoDB (moto).

use std::time::Duration;

use astrolift_store::state::*;

use crate::state_contract::*;

pub async fn deliveries_are_deduplicated_until_expiry(subject: Subject) {
    let store = subject.store;
    let ttl = Duration::from_secs(3600);
    assert_eq!(
        store.record_delivery("d-1", NOW, ttl).await.unwrap(),
        DeliveryOutcome::New
    );
    assert_eq!(
        store.record_delivery("d-1", NOW + 5, ttl).await.unwrap(),
        DeliveryOutcome::Duplicate
    );
    assert_eq!(
        store.record_delivery("d-2", NOW + 5, ttl).await.unwrap(),
        DeliveryOutcome::New
    );
    assert_eq!(
        store.record_delivery("d-1", NOW + 3601, ttl).await.unwrap(),
        DeliveryOutcome::New,
        "an expired id is new again"
    );
    store.forget_delivery("d-2").await.unwrap();
    assert_eq!(
        store.record_delivery("d-2", NOW + 6, ttl).await.unwrap(),
        DeliveryOutcome::New,
        "a forgotten id is new again"
    );
    store.forget_delivery("never-seen").await.unwrap();
}

state_contract_tests!(deliveries_are_deduplicated_until_expiry,);
