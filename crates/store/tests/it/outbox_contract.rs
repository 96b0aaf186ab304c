//! The dispatch outbox of the embedded store (SQLite only; DynamoDB keeps none): a dispatch
//! and its place in the outbox are one transaction, the bound holds at the limit and one
//! past it (which writes nothing, not even the dispatch), a duplicate is answered even when
//! the outbox is full, a key with no record is refused, and the outbox lists the records
//! oldest first and forgets what was taken out.

use astrolift_store::StateStore;
use astrolift_store::state::*;

use crate::state_contract::{Subject, dynamo_subject, sqlite_subject};
use crate::task_contract::dispatch;

fn outbox(subject: &Subject) -> &dyn DispatchOutbox {
    subject
        .store
        .dispatch_outbox()
        .expect("SQLite keeps an outbox")
}

#[tokio::test]
async fn the_bound_holds_at_the_limit_and_one_past_it_writes_nothing() {
    let subject = sqlite_subject().await;
    let outbox = outbox(&subject);
    let (first, second, third) = (dispatch("ob-1"), dispatch("ob-2"), dispatch("ob-3"));
    for dispatch in [&first, &second] {
        assert_eq!(
            outbox.record_queued(dispatch, 2).await.unwrap(),
            Queued::Recorded(DispatchOutcome::New)
        );
    }
    assert_eq!(outbox.queued_len().await.unwrap(), 2);
    assert_eq!(
        outbox.record_queued(&first, 2).await.unwrap(),
        Queued::Recorded(DispatchOutcome::Existing(first.id.clone())),
        "a duplicate is answered at the bound"
    );
    assert_eq!(outbox.record_queued(&third, 2).await.unwrap(), Queued::Full);
    let store: &dyn StateStore = subject.store.as_ref();
    assert_eq!(
        store.get_dispatch(&third.idempotency_key).await.unwrap(),
        None
    );
    assert_eq!(store.tasks().get_task(&third.task_id).await.unwrap(), None);
    assert_eq!(outbox.queued_len().await.unwrap(), 2);
}

#[tokio::test]
async fn it_lists_the_records_oldest_first_and_forgets_what_was_taken_out() {
    let subject = sqlite_subject().await;
    let outbox = outbox(&subject);
    let dispatches = [dispatch("ls-1"), dispatch("ls-2"), dispatch("ls-3")];
    for dispatch in &dispatches {
        outbox.record_queued(dispatch, 10).await.unwrap();
    }
    // Queueing a recorded dispatch again keeps it once.
    outbox.queue(&dispatches[0].idempotency_key).await.unwrap();
    // A key no dispatch is recorded under is refused, and takes no place.
    let unrecorded = outbox.queue("manual:nobody:none:key:x").await;
    assert!(
        matches!(unrecorded, Err(astrolift_store::StoreError::NotFound(_))),
        "{unrecorded:?}"
    );
    assert_eq!(outbox.queued_len().await.unwrap(), 3);
    let listed = outbox.queued(0, 10).await.unwrap();
    let records: Vec<_> = listed.iter().map(|queued| &queued.dispatch).collect();
    assert_eq!(records, dispatches.iter().collect::<Vec<_>>());
    let after_first = outbox.queued(listed[0].seq, 1).await.unwrap();
    assert_eq!(after_first[0].dispatch, dispatches[1]);
    outbox.unqueue(listed[0].seq).await.unwrap();
    outbox.unqueue(listed[0].seq).await.unwrap();
    assert_eq!(outbox.queued_len().await.unwrap(), 2);
    assert_eq!(
        outbox.queued(0, 10).await.unwrap()[0].dispatch,
        dispatches[1]
    );
}

#[tokio::test]
async fn dynamodb_keeps_no_outbox() {
    if let Some(subject) = dynamo_subject("dynamodb_keeps_no_outbox").await {
        assert!(subject.store.dispatch_outbox().is_none());
    }
}
