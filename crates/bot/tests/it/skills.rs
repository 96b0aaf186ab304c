//! Catalogue and organization skills resolved at sync against the fake GitHub
//! (docs/reference.md §5.1, "Remote skills"): each skill repository is read as the
//! installation that covers it, once per sync however many agents use it; a resolved
//! skill's files are in the agent's archive and its commit in the snapshot; a moved ref
//! changes the snapshot; every failure is one positioned error on its reference.
//!
//! The agent repository is `fixtures/skills/`; the skill repositories and the repository of
//! failing references are the manifest crate's (`crates/manifest/tests/remote_skills/`).

use std::io::Read;
use std::path::PathBuf;

use astrolift_fake_github::{FakeGitHub, Fault};
use astrolift_store::blob::BlobKey;
use astrolift_store::state::{Agent, Catalogue, RepoRegistration, SkillRepo};
use astrolift_sync::PlanStatus::{self, Added, Changed, Failed, Unchanged, Unregistered};
use astrolift_sync::{Report, Stores};
use serde_json::Value;

use crate::support::{
    INSTALLATION, MAIN_SHA, embedded_stores, push_job, register_repository, runner,
};

pub(crate) const RUNBOOKS_SHA: &str = "1111111111111111111111111111111111111111";
pub(crate) const MOVED_SHA: &str = "3333333333333333333333333333333333333333";
pub(crate) const CATALOGUE_SHA: &str = "2222222222222222222222222222222222222222";
/// The installations that cover the skill repositories (not the agent repository's).
pub(crate) const RUNBOOKS_INSTALLATION: u64 = 32;
pub(crate) const CATALOGUE_INSTALLATION: u64 = 33;

pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/fixtures")
        .join(name)
}

fn remote_skills(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../manifest/tests/remote_skills")
        .join(name)
}

/// The agent repository `agents` and both skill repositories on the fake GitHub; the
/// agent repository registered (project `proj-bot`), with the aliases `steadymd` (the
/// runbooks) and `ghost` (a repository the App is not installed on), another project's
/// alias `other`, and, with `catalogue`, the catalogue.
pub(crate) async fn skill_world(stores: &Stores, agents: PathBuf, catalogue: bool) -> FakeGitHub {
    let github = skill_sources(stores, agents, catalogue).await;
    register_repository(stores).await;
    github
}

/// [`skill_world`] without the agent repository's registration.
async fn skill_sources(stores: &Stores, agents: PathBuf, catalogue: bool) -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", MAIN_SHA, agents);
    let runbooks = remote_skills("runbooks");
    github.add_repo("steadymd", "runbooks", "main", RUNBOOKS_SHA, runbooks);
    github.install_repo(RUNBOOKS_INSTALLATION, "steadymd", "runbooks");
    let skills = remote_skills("catalogue");
    github.add_repo("astrolift", "catalogue", "main", CATALOGUE_SHA, skills);
    github.install_repo(CATALOGUE_INSTALLATION, "astrolift", "catalogue");
    let skills = stores.state.skills();
    for (project, alias, repository) in [
        ("proj-bot", "steadymd", "steadymd/runbooks"),
        ("proj-bot", "ghost", "ghost/skills"),
        ("proj-other", "other", "steadymd/runbooks"),
    ] {
        let repo = SkillRepo {
            project_id: project.into(),
            alias: alias.into(),
            repository: repository.into(),
            updated_at: 1,
        };
        skills.put_skill_repo(&repo).await.expect("skill repo");
    }
    if catalogue {
        let catalogue = Catalogue {
            repository: "astrolift/catalogue".into(),
            registered_ref: "main".into(),
            updated_at: 1,
        };
        skills.put_catalogue(&catalogue).await.expect("catalogue");
    }
    github
}

async fn push(github: &FakeGitHub, stores: &Stores, delivery: &str) -> Report {
    let outcome = runner(github, stores)
        .run(&push_job(delivery))
        .await
        .expect("the sync runs");
    assert!(outcome.applied, "the push applies");
    outcome.report
}

/// The plan is `expected`: (agent, status) in plan order.
fn assert_statuses(report: &Report, expected: &[(&str, PlanStatus)]) {
    let plan = report.plan.iter();
    let found: Vec<(&str, PlanStatus)> = plan.map(|e| (e.agent.as_str(), e.status)).collect();
    assert_eq!(found, expected, "{:#?}", report.diagnostics);
}

async fn agent(stores: &Stores, name: &str) -> Agent {
    let agents = stores
        .state
        .list_agents("octo/agents")
        .await
        .expect("agents");
    let found = agents.into_iter().find(|a| a.name == name);
    found.expect("the agent is registered")
}

