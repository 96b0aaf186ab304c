//! Dependency layers in the check run (docs/reference.md §16): the check run of the sync
//! after a failed packager run names that run's dispatch and the error it returned, beside
//! what this sync does about the layers.

use astrolift_store::state::{LayerBuild, LayerStatus};

use crate::support::{embedded_stores, fake_github, push_job, register_repository, runner};

/// What the packager's failed callback records for the key (docs/reference.md §16).
const FAILED_DISPATCH: &str = "d-packager-failed";
const ERROR: &str = "pip could not resolve requests==2.32.3";

#[tokio::test(flavor = "multi_thread")]
async fn the_check_run_after_a_failed_packager_run_names_it() {
    let (stores, _dir) = embedded_stores().await;
    register_repository(&stores).await;
    let github = fake_github("layers").await;
    let runner = runner(&github, &stores);
    let first = runner.run(&push_job("d-first")).await.expect("synced");
    assert!(first.applied, "{:?}", first.report.skipped);
    let agents = stores
        .state
        .list_agents("octo/agents")
        .await
        .expect("agents");
    let reporter = agents
        .iter()
        .find(|a| a.name == "reporter")
        .expect("the reporter is registered");
    let key = reporter
        .layer_key
        .clone()
        .expect("its package needs layers");
    let failed = LayerBuild {
        layer_key: key,
        status: LayerStatus::Failed,
        layers: Vec::new(),
        error: Some(ERROR.into()),
        dispatch_id: Some(FAILED_DISPATCH.into()),
        repository: reporter.repository.clone(),
        manifest_path: reporter.manifest_path.clone(),
        artifact_ref: reporter.payload_digest.clone(),
        attempts: 1,
        updated_at: 1,
        version: 1,
    };
    let layers = stores.state.layers();
    layers.put_layer_build(&failed, None).await.expect("failed");

    let next = runner.run(&push_job("d-next")).await.expect("synced");
    let shown: Vec<_> = next
        .report
        .diagnostics
        .iter()
        .filter(|d| d.code == "package/packager-failed")
        .collect();
    assert_eq!(shown.len(), 1, "{:#?}", next.report.diagnostics);
    assert!(
        shown[0].message.contains(FAILED_DISPATCH),
        "{}",
        shown[0].message
    );
    assert!(shown[0].message.contains(ERROR), "{}", shown[0].message);
    let runs = github.check_runs();
    let run = runs
        .iter()
        .find(|r| r.id == next.check_run_id)
        .expect("the next sync's check run");
    let posted = format!(
        "{}\n{}\n{:?}",
        run.summary.clone().unwrap_or_default(),
        run.text.clone().unwrap_or_default(),
        run.annotations
    );
    assert!(posted.contains(FAILED_DISPATCH), "{posted}");
    assert!(posted.contains(ERROR), "{posted}");
}
