//! Crash consistency: a failure at any write, then a re-run, ends where one clean run ends.

use std::sync::Arc;

use astrolift_store::state::Agent;
use astrolift_store::testing::{FaultPlan, FaultyBlobStore, FaultyStateStore};
use astrolift_sync::Stores;

use crate::harness::{Backend, REPO, apply, both_enabled, open, run};

/// What must match a clean run: everything but timestamps.
fn end_state(agents: &[Agent]) -> Vec<(String, String, String, String, u64, String)> {
    agents
        .iter()
        .map(|a| {
            let status = a.status.as_str().to_owned();
            (
                a.manifest_path.clone(),
                status,
                a.snapshot_hash.clone(),
                a.payload_digest.clone(),
                a.version,
                a.commit.clone(),
            )
        })
        .collect()
}

async fn clean_end_state() -> Vec<(String, String, String, String, u64, String)> {
    let clean = open(Backend::Embedded, "clean")
        .await
        .expect("embedded stores");
    let tree = both_enabled();
    apply(&clean.stores, &tree, "c1", 100).await;
    end_state(&clean.stores.state.list_agents(REPO).await.expect("list"))
}

/// Fails the Nth blob write or the Nth state write, then re-runs without faults.
async fn crash_then_rerun(fail_blob_write: Option<u64>, fail_state_write: Option<u64>) {
    let stores = open(Backend::Embedded, "crash")
        .await
        .expect("embedded stores");
    let tree = both_enabled();
    let faulty = Stores {
        blobs: match fail_blob_write {
            Some(n) => Arc::new(FaultyBlobStore::new(
                stores.stores.blobs.clone(),
                FaultPlan::nth_write(n),
            )),
            None => stores.stores.blobs.clone(),
        },
        state: match fail_state_write {
            Some(n) => Arc::new(FaultyStateStore::new(
                stores.stores.state.clone(),
                FaultPlan::nth_write(n),
            )),
            None => stores.stores.state.clone(),
        },
        concurrency: Default::default(),
    };
    let crashed = run(&faulty, &tree, "c1", 100, true).await;
    let error = crashed.expect_err("the injected fault fails the sync");
    assert!(error.is_retryable(), "{error}");
    let rerun = apply(&stores.stores, &tree, "c1", 100).await;
    assert!(rerun.applied);
    let agents = stores.stores.state.list_agents(REPO).await.expect("list");
    assert_eq!(end_state(&agents), clean_end_state().await);
    for agent in &agents {
        let audit = stores
            .stores
            .state
            .list_audit_events(&agent.key())
            .await
            .expect("audit");
        assert_eq!(
            audit.len(),
            1,
            "exactly one audit event for {}",
            agent.manifest_path
        );
        // Every registered digest points at a stored object.
        let archive = astrolift_store::BlobKey::package(&agent.payload_digest).expect("digest");
        assert!(stores.stores.blobs.exists(&archive).await.expect("exists"));
    }
}

#[tokio::test]
async fn crash_after_the_first_upload() {
    crash_then_rerun(Some(2), None).await;
}

#[tokio::test]
async fn crash_after_every_upload_and_before_the_state_write() {
    crash_then_rerun(None, Some(1)).await;
}

#[tokio::test]
async fn crash_at_the_last_upload() {
    crash_then_rerun(Some(4), None).await;
}

/// A listing of trigger bindings that lags the agent records (a concurrent
/// transaction half-visible) does not make a registered agent "changed": the
/// agent record's bindings digest is what the plan trusts.
#[tokio::test]
async fn a_lagging_binding_listing_changes_nothing() {
    let stores = open(Backend::Embedded, "lagging-bindings")
        .await
        .expect("embedded stores");
    let tree = both_enabled();
    apply(&stores.stores, &tree, "c1", 100).await;
    assert!(
        !stores
            .stores
            .state
            .list_trigger_bindings()
            .await
            .expect("bindings")
            .is_empty(),
        "the fixture registers trigger bindings"
    );
    let lagging = Stores {
        blobs: stores.stores.blobs.clone(),
        state: Arc::new(
            FaultyStateStore::new(stores.stores.state.clone(), FaultPlan::nth_call(u64::MAX))
                .hiding_trigger_bindings(),
        ),
        concurrency: Default::default(),
    };
    let rerun = apply(&lagging, &tree, "c1", 100).await;
    assert!(
        rerun
            .plan
            .iter()
            .all(|e| e.status.as_str() == "unchanged" || e.status.as_str() == "disabled"),
        "{:?}",
        rerun.plan
    );
    let agents = stores.stores.state.list_agents(REPO).await.expect("list");
    assert!(agents.iter().all(|a| a.version == 1), "{agents:?}");
}
