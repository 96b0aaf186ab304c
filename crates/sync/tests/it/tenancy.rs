//! Env specs belong to a project: a trigger naming one of another project,
//! or one that does not exist, fails its agent on the check run.

use astrolift_manifest::Diagnostic;
use astrolift_store::state::RepoRegistration;
use astrolift_sync::{Report, Stores};

use crate::harness::{
    PROJECT, REPO, both_enabled, define_env_spec, edit, on_both_backends, run, statuses,
};

on_both_backends!(
    an_env_spec_of_another_project_fails_the_agent_on_its_env_spec_line,
    a_missing_env_spec_reads_the_same_as_another_projects,
    a_registered_repository_is_checked_against_its_project_in_check_mode,
);

const TRIAGE: &str = "agents/triage/astrolift.toml";
const REPORTER: &str = "agents/reporter/astrolift.toml";

fn env_spec_errors(report: &Report) -> Vec<&Diagnostic> {
    report
        .diagnostics
        .iter()
        .filter(|d| d.code == "trigger/env-spec-not-in-project")
        .collect()
}

async fn an_env_spec_of_another_project_fails_the_agent_on_its_env_spec_line(stores: &Stores) {
    define_env_spec(stores, "other-prod", "proj-other").await;
    let mut tree = both_enabled();
    edit(
        &mut tree,
        TRIAGE,
        "env_spec = \"triage-prod\"",
        "env_spec = \"other-prod\"",
    );
    let report = run(stores, &tree, "c1", 100, true).await.expect("sync");
    let errors = env_spec_errors(&report);
    assert_eq!(errors.len(), 1, "{:#?}", report.diagnostics);
    let error = errors[0];
    assert_eq!((error.path.as_str(), error.span.line), (TRIAGE, 48));
    assert_eq!(
        error.message,
        format!("env spec `other-prod` does not exist in project `{PROJECT}`")
    );
    assert_eq!(
        statuses(&report),
        [
            (REPORTER.to_owned(), "added"),
            (TRIAGE.to_owned(), "failed")
        ]
    );
    // Not registered, so none of its bindings is written.
    let bindings = stores
        .state
        .list_trigger_bindings()
        .await
        .expect("bindings");
    assert!(
        bindings.iter().all(|b| b.manifest_path != TRIAGE),
        "{bindings:?}"
    );
    assert!(
        stores
            .state
            .list_agents(REPO)
            .await
            .expect("agents")
            .iter()
            .all(|a| a.manifest_path != TRIAGE)
    );
}

async fn a_missing_env_spec_reads_the_same_as_another_projects(stores: &Stores) {
    let mut tree = both_enabled();
    edit(
        &mut tree,
        TRIAGE,
        "env_spec = \"triage-prod\"",
        "env_spec = \"nowhere\"",
    );
    let report = run(stores, &tree, "c1", 100, true).await.expect("sync");
    let errors = env_spec_errors(&report);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].message,
        format!("env spec `nowhere` does not exist in project `{PROJECT}`")
    );
    let help = errors[0].help.clone().unwrap_or_default();
    assert!(
        help.contains(
            "`astrolift env-spec upsert nowhere --project-id proj-1 --agent-type claude --runtime claude-code`"
        ),
        "{help}"
    );
}

async fn a_registered_repository_is_checked_against_its_project_in_check_mode(stores: &Stores) {
    let tree = both_enabled();
    // Unregistered: no project to check against, and nothing registers.
    let unregistered = run(stores, &tree, "c1", 100, false).await.expect("sync");
    assert!(env_spec_errors(&unregistered).is_empty());
    // Registered under a project that does not own `triage-prod`.
    let registration = RepoRegistration {
        repository: REPO.into(),
        installation_id: None,
        project_id: "proj-other".into(),
        registered_ref: "main".into(),
        manifest_path: None,
        updated_at: 1,
        last_sync: None,
        previews: false,
    };
    stores
        .state
        .put_registration(&registration)
        .await
        .expect("registered");
    let checked = run(stores, &tree, "c1", 100, false).await.expect("sync");
    let errors = env_spec_errors(&checked);
    assert_eq!(errors.len(), 1, "{:#?}", checked.diagnostics);
    assert!(errors[0].message.contains("project `proj-other`"));
}
