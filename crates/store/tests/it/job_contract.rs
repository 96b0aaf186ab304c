//! The JobStore contract, run against SQLite and DynamoDB (moto): `serve`'s durable queue
//! and its dead letter.

use astrolift_store::state::*;
use serde_json::json;

use crate::state_contract::Subject;

const NOW: UnixSeconds = 1_767_225_600;

fn job(id: &str, state: JobState) -> JobRecord {
    JobRecord {
        id: id.into(),
        state,
        attempts: 0,
        job: JobJson::of(&json!({"version": 1, "delivery_id": format!("d-{id}"),
                    "repository": "octo/agents", "repository_id": 4001, "branch": "main",
                    "pull_request": null}))
        .unwrap(),
        queued_at: NOW,
        updated_at: NOW,
        error: None,
    }
}

fn ids(jobs: &[JobRecord]) -> Vec<&str> {
    jobs.iter().map(|j| j.id.as_str()).collect()
}

/// A job is put once, listed in id order (whatever order it was put in), replaced whole,
/// and gone once deleted.
pub async fn jobs_are_put_once_and_listed_in_id_order(subject: Subject) {
    let store = subject.store.jobs();
    for id in [
        "00000000000000000003",
        "00000000000000000001",
        "00000000000000000002",
    ] {
        store.put_job(&job(id, JobState::Queued)).await.unwrap();
    }
    let again = store
        .put_job(&job("00000000000000000001", JobState::Queued))
        .await
        .unwrap_err();
    assert!(again.is_conflict(), "{again}");
    let listed = store.list_jobs(None).await.unwrap();
    assert_eq!(
        ids(&listed),
        [
            "00000000000000000001",
            "00000000000000000002",
            "00000000000000000003"
        ]
    );
    assert_eq!(listed[0], job("00000000000000000001", JobState::Queued));

    let mut failed = job("00000000000000000002", JobState::Failed);
    failed.attempts = 5;
    failed.updated_at = NOW + 30;
    failed.error = Some("GitHub answered 404 Not Found".into());
    assert!(store.update_job(&failed).await.unwrap());
    assert_eq!(
        store.get_job("00000000000000000002").await.unwrap(),
        Some(failed.clone())
    );
    assert_eq!(
        store.list_jobs(Some(JobState::Failed)).await.unwrap(),
        [failed]
    );
    assert_eq!(
        ids(&store.list_jobs(Some(JobState::Queued)).await.unwrap()),
        ["00000000000000000001", "00000000000000000003"]
    );

    assert!(store.delete_job("00000000000000000001").await.unwrap());
    assert!(!store.delete_job("00000000000000000001").await.unwrap());
    assert_eq!(store.get_job("00000000000000000001").await.unwrap(), None);
    // An update of a deleted job writes nothing: it does not come back.
    let gone = job("00000000000000000001", JobState::Running);
    assert!(!store.update_job(&gone).await.unwrap());
    assert_eq!(store.get_job("00000000000000000001").await.unwrap(), None);
    assert_eq!(
        ids(&store.list_jobs(None).await.unwrap()),
        ["00000000000000000002", "00000000000000000003"]
    );
}

/// More jobs than one DynamoDB page holds come back whole, in order.
pub async fn a_long_queue_is_listed_whole(subject: Subject) {
    let store = subject.store.jobs();
    let mut record = job("x", JobState::Queued);
    // ~4 KiB per record: 300 of them are past one 1 MB Query page.
    let mut padded = record.job.value();
    padded["padding"] = json!("p".repeat(4096));
    record.job = JobJson::of(&padded).unwrap();
    for n in (0..300u32).rev() {
        record.id = format!("{n:020}");
        store.put_job(&record).await.unwrap();
    }
    let listed = store.list_jobs(Some(JobState::Queued)).await.unwrap();
    assert_eq!(listed.len(), 300);
    assert!(listed.windows(2).all(|w| w[0].id < w[1].id));
}

