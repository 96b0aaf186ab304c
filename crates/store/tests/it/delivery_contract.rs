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

/// Seconds of [`astrolift_store::state::deliveries::DELIVERY_LEASE`].
fn lease() -> i64 {
    i64::try_from(deliveries::DELIVERY_LEASE.as_secs()).unwrap()
}

/// Only a queued or running delivery within its lease, or a succeeded one, is a duplicate:
/// a redelivery of a failed one, or of one whose lease ran out (its job lost), is new.
pub async fn a_failed_or_lost_delivery_is_new_again(subject: Subject) {
    let store = subject.store;
    let ttl = Duration::from_secs(7 * 24 * 3600);
    let id = |name: &str| astrolift_store::testing::unique_name(name);
    let record = |id: String, at: UnixSeconds| {
        let store = store.clone();
        async move { store.record_delivery(&id, at, ttl).await.unwrap() }
    };

    let failed = id("failed");
    assert_eq!(record(failed.clone(), NOW).await, DeliveryOutcome::New);
    assert!(
        store
            .mark_delivery(&failed, DeliveryState::Running, NOW + 1)
            .await
            .unwrap()
    );
    assert_eq!(
        record(failed.clone(), NOW + 2).await,
        DeliveryOutcome::Duplicate,
        "running"
    );
    assert!(
        store
            .mark_delivery(&failed, DeliveryState::Failed, NOW + 3)
            .await
            .unwrap()
    );
    assert_eq!(
        record(failed.clone(), NOW + 4).await,
        DeliveryOutcome::New,
        "failed"
    );
    assert_eq!(
        record(failed, NOW + 5).await,
        DeliveryOutcome::Duplicate,
        "queued again"
    );

    let succeeded = id("succeeded");
    assert_eq!(record(succeeded.clone(), NOW).await, DeliveryOutcome::New);
    assert!(
        store
            .mark_delivery(&succeeded, DeliveryState::Succeeded, NOW + 1)
            .await
            .unwrap()
    );
    let later = NOW + 10 * lease();
    assert_eq!(
        record(succeeded, later).await,
        DeliveryOutcome::Duplicate,
        "succeeded"
    );

    let lost = id("lost-queued");
    assert_eq!(record(lost.clone(), NOW).await, DeliveryOutcome::New);
    assert_eq!(
        record(lost.clone(), NOW + lease() - 1).await,
        DeliveryOutcome::Duplicate
    );
    assert_eq!(
        record(lost, NOW + lease()).await,
        DeliveryOutcome::New,
        "queued past its lease"
    );

    let stalled = id("lost-running");
    assert_eq!(record(stalled.clone(), NOW).await, DeliveryOutcome::New);
    assert!(
        store
            .mark_delivery(&stalled, DeliveryState::Running, NOW + 100)
            .await
            .unwrap()
    );
    let running_lease_end = NOW + 100 + lease();
    assert_eq!(
        record(stalled.clone(), running_lease_end - 1).await,
        DeliveryOutcome::Duplicate
    );
    assert_eq!(
        record(stalled, running_lease_end).await,
        DeliveryOutcome::New,
        "running past its lease"
    );
}

/// Marking a delivery that is not recorded (a dependent's re-sync, an expired one) writes
/// nothing: the id is still new.
pub async fn marking_an_unknown_delivery_records_nothing(subject: Subject) {
    let store = subject.store;
    let unknown = astrolift_store::testing::unique_name("unknown");
    assert!(
        !store
            .mark_delivery(&unknown, DeliveryState::Succeeded, NOW)
            .await
            .unwrap()
    );
    let ttl = Duration::from_secs(60);
    assert_eq!(
        store.record_delivery(&unknown, NOW, ttl).await.unwrap(),
        DeliveryOutcome::New
    );
    assert!(
        !store
            .mark_delivery(&unknown, DeliveryState::Failed, NOW + 60)
            .await
            .unwrap(),
        "expired"
    );
}

state_contract_tests!(
    deliveries_are_deduplicated_until_expiry,
    a_failed_or_lost_delivery_is_new_again,
    marking_an_unknown_delivery_records_nothing,
);
