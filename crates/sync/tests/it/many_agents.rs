//! A push of many agents on DynamoDB and S3 (docs/reference.md §6, "A push of many
//! agents"): its blob writes run side by side and its state goes in concurrent
//! transactions, yet a failure midway (a failed PUT, a failed transaction) leaves no record
//! naming a missing blob, every agent wholly at its old or its new version, and the synced
//! commit where it was; the re-run converges, and a third run writes nothing.

use std::sync::Arc;

use astrolift_store::BlobKey;
use astrolift_store::testing::{FaultPlan, FaultyBlobStore, FaultyStateStore};
use astrolift_sync::{PlanStatus, Stores};

use crate::harness::{Backend, REPO, apply, many_agents, open, run};

/// Three transactions' worth of agents, and a few hundred blobs.
const AGENTS: usize = 250;

/// Every registered agent's archive and snapshot are stored.
async fn assert_records_name_stored_blobs(stores: &Stores) {
    for agent in registered(stores).await {
        for key in [
            BlobKey::package(&agent.payload_digest).expect("digest"),
            BlobKey::snapshot(&agent.snapshot_hash).expect("hash"),
        ] {
            let stored = stores.blobs.exists(&key).await.expect("exists");
            assert!(
                stored,
                "{} names {key}, which is not stored",
                agent.manifest_path
            );
        }
    }
}

async fn registered(stores: &Stores) -> Vec<astrolift_store::state::Agent> {
    stores.state.list_agents(REPO).await.expect("agents")
}

async fn synced_commit(stores: &Stores) -> Option<String> {
    let synced = stores.state.get_synced_commit(REPO, "main").await;
    synced.expect("synced commit").map(|s| s.commit)
}

/// A re-run of what is registered writes nothing.
async fn assert_rerun_writes_nothing(
    stores: &Stores,
    tree: &astrolift_manifest::MemTree,
    commit: &str,
) {
    let again = apply(stores, tree, commit, 300).await;
    assert_eq!((again.counts.blob_puts, again.counts.state_writes), (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_put_failing_midway_writes_no_record_and_the_rerun_converges() {
    let Some(stores) = open(Backend::Aws, "many-agents-put").await else {
        return;
    };
    let stores = stores.stores.clone();
    let tree = many_agents(AGENTS, "first");
    let failing = Stores {
        blobs: Arc::new(FaultyBlobStore::new(
            stores.blobs.clone(),
            FaultPlan::nth_write(AGENTS as u64),
        )),
        ..stores.clone()
    };
    let error = run(&failing, &tree, "c1", 100, true)
        .await
        .expect_err("the PUT fails");
    assert!(error.is_retryable(), "{error}");
    assert!(registered(&stores).await.is_empty());
    assert_eq!(synced_commit(&stores).await, None);

    let rerun = apply(&stores, &tree, "c1", 100).await;
    let added = rerun.plan.iter().filter(|e| e.status == PlanStatus::Added);
    assert_eq!(added.count(), AGENTS);
    assert_records_name_stored_blobs(&stores).await;
    assert_eq!(synced_commit(&stores).await.as_deref(), Some("c1"));
    assert_rerun_writes_nothing(&stores, &tree, "c1").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transaction_failing_midway_keeps_whole_agents_and_the_rerun_converges() {
    let Some(stores) = open(Backend::Aws, "many-agents-transaction").await else {
        return;
    };
    let stores = stores.stores.clone();
    apply(&stores, &many_agents(AGENTS, "first"), "c1", 100).await;
    let changed = many_agents(AGENTS, "second");
    // The plan takes this agent for a new one, so its chunk's transaction is cancelled.
    let hidden = "agents/agent-0125/astrolift.toml";
    let lagging = Stores {
        state: Arc::new(
            FaultyStateStore::new(stores.state.clone(), FaultPlan::nth_call(u64::MAX))
                .hiding_agent(hidden),
        ),
        ..stores.clone()
    };
    let error = run(&lagging, &changed, "c2", 200, true)
        .await
        .expect_err("the hidden agent's condition fails");
    assert!(error.is_retryable(), "{error}");

    let agents = registered(&stores).await;
    assert_eq!(agents.len(), AGENTS);
    let mut moved = 0;
    for agent in &agents {
        let expected_commit = match agent.version {
            1 => "c1",
            2 => "c2",
            other => panic!("{} is at version {other}", agent.manifest_path),
        };
        assert_eq!(agent.commit, expected_commit, "{}", agent.manifest_path);
        let audit = stores
            .state
            .list_audit_events(&agent.key())
            .await
            .expect("audit");
        assert_eq!(audit.len() as u64, agent.version, "{}", agent.manifest_path);
        moved += usize::from(agent.version == 2);
    }
    let hidden_agent = agents.iter().find(|a| a.manifest_path == hidden);
    assert_eq!(hidden_agent.map(|a| a.version), Some(1));
    assert!(moved < AGENTS, "the cancelled transaction wrote nothing");
    assert_eq!(synced_commit(&stores).await.as_deref(), Some("c1"));
    assert_records_name_stored_blobs(&stores).await;

    apply(&stores, &changed, "c2", 200).await;
    let agents = registered(&stores).await;
    assert!(agents.iter().all(|a| a.version == 2 && a.commit == "c2"));
    assert_eq!(synced_commit(&stores).await.as_deref(), Some("c2"));
    assert_records_name_stored_blobs(&stores).await;
    assert_rerun_writes_nothing(&stores, &changed, "c2").await;
}
