//! The App never reads a `file:` skill source (docs/reference.md §5.1, "Remote skills"): a
//! project alias and a catalogue registered as existing local directories are, in the
//! runner's sync (what the functions and `serve` run), the warning `skill/unresolved` on
//! each reference, the sync applies, and no dependency on them is recorded.

use std::path::PathBuf;

use astrolift_fake_github::FakeGitHub;
use astrolift_store::state::{Catalogue, SkillRepo};
use astrolift_sync::PlanStatus::Added;
use astrolift_sync::skills::LOCAL_ONLY;

use crate::skills::fixture;
use crate::support::{
    INSTALLATION, MAIN_SHA, embedded_stores, push_job, register_repository, runner,
};

/// A directory that exists and holds the skills the references name.
fn local_source(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../manifest/tests/remote_skills")
        .join(name);
    let dir = dir.canonicalize().expect("the fixture exists");
    format!("file:{}", dir.display())
}

#[tokio::test]
async fn the_runner_reports_file_sources_unresolved_and_reads_nothing_from_disk() {
    let (stores, _dir) = embedded_stores().await;
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", MAIN_SHA, fixture("skills"));
    register_repository(&stores).await;
    let skills = stores.state.skills();
    let repo = SkillRepo {
        project_id: "proj-bot".into(),
        alias: "steadymd".into(),
        repository: local_source("runbooks"),
        updated_at: 1,
    };
    skills.put_skill_repo(&repo).await.expect("skill repo");
    let catalogue = Catalogue {
        repository: local_source("catalogue"),
        registered_ref: "main".into(),
        updated_at: 1,
    };
    skills.put_catalogue(&catalogue).await.expect("catalogue");

    let outcome = runner(&github, &stores)
        .run(&push_job("d-local"))
        .await
        .expect("the sync runs");
    assert!(outcome.applied, "the push applies");
    let report = outcome.report;
    let statuses: Vec<_> = report.plan.iter().map(|e| e.status).collect();
    assert_eq!(statuses, [Added, Added], "{:#?}", report.diagnostics);
    let remote: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|d| d.code.starts_with("skill/"))
        .collect();
    // `review`'s organization skill; `triage`'s catalogue and organization skills.
    assert_eq!(remote.len(), 3, "{remote:#?}");
    for diagnostic in remote {
        assert_eq!(diagnostic.code, "skill/unresolved", "{diagnostic:?}");
        assert!(diagnostic.message.contains(LOCAL_ONLY), "{diagnostic:?}");
    }
    // Nothing to follow: no push moves a directory.
    let registrations = stores
        .state
        .list_repository_registrations("octo/agents")
        .await
        .expect("registrations");
    for registration in registrations {
        let named = registration.last_sync.map(|l| l.skill_sources);
        assert!(named.unwrap_or_default().is_empty(), "nothing is followed");
    }
}
