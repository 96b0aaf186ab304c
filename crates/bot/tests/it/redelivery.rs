//! A redelivery is queued again when its first job failed, and only then: the remedy
//! docs/operations.md gives for a failed sync ("When a sync fails") works.

use std::sync::Arc;

use astrolift_bot::{Ingress, RecordingJobQueue};
use astrolift_fake_github::Fault;
use astrolift_forge::webhook::WebhookSecrets;
use astrolift_manifest::Limits;
use serde_json::json;

use crate::support::{
    MAIN_SHA, SECRET, deliver, embedded_stores, fake_github, push, register, runner,
};

#[tokio::test(flavor = "multi_thread")]
async fn a_delivery_whose_sync_failed_is_applied_when_redelivered_after_github_recovers() {
    let (stores, _dir) = embedded_stores().await;
    register(&stores).await;
    let github = fake_github("monorepo").await;
    let jobs = Arc::new(RecordingJobQueue::new());
    let ingress = Ingress {
        state: stores.state.clone(),
        secrets: WebhookSecrets::new(SECRET.into(), None).expect("secrets"),
        jobs: jobs.clone(),
        triggers: None,
        limits: Limits::DEFAULT,
        function: "test",
    };
    let runner = runner(&github, &stores);
    let body = push("main", MAIN_SHA);
    let deliver_push = || deliver(&ingress, "push", "d-outage", &body, SECRET);

    github.inject(Fault::server_error(100).on("GET", "/repos/octo/agents/tarball"));
    assert_eq!(deliver_push().await.status, 202);
    let queued = jobs.jobs();
    assert_eq!(queued.len(), 1);
    runner.run(&queued[0]).await.expect_err("GitHub is down");

    github.clear_faults();
    let redelivered = deliver_push().await;
    assert_eq!(
        (redelivered.status, redelivered.body["status"].clone()),
        (202, json!("queued")),
        "a failed delivery is queued again"
    );
    let queued = jobs.jobs();
    assert_eq!(queued.len(), 2);
    let applied = runner.run(&queued[1]).await.expect("GitHub is back");
    assert!(applied.applied);
    assert!(
        !stores
            .state
            .list_agents("octo/agents")
            .await
            .expect("agents")
            .is_empty()
    );

    let again = deliver_push().await;
    assert_eq!(
        (again.status, again.body["status"].clone()),
        (200, json!("duplicate")),
        "a succeeded delivery stays a duplicate"
    );
    assert_eq!(jobs.jobs().len(), 2);
}