/// The paths in the agent's stored archive.
async fn archive_paths(stores: &Stores, agent: &Agent) -> Vec<String> {
    let hex = agent.payload_digest.trim_start_matches("sha256:");
    let key = BlobKey::package(hex).expect("a package key");
    let bytes = stores.blobs.get(&key).await.expect("the archive is stored");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    let entries = archive.entries().expect("a tar.gz");
    entries
        .map(|entry| {
            let mut entry = entry.expect("an entry");
            let path = entry.path().expect("a path").display().to_string();
            let mut sink = Vec::new();
            entry.read_to_end(&mut sink).expect("its bytes");
            path
        })
        .collect()
}

/// The `skills` of the agent's stored snapshot.
async fn snapshot_skills(stores: &Stores, agent: &Agent) -> Value {
    let key = BlobKey::snapshot(&agent.snapshot_hash).expect("a snapshot key");
    let bytes = stores
        .blobs
        .get(&key)
        .await
        .expect("the snapshot is stored");
    let snapshot: Value = serde_json::from_slice(&bytes).expect("snapshot JSON");
    snapshot["skills"].clone()
}

/// The report's diagnostics on `manifest`, one line each.
fn diagnostics_of(report: &Report, manifest: &str) -> String {
    let on = report.diagnostics.iter().filter(|d| d.path == manifest);
    let lines: Vec<String> = on
        .map(|d| {
            let at = format!("{}:{}-{}", d.span.line, d.span.column, d.span.end_column);
            format!("{at} {:?} [{}] {}", d.severity, d.code, d.message)
        })
        .collect();
    lines.join("\n")
}

#[tokio::test]
async fn an_agent_with_all_three_forms_registers_with_its_skills_packaged_and_pinned() {
    let (stores, _dir) = embedded_stores().await;
    let github = skill_world(&stores, fixture("skills"), true).await;
    let report = push(&github, &stores, "d-skills").await;
    assert_eq!(report.diagnostics, Vec::new(), "{:#?}", report.diagnostics);
    assert_statuses(&report, &[("review", Added), ("triage", Added)]);
    let triage = agent(&stores, "triage").await;
    insta::assert_debug_snapshot!("three_forms_archive", archive_paths(&stores, &triage).await);
    insta::assert_json_snapshot!(
        "three_forms_skills",
        snapshot_skills(&stores, &triage).await
    );
    let review = agent(&stores, "review").await;
    let paths = archive_paths(&stores, &review).await;
    assert!(paths.contains(&"skills/steadymd/runbooks/clinical-triage/SKILL.md".to_owned()));
}

#[tokio::test]
async fn each_skill_repository_is_downloaded_once_per_sync() {
    let (stores, _dir) = embedded_stores().await;
    let github = skill_world(&stores, fixture("skills"), true).await;
    push(&github, &stores, "d-first").await;
    // Two agents use the runbooks; each repository is read once.
    assert_eq!(github.tarball_downloads("steadymd", "runbooks"), 1);
    assert_eq!(github.tarball_downloads("astrolift", "catalogue"), 1);
    let again = push(&github, &stores, "d-again").await;
    // The same skills: the same snapshots.
    assert_statuses(&again, &[("review", Unchanged), ("triage", Unchanged)]);
    assert_eq!(github.tarball_downloads("steadymd", "runbooks"), 2);
    assert_eq!(github.tarball_downloads("astrolift", "catalogue"), 2);
}

#[tokio::test]
async fn a_moved_skill_ref_changes_the_snapshot_with_skill_version_changed_drift() {
    let (stores, _dir) = embedded_stores().await;
    let github = skill_world(&stores, fixture("skills"), true).await;
    push(&github, &stores, "d-first").await;
    let before = agent(&stores, "triage").await;
    // A new commit on the runbooks' main (same files); the agent repository is unchanged.
    github.add_repo(
        "steadymd",
        "runbooks",
        "main",
        MOVED_SHA,
        remote_skills("runbooks"),
    );
    let report = push(&github, &stores, "d-moved").await;
    assert_statuses(&report, &[("review", Changed), ("triage", Changed)]);
    let entry = report.plan.iter().find(|e| e.agent == "triage");
    let drift = &entry.expect("triage is planned").drift;
    let kinds: Vec<&str> = drift.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(kinds, vec!["skill-version-changed"], "{drift:#?}");
    let after = agent(&stores, "triage").await;
    assert_ne!(after.snapshot_hash, before.snapshot_hash);
    // The same files: the archive is the one built before.
    assert_eq!(after.payload_digest, before.payload_digest);
    let skills = snapshot_skills(&stores, &after).await;
    assert_eq!(skills[2]["commit"], MOVED_SHA, "{skills:#}");
}

