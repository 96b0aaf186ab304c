//! The Step Functions engine at sync (docs/reference.md §5.6), with Step Functions on moto:
//! an applying sync puts each workflow's state machine and records its ARN, and the check
//! run says so; the same commit again asks Step Functions nothing; a changed workflow gets
//! a new machine and the old one, idle, is deleted; an orphaned workflow's machine too.

use std::path::Path;
use std::sync::Arc;

use astrolift_bot::state_machines::StepFunctionsEngine;
use astrolift_dispatch::engine::StepFunctionsSettings;
use astrolift_dispatch::step_functions::StepFunctions;
use astrolift_store::testing::{aws_endpoint, unique_name};

use crate::support::{
    INSTALLATION, MAIN_SHA, embedded_stores, examples, push_job, register, runner,
};

const NEXT_SHA: &str = "cccccccccccccccccccccccccccccccccccccccc";
const GONE_SHA: &str = "dddddddddddddddddddddddddddddddddddddddd";
const ROLE: &str = "arn:aws:iam::123456789012:role/astrolift-state-machines";

/// The monorepo with the workflow `triage` of `stages` (TOML `[[stages]]` tables).
fn monorepo_with_workflow(stages: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&examples("monorepo"), dir.path());
    let workflows = dir.path().join("workflows");
    std::fs::create_dir_all(&workflows).expect("workflows dir");
    let text = format!("schema = \"astrolift.workflow/v1\"\nname = \"triage\"\n\n{stages}");
    std::fs::write(workflows.join("triage.toml"), text).expect("workflow file");
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).expect("dir");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

const ONE_STAGE: &str = "[[stages]]\nname = \"classify\"\nagent = \"emr-triage\"\n";
const TWO_STAGES: &str = "[[stages]]\nname = \"classify\"\nagent = \"emr-triage\"\n\n\
     [[stages]]\nname = \"route\"\nagent = \"emr-triage\"\nneeds = [\"classify\"]\n";

#[tokio::test(flavor = "multi_thread")]
async fn an_applying_sync_puts_each_workflows_state_machine_once() {
    if aws_endpoint("an_applying_sync_puts_each_workflows_state_machine_once").is_none() {
        return;
    }
    let (stores, _dir) = embedded_stores().await;
    register(&stores).await;
    let first_tree = monorepo_with_workflow(ONE_STAGE);
    let next_tree = monorepo_with_workflow(TWO_STAGES);
    let github = astrolift_fake_github::FakeGitHub::start()
        .await
        .expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", MAIN_SHA, first_tree.path());
    github.add_example_skill_repos();
    github.add_commit("octo", "agents", MAIN_SHA, &[]);
    let sdk = astrolift_store::load_sdk_config().await;
    let prefix = format!("{}-", unique_name("sm").replace('_', "-"));
    let prefix: String = prefix.chars().take(30).collect();
    let client = StepFunctions::new(aws_sdk_sfn::Client::new(&sdk), ROLE);
    let mut runner = runner(&github, &stores);
    runner.workflow_engine = Some(Arc::new(StepFunctionsEngine {
        client: client.clone(),
        settings: StepFunctionsSettings {
            stage_queue_url: "https://sqs.us-east-1.amazonaws.com/123456789012/stages".into(),
            role_arn: ROLE.into(),
            prefix: prefix.clone(),
        },
    }));

    let first = runner.run(&push_job("d-sm-1")).await.expect("synced");
    assert!(first.applied, "{:?}", first.report.skipped);
    let summary = latest_summary(&github);
    assert!(
        summary.contains("### Workflows on Step Functions"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("state machine `{prefix}octo_agents-triage-")),
        "{summary}"
    );
    let record = workflow(&stores).await;
    let arn = record
        .state_machine_arn
        .clone()
        .expect("the machine is recorded");

    // The same commit again: the machine is the record's, nothing is asked or said.
    runner.run(&push_job("d-sm-2")).await.expect("synced");
    assert!(!latest_summary(&github).contains("Workflows on Step Functions"));
    assert_eq!(workflow(&stores).await.state_machine_arn, Some(arn.clone()));

    // A changed workflow: a new machine; the old one, idle, is deleted.
    github.add_repo("octo", "agents", "main", NEXT_SHA, next_tree.path());
    github.add_commit("octo", "agents", NEXT_SHA, &[MAIN_SHA]);
    let mut next = push_job("d-sm-3");
    next.head_sha = NEXT_SHA.into();
    next.before = Some(MAIN_SHA.into());
    assert!(runner.run(&next).await.expect("synced").applied);
    let moved = workflow(&stores).await;
    let new_arn = moved.state_machine_arn.clone().expect("a new machine");
    assert_ne!(new_arn, arn);
    assert!(moved.retired_state_machines.is_empty(), "{moved:#?}");
    let sfn = aws_sdk_sfn::Client::new(&sdk);
    let described = |arn: String| {
        let sfn = sfn.clone();
        async move {
            sfn.describe_state_machine()
                .state_machine_arn(arn)
                .send()
                .await
        }
    };
    assert!(
        described(new_arn.clone()).await.is_ok(),
        "the new machine exists"
    );
    assert!(described(arn).await.is_err(), "the old machine is gone");

    // The workflow's file removed: orphaned, and its machine, idle, is deleted.
    let gone_tree = tempfile::tempdir().expect("temp dir");
    copy_dir(&examples("monorepo"), gone_tree.path());
    github.add_repo("octo", "agents", "main", GONE_SHA, gone_tree.path());
    github.add_commit("octo", "agents", GONE_SHA, &[NEXT_SHA]);
    let mut gone = push_job("d-sm-4");
    gone.head_sha = GONE_SHA.into();
    gone.before = Some(NEXT_SHA.into());
    assert!(runner.run(&gone).await.expect("synced").applied);
    let orphaned = workflow(&stores).await;
    assert_eq!(
        orphaned.status,
        astrolift_store::state::WorkflowStatus::Orphaned
    );
    assert_eq!(orphaned.state_machine_arn, None, "{orphaned:#?}");
    assert!(orphaned.retired_state_machines.is_empty(), "{orphaned:#?}");
    assert!(
        described(new_arn).await.is_err(),
        "the orphaned workflow's machine is gone"
    );
}

async fn workflow(stores: &astrolift_sync::Stores) -> astrolift_store::state::WorkflowRecord {
    stores
        .state
        .workflows()
        .get_workflow("octo/agents", "triage")
        .await
        .expect("read")
        .expect("the workflow is registered")
}

fn latest_summary(github: &astrolift_fake_github::FakeGitHub) -> String {
    github
        .check_runs()
        .last()
        .and_then(|run| run.summary.clone())
        .unwrap_or_default()
}
