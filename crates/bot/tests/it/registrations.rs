//! Registrations per (repository, manifest path): two registrations of one monorepo (two
//! manifests, two projects, two refs) each apply exactly their own agents; a manifest no
//! registration covers is checked only, and the check run says how to register it.

use std::path::Path;

use astrolift_fake_github::FakeGitHub;
use astrolift_store::state::RepoRegistration;
use astrolift_sync::{PlanStatus, Stores};

use crate::support::{
    INSTALLATION, MAIN_SHA, aws_stores, embedded_stores, examples, push_job, runner,
};

const TRIAGE: &str = "agents/triage/astrolift.toml";
const REPORTER: &str = "agents/reporter/astrolift.toml";
const GAMMA: &str = "agents/gamma/astrolift.toml";

/// The monorepo example with its reporter enabled and a third agent, `gamma`.
fn three_agent_monorepo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&examples("monorepo"), dir.path());
    let gamma = dir.path().join("agents/gamma");
    copy_dir(&dir.path().join("agents/triage"), &gamma);
    let manifest = std::fs::read_to_string(gamma.join("astrolift.toml")).expect("manifest");
    std::fs::write(
        gamma.join("astrolift.toml"),
        manifest.replace("name = \"emr-triage\"", "name = \"gamma\""),
    )
    .expect("write");
    let federation = std::fs::read_to_string(dir.path().join("astrolift.agents.toml"))
        .expect("federation")
        .replace("enabled = false\n", "")
        + "\n[[agents]]\nmanifest = \"agents/gamma/astrolift.toml\"\nalias = \"gamma\"\n";
    std::fs::write(dir.path().join("astrolift.agents.toml"), federation).expect("write");
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

async fn register(stores: &Stores, manifest: &str, project: &str, git_ref: &str) {
    let registration = RepoRegistration {
        repository: "octo/agents".into(),
        installation_id: Some(INSTALLATION),
        project_id: project.into(),
        registered_ref: git_ref.into(),
        manifest_path: Some(manifest.into()),
        updated_at: 1,
        last_sync: None,
        previews: false,
    };
    stores
        .state
        .put_registration(&registration)
        .await
        .expect("registered");
}

fn status_of(report: &astrolift_sync::Report, manifest: &str) -> PlanStatus {
    report
        .plan
        .iter()
        .find(|e| e.manifest == manifest)
        .map(|e| e.status)
        .unwrap_or_else(|| panic!("no plan entry for {manifest}: {:#?}", report.plan))
}

async fn each_registration_applies_its_own_agents(stores: Stores) {
    let fixture = three_agent_monorepo();
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", MAIN_SHA, fixture.path());
    github.add_example_skill_repos();
    register(&stores, TRIAGE, "proj-triage", "main").await;
    register(&stores, REPORTER, "proj-reports", "release").await;
    // The triage trigger names `triage-prod`: an env spec of the triage project.
    let spec = astrolift_store::testing::triage_env_spec("proj-triage");
    stores.state.put_env_spec(&spec).await.expect("env spec");
    // Its catalogue and organization skills resolve through the triage project's sources.
    let state = stores.state.as_ref();
    astrolift_store::testing::register_example_skill_sources(state, "proj-triage")
        .await
        .expect("skill sources");
    let runner = runner(&github, &stores);

    // A push to main applies the triage registration only.
    let main = runner.run(&push_job("d-main")).await.expect("main push");
    assert!(main.applied);
    assert_eq!(status_of(&main.report, TRIAGE), PlanStatus::Added);
    assert_eq!(status_of(&main.report, REPORTER), PlanStatus::Unregistered);
    assert_eq!(status_of(&main.report, GAMMA), PlanStatus::Unregistered);
    let agents = stores
        .state
        .list_agents("octo/agents")
        .await
        .expect("agents");
    let registered: Vec<_> = agents
        .iter()
        .map(|a| (a.manifest_path.as_str(), a.project_id.as_str()))
        .collect();
    assert_eq!(registered, [(TRIAGE, "proj-triage")]);

    // A push to release applies the reporter registration only; triage is left as it is.
    let mut release_job = push_job("d-release");
    release_job.branch = Some("release".into());
    let release = runner.run(&release_job).await.expect("release push");
    assert!(release.applied);
    assert_eq!(status_of(&release.report, REPORTER), PlanStatus::Added);
    assert_eq!(status_of(&release.report, TRIAGE), PlanStatus::Unregistered);
    let after = stores
        .state
        .list_agents("octo/agents")
        .await
        .expect("agents");
    let registered: Vec<_> = after
        .iter()
        .map(|a| (a.manifest_path.as_str(), a.project_id.as_str(), a.version))
        .collect();
    assert_eq!(
        registered,
        [(REPORTER, "proj-reports", 1), (TRIAGE, "proj-triage", 1)]
    );

    // Gamma is covered by no registration: checked only, and the check run says how to
    // register it, for the ref the repository's registrations follow.
    for outcome in [&main, &release] {
        let uncovered: Vec<_> = outcome
            .report
            .uncovered
            .iter()
            .map(|u| u.manifest.as_str())
            .collect();
        assert_eq!(uncovered, [GAMMA]);
    }
    let summaries: Vec<String> = github
        .check_runs()
        .into_iter()
        .filter_map(|r| r.summary)
        .collect();
    assert_eq!(summaries.len(), 2, "{summaries:#?}");
    for (summary, (git_ref, project)) in summaries
        .iter()
        .zip([("main", "proj-triage"), ("release", "proj-reports")])
    {
        let command = format!(
            "`astrolift register-repo octo/agents --project-id ID --ref {git_ref} \
             --manifest-path agents/gamma/astrolift.toml`"
        );
        assert!(summary.contains(&command), "{summary}");
        assert!(
            summary.contains(&format!("to project `{project}`")),
            "{summary}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_registration_applies_its_own_agents_on_embedded_stores() {
    let (stores, _dir) = embedded_stores().await;
    each_registration_applies_its_own_agents(stores).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn each_registration_applies_its_own_agents_on_dynamodb_and_s3() {
    let Some(stores) =
        aws_stores("each_registration_applies_its_own_agents_on_dynamodb_and_s3").await
    else {
        return;
    };
    each_registration_applies_its_own_agents(stores).await;
}