#[tokio::test]
async fn each_failing_reference_is_one_positioned_error_and_fails_only_its_agent() {
    let (stores, _dir) = embedded_stores().await;
    let github = skill_world(&stores, remote_skills("agents"), true).await;
    let report = push(&github, &stores, "d-bad").await;
    assert_statuses(&report, &[("bad", Failed), ("good", Added)]);
    let bad = diagnostics_of(&report, "agents/bad/astrolift.toml");
    insta::assert_snapshot!("failing_references", bad);
    assert_eq!(diagnostics_of(&report, "agents/good/astrolift.toml"), "");
    // `good` and `bad` both read the runbooks at main: one download.
    assert_eq!(github.tarball_downloads("steadymd", "runbooks"), 1);
}

#[tokio::test]
async fn a_catalogue_skill_without_a_registered_catalogue_is_an_error() {
    let (stores, _dir) = embedded_stores().await;
    let github = skill_world(&stores, fixture("skills"), false).await;
    let report = push(&github, &stores, "d-no-catalogue").await;
    assert_statuses(&report, &[("review", Added), ("triage", Failed)]);
    let triage = diagnostics_of(&report, "agents/triage/astrolift.toml");
    insta::assert_snapshot!("no_catalogue", triage);
    assert_eq!(github.tarball_downloads("astrolift", "catalogue"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skill_repository_github_cannot_serve_fails_the_sync_for_a_retry() {
    let (stores, _dir) = embedded_stores().await;
    let github = skill_world(&stores, fixture("skills"), true).await;
    let down = Fault::server_error(100).on("GET", "/repos/steadymd/runbooks/tarball");
    github.inject(down);
    let error = runner(&github, &stores)
        .run(&push_job("d-skills-down"))
        .await
        .expect_err("the runbooks cannot be read");
    assert!(error.is_retryable(), "a 5xx is worth retrying: {error}");
    assert!(error.to_string().contains("steadymd/runbooks"), "{error}");
    let runs = github.check_runs();
    assert_eq!(runs[0].conclusion.as_deref(), Some("failure"));
    // Never registered without a skill it names.
    let agents = stores
        .state
        .list_agents("octo/agents")
        .await
        .expect("agents");
    assert!(agents.is_empty(), "{agents:#?}");
}

#[tokio::test]
async fn an_uncovered_manifest_has_no_project_so_its_org_skills_are_unresolved() {
    let (stores, _dir) = embedded_stores().await;
    let github = skill_sources(&stores, fixture("skills"), true).await;
    let registration = RepoRegistration {
        repository: "octo/agents".into(),
        installation_id: Some(INSTALLATION),
        project_id: "proj-bot".into(),
        registered_ref: "main".into(),
        manifest_path: Some("agents/review/astrolift.toml".into()),
        updated_at: 1,
        last_sync: None,
        previews: false,
    };
    let put = stores.state.put_registration(&registration).await;
    put.expect("registered");
    let report = push(&github, &stores, "d-uncovered").await;
    assert_statuses(&report, &[("review", Added), ("triage", Unregistered)]);
    // Its catalogue skill resolves (the catalogue is the deployment's); its org skill has
    // no project to resolve through.
    let triage = diagnostics_of(&report, "agents/triage/astrolift.toml");
    insta::assert_snapshot!("uncovered_manifest", triage);
}

#[tokio::test]
async fn skill_repositories_past_the_limit_are_not_fetched_and_fail_their_references() {
    let (stores, _dir) = embedded_stores().await;
    let github = skill_world(&stores, fixture("skills"), true).await;
    let mut runner = runner(&github, &stores);
    // The catalogue comes first (repository order): the runbooks are past the limit.
    runner.limits.skill_repositories = 1;
    let outcome = runner
        .run(&push_job("d-limit"))
        .await
        .expect("the sync runs");
    assert_statuses(&outcome.report, &[("review", Failed), ("triage", Failed)]);
    let review = diagnostics_of(&outcome.report, "agents/review/astrolift.toml");
    insta::assert_snapshot!("over_the_limit", review);
    assert_eq!(github.tarball_downloads("astrolift", "catalogue"), 1);
    assert_eq!(github.tarball_downloads("steadymd", "runbooks"), 0);
}
