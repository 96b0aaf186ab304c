//! Timings of a 1,000-agent first apply on each state store (run with `--ignored --nocapture`).

use std::time::Instant;

use astrolift_store::StateStore;
use astrolift_store::state::{ChangeSet, SqliteStateStore};

async fn time_first_apply(store: &dyn StateStore, label: &str) {
    let agents = (0..1000)
        .map(|i| {
            crate::state_contract::added(
                &format!("agents/a{i:04}/astrolift.toml"),
                &format!("a{i:04}"),
            )
        })
        .collect();
    let changes = ChangeSet {
        repository: "octo/agents".into(),
        agents,
        synced: None,
    };
    let started = Instant::now();
    let report = store.apply(changes).await.unwrap();
    let applied = started.elapsed();
    let started = Instant::now();
    let listed = store.list_agents("octo/agents").await.unwrap().len();
    eprintln!(
        "{label}: apply of 1000 agents {applied:?} ({} transactions, {} items); list_agents {:?} ({listed})",
        report.transactions,
        report.items_written,
        started.elapsed()
    );
}

#[tokio::test]
#[ignore = "timing, run on demand"]
async fn apply_1000_agents() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStateStore::open(dir.path().join("state.db"))
        .await
        .unwrap();
    time_first_apply(&sqlite, "sqlite").await;
    if let Some(dynamo) = crate::state_contract::dynamo_store("apply_1000_agents").await {
        time_first_apply(&dynamo, "dynamodb (moto)").await;
    }
}
