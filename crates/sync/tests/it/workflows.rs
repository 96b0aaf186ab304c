//! Workflows at sync, on both backends: registered with their content hash,
//! unchanged on a re-run or a comment-only edit, changed, orphaned when the
//! file goes and added back; a workflow with errors keeps its registration.
//! (The check run's workflow table is rendered, and tested, in crates/bot.)

use astrolift_manifest::MemTree;
use astrolift_store::state::WorkflowStatus;
use astrolift_sync::Stores;

use crate::harness::{REPO, apply, both_enabled, edit, on_both_backends, remove_dir};

on_both_backends!(
    workflows_are_registered_changed_and_orphaned,
    a_failing_workflow_keeps_its_registration,
);

const FLOW: &str = "workflows/triage.toml";

const TRIAGE_FLOW: &str = r#"schema = "astrolift.workflow/v1"
name = "triage"

[[stages]]
name = "collect"
agent = "triage"
payload = '{issue: .input.issue}'

[[stages]]
name = "report"
agent = "reporter"
needs = ["collect"]
payload = '{summary: .stages.collect.result}'
"#;

fn with_flow(text: &str) -> MemTree {
    let mut tree = both_enabled();
    tree.insert(FLOW, text, false);
    tree
}

fn plan(report: &astrolift_sync::Report) -> Vec<(String, &'static str)> {
    report
        .workflows
        .iter()
        .map(|w| (w.name.clone(), w.status.as_str()))
        .collect()
}

fn row(status: &'static str) -> Vec<(String, &'static str)> {
    vec![("triage".to_owned(), status)]
}

async fn stored(stores: &Stores) -> Option<(WorkflowStatus, String, u64)> {
    stores
        .state
        .workflows()
        .get_workflow(REPO, "triage")
        .await
        .expect("read")
        .map(|w| (w.status, w.content_hash, w.version))
}

async fn workflows_are_registered_changed_and_orphaned(stores: &Stores) {
    let first = apply(stores, &with_flow(TRIAGE_FLOW), "c1", 100).await;
    assert_eq!(
        first.counts.diagnostics.errors, 0,
        "{:#?}",
        first.diagnostics
    );
    assert_eq!(plan(&first), row("added"));
    let (status, hash, version) = stored(stores).await.expect("registered");
    assert_eq!((status, version), (WorkflowStatus::Active, 1));
    assert_eq!(first.workflows[0].content_hash.as_ref(), Some(&hash));
    assert_eq!(first.workflows[0].stages, 2);

    let again = apply(stores, &with_flow(TRIAGE_FLOW), "c1", 100).await;
    assert_eq!(plan(&again), row("unchanged"));
    assert_eq!(again.counts.state_writes, 0);
    let comment = format!("# reformatted\n{TRIAGE_FLOW}");
    let commented = apply(stores, &with_flow(&comment), "c2", 150).await;
    assert_eq!(plan(&commented), row("unchanged"));

    let mut changed_tree = with_flow(TRIAGE_FLOW);
    edit(
        &mut changed_tree,
        FLOW,
        "{issue: .input.issue}",
        "{key: .input.issue}",
    );
    let changed = apply(stores, &changed_tree, "c3", 200).await;
    assert_eq!(plan(&changed), row("changed"));
    assert_eq!(changed.workflows[0].previous_hash.as_ref(), Some(&hash));
    let (_, new_hash, version) = stored(stores).await.expect("registered");
    assert_ne!(new_hash, hash);
    assert_eq!(version, 2);

    let without = remove_dir(&changed_tree, "workflows");
    let orphaned = apply(stores, &without, "c4", 300).await;
    assert_eq!(plan(&orphaned), row("orphaned"));
    assert_eq!(
        stored(stores).await.map(|s| s.0),
        Some(WorkflowStatus::Orphaned)
    );
    let still = apply(stores, &without, "c4", 300).await;
    assert_eq!(plan(&still), row("orphaned"));
    assert_eq!(still.counts.state_writes, 0);

    let back = apply(stores, &changed_tree, "c5", 400).await;
    assert_eq!(plan(&back), row("added"));
    assert_eq!(
        stored(stores).await.map(|s| (s.0, s.2)),
        Some((WorkflowStatus::Active, 4))
    );
}

async fn a_failing_workflow_keeps_its_registration(stores: &Stores) {
    apply(stores, &with_flow(TRIAGE_FLOW), "c1", 100).await;
    let before = stored(stores).await;
    let mut broken = with_flow(TRIAGE_FLOW);
    edit(
        &mut broken,
        FLOW,
        "needs = [\"collect\"]",
        "needs = [\"report\"]",
    );
    let report = apply(stores, &broken, "c2", 200).await;
    assert_eq!(plan(&report), row("failed"));
    assert!(
        report
            .diagnostics
            .iter()
            .any(|d| d.code == "workflow/cycle" && d.message.contains("report → report"))
    );
    // The agents still register: a workflow's errors are its own.
    assert!(report.plan.iter().all(|e| e.status.as_str() != "failed"));
    assert_eq!(stored(stores).await, before);
}