/// A delivery recorded with its job: both or neither. A duplicate delivery records no job;
/// a job id recorded already leaves the delivery unrecorded; a redelivery of a failed one
/// records it and its new job again.
pub async fn a_delivery_and_its_job_are_recorded_together_or_not_at_all(subject: Subject) {
    let (state, store) = (&subject.store, subject.store.jobs());
    let ttl = std::time::Duration::from_secs(3600);
    let first = job("00000000000000000001", JobState::Queued);
    let recorded = store
        .put_job_for_delivery("d-1", NOW, ttl, &first)
        .await
        .unwrap();
    assert_eq!(recorded, DeliveryOutcome::New);
    assert_eq!(store.get_job(&first.id).await.unwrap(), Some(first.clone()));
    // The delivery is recorded: as a duplicate to both calls.
    assert_eq!(
        state.record_delivery("d-1", NOW + 1, ttl).await.unwrap(),
        DeliveryOutcome::Duplicate
    );
    let second = job("00000000000000000002", JobState::Queued);
    let again = store
        .put_job_for_delivery("d-1", NOW + 1, ttl, &second)
        .await
        .unwrap();
    assert_eq!(again, DeliveryOutcome::Duplicate);
    assert_eq!(store.get_job(&second.id).await.unwrap(), None);

    // A job id recorded already: a conflict, and its delivery is not recorded either.
    let conflict = store
        .put_job_for_delivery("d-2", NOW, ttl, &first)
        .await
        .unwrap_err();
    assert!(conflict.is_conflict(), "{conflict}");
    assert_eq!(
        state.record_delivery("d-2", NOW + 1, ttl).await.unwrap(),
        DeliveryOutcome::New
    );

    // A failed delivery's redelivery is new again, with its new job.
    assert!(
        state
            .mark_delivery("d-1", DeliveryState::Failed, NOW + 2)
            .await
            .unwrap()
    );
    let redelivered = store
        .put_job_for_delivery("d-1", NOW + 3, ttl, &second)
        .await
        .unwrap();
    assert_eq!(redelivered, DeliveryOutcome::New);
    assert_eq!(
        ids(&store.list_jobs(None).await.unwrap()),
        ["00000000000000000001", "00000000000000000002"]
    );
}

/// A job's state and its delivery's are written together: an attempt starting, its retry
/// waiting, the dead letter, a success. The delivery's state shows in what its redelivery
/// is: a duplicate while its job is queued, running or done, new again once it failed.
pub async fn a_job_moves_its_delivery_with_it(subject: Subject) {
    let (state, store) = (&subject.store, subject.store.jobs());
    let ttl = std::time::Duration::from_secs(3600);
    let mark = |delivery_id, state, now| DeliveryMark {
        delivery_id,
        state,
        now,
    };
    let mut first = job("00000000000000000001", JobState::Queued);
    store
        .put_job_for_delivery("d-1", NOW, ttl, &first)
        .await
        .unwrap();

    first.state = JobState::Running;
    first.attempts = 1;
    let running = mark("d-1", DeliveryState::Running, NOW + 1);
    assert!(store.update_job_marking(&first, running).await.unwrap());
    assert_eq!(store.get_job(&first.id).await.unwrap(), Some(first.clone()));
    let redelivered = state.record_delivery("d-1", NOW + 2, ttl).await.unwrap();
    assert_eq!(redelivered, DeliveryOutcome::Duplicate);

    // The dead letter: the job stays, failed, and a redelivery is new again.
    first.state = JobState::Failed;
    let failed = mark("d-1", DeliveryState::Failed, NOW + 3);
    assert!(store.update_job_marking(&first, failed).await.unwrap());
    assert_eq!(store.get_job(&first.id).await.unwrap(), Some(first.clone()));
    let redelivered = state.record_delivery("d-1", NOW + 4, ttl).await.unwrap();
    assert_eq!(redelivered, DeliveryOutcome::New);

    // A success: the job is gone and its delivery a duplicate for good.
    let succeeded = mark("d-1", DeliveryState::Succeeded, NOW + 5);
    assert!(
        store
            .delete_job_marking(&first.id, succeeded)
            .await
            .unwrap()
    );
    assert_eq!(store.get_job(&first.id).await.unwrap(), None);
    let redelivered = state.record_delivery("d-1", NOW + 6, ttl).await.unwrap();
    assert_eq!(redelivered, DeliveryOutcome::Duplicate);
    assert!(
        !store
            .delete_job_marking(&first.id, succeeded)
            .await
            .unwrap()
    );

    // A job that no recorded delivery made (a dependent's re-sync) is written all the same;
    // one not recorded is not.
    let second = job("00000000000000000002", JobState::Queued);
    store.put_job(&second).await.unwrap();
    let unrecorded = mark("d-none", DeliveryState::Running, NOW + 7);
    assert!(store.update_job_marking(&second, unrecorded).await.unwrap());
    let absent = job("00000000000000000003", JobState::Running);
    assert!(!store.update_job_marking(&absent, unrecorded).await.unwrap());
    assert_eq!(
        ids(&store.list_jobs(None).await.unwrap()),
        ["00000000000000000002"]
    );
    let recorded = state.record_delivery("d-none", NOW + 8, ttl).await.unwrap();
    assert_eq!(recorded, DeliveryOutcome::New, "marks record no delivery");
}

state_contract_tests!(
    jobs_are_put_once_and_listed_in_id_order,
    a_long_queue_is_listed_whole,
    a_delivery_and_its_job_are_recorded_together_or_not_at_all,
    a_job_moves_its_delivery_with_it,
);
