//! Dependents follow (docs/reference.md §5.1, "Dependents follow"): a push to a skill
//! source re-syncs, without a push of their own, the registered repositories whose agents
//! name it, within the pushing project (the catalogue: any project), at most
//! `MAX_DEPENDENTS` per push; the skill repository's check run lists them.
//!
//! The agent repository is `fixtures/skills/` (both agents name `steadymd/runbooks@main`,
//! `triage` the catalogue too); the runbooks' new commit is `fixtures/runbooks-moved/`.

use std::sync::Arc;

use astrolift_bot::dependents::{MAX_DEPENDENTS, section};
use astrolift_bot::{JobOutcome, JobTrigger, RecordingJobQueue, SyncJob, SyncRunner};
use astrolift_fake_github::FakeGitHub;
use astrolift_store::blob::BlobKey;
use astrolift_store::state::{
    ChangeSet, LastSync, RepoRegistration, SkillSource, SyncedCommit, SyncedCommitUpdate,
};
use astrolift_sync::PlanStatus::Changed;
use astrolift_sync::Stores;
use serde_json::Value;

use crate::skills::{
    CATALOGUE_INSTALLATION, CATALOGUE_SHA, MOVED_SHA, RUNBOOKS_INSTALLATION, RUNBOOKS_SHA, fixture,
    skill_world,
};
use crate::support::{INSTALLATION, MAIN_SHA, REPO_ID, embedded_stores, push_job, runner};

const RUNBOOKS_ID: u64 = 7001;
const CATALOGUE_ID: u64 = 7002;

/// The agent repository (registered for `proj-bot`, which registered the runbooks as
/// `steadymd`), the runbooks (also registered by `proj-other` as `other`) and the
/// catalogue, on the fake GitHub: the remote-skill tests' world.
async fn world(stores: &Stores) -> FakeGitHub {
    skill_world(stores, fixture("skills"), true).await
}

/// A runner that queues dependents on a recording queue.
fn following(github: &FakeGitHub, stores: &Stores) -> (SyncRunner, Arc<RecordingJobQueue>) {
    let queue = Arc::new(RecordingJobQueue::new());
    let mut runner = runner(github, stores);
    runner.jobs = Some(queue.clone());
    (runner, queue)
}

/// The push of `sha` to `main` of a skill repository.
fn skill_push(repository: &str, id: u64, installation: u64, sha: &str) -> SyncJob {
    SyncJob {
        repository: repository.into(),
        repository_id: id,
        installation_id: installation,
        head_sha: sha.into(),
        delivery_id: format!("d-{repository}-{sha}"),
        ..push_job("unused")
    }
}

/// The push of `sha` to the runbooks' `main`.
fn runbooks_push(sha: &str) -> SyncJob {
    skill_push("steadymd/runbooks", RUNBOOKS_ID, RUNBOOKS_INSTALLATION, sha)
}

async fn snapshot(stores: &Stores, manifest: &str) -> (String, Value) {
    let agents = stores
        .state
        .list_agents("octo/agents")
        .await
        .expect("agents");
    let agent = agents.into_iter().find(|a| a.manifest_path == manifest);
    let agent = agent.expect("registered");
    let key = BlobKey::snapshot(&agent.snapshot_hash).expect("key");
    let bytes = stores.blobs.get(&key).await.expect("stored");
    let json = serde_json::from_slice(&bytes).expect("JSON");
    (agent.snapshot_hash, json)
}

const TRIAGE: &str = "agents/triage/astrolift.toml";

#[tokio::test]
async fn a_push_to_a_skill_repository_re_syncs_its_dependent_without_a_push_of_its_own() {
    let (stores, _dir) = embedded_stores().await;
    let github = world(&stores).await;
    let (runner, queue) = following(&github, &stores);
    let first = runner.run(&push_job("d-agents")).await.expect("synced");
    assert!(first.applied);
    // The sync recorded what the registration follows.
    let registration = stores.state.get_registration("octo/agents").await;
    let last_sync = registration.expect("read").expect("registered").last_sync;
    let source = |repository: &str| SkillSource {
        repository: repository.into(),
        git_ref: "main".into(),
    };
    let expected = LastSync {
        repository_id: REPO_ID,
        skill_sources: vec![source("astrolift/catalogue"), source("steadymd/runbooks")],
    };
    assert_eq!(last_sync, Some(expected));
    assert!(queue.jobs().is_empty(), "an agent push queues no re-syncs");
    let (before, _) = snapshot(&stores, TRIAGE).await;

    // A new commit on the runbooks' main, pushed to the App.
    let moved = fixture("runbooks-moved");
    github.add_repo("steadymd", "runbooks", "main", MOVED_SHA, moved);
    let push = runbooks_push(MOVED_SHA);
    let pushed = runner.run(&push).await.expect("the skill push is checked");
    assert!(!pushed.applied, "the skill repository registers nothing");
    let jobs = queue.jobs();
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    let resync = &jobs[0];
    assert_eq!(resync.trigger, JobTrigger::SkillChanged);
    assert_eq!(
        (resync.repository.as_str(), resync.head_sha.as_str()),
        ("octo/agents", MAIN_SHA)
    );
    assert_eq!(resync.installation_id, INSTALLATION);
    // The registered ref's lane: ordered with its pushes.
    assert_eq!(resync.message_group_id(), push_job("x").message_group_id());
    // The skill repository's check run lists the dependent.
    let runs = github.check_runs();
    let run = runs.iter().find(|r| r.repo == "runbooks").expect("a run");
    assert_eq!(run.head_sha, MOVED_SHA);
    insta::assert_snapshot!(
        "skill_push_summary",
        run.summary.clone().unwrap_or_default()
    );

    // The re-sync, as the worker runs it off the queue; octo/agents was never pushed again.
    let downloads = github.tarball_downloads("octo", "agents");
    let JobOutcome { report, .. } = runner.run(resync).await.expect("re-synced");
    assert!(report.applied);
    assert_eq!(github.tarball_downloads("octo", "agents"), downloads + 1);
    let statuses: Vec<_> = report
        .plan
        .iter()
        .map(|e| (e.agent.as_str(), e.status))
        .collect();
    assert_eq!(statuses, vec![("review", Changed), ("triage", Changed)]);
    let entry = report
        .plan
        .iter()
        .find(|e| e.manifest == TRIAGE)
        .expect("triage");
    let kinds: Vec<&str> = entry.drift.iter().map(|d| d.kind.as_str()).collect();
    // The skill's files changed too, so its package did.
    assert_eq!(
        kinds,
        vec!["skill-version-changed", "payload-changed"],
        "{:#?}",
        entry.drift
    );
    let (after, json) = snapshot(&stores, TRIAGE).await;
    assert_ne!(after, before, "a new snapshot");
    assert_eq!(json["skills"][2]["commit"], MOVED_SHA, "{json:#}");
    assert_eq!(queue.jobs().len(), 1, "a re-sync queues no re-syncs");
    let runs = github.check_runs();
    let run = runs
        .iter()
        .rev()
        .find(|r| r.repo == "agents")
        .expect("a run");
    let summary = run.summary.clone().unwrap_or_default();
    assert!(
        summary.starts_with("Re-synced because the skill source `steadymd/runbooks` (`main`)"),
        "{summary}"
    );
}

/// Registers `repository` (project `project`, ref `main`) as synced at `MAIN_SHA`, its last
/// sync naming `sources` (each at `main`): what an applied sync leaves.
async fn synced_dependent(stores: &Stores, repository: &str, project: &str, sources: &[&str]) {
    let registration = RepoRegistration {
        repository: repository.into(),
        installation_id: Some(INSTALLATION),
        project_id: project.into(),
        registered_ref: "main".into(),
        manifest_path: None,
        updated_at: 1,
        last_sync: None,
        previews: false,
    };
    let state = stores.state.as_ref();
    state
        .put_registration(&registration)
        .await
        .expect("registered");
    let last_sync = LastSync {
        repository_id: 100,
        skill_sources: sources
            .iter()
            .map(|r| SkillSource {
                repository: (*r).into(),
                git_ref: "main".into(),
            })
            .collect(),
    };
    let recorded = state.record_last_sync(repository, None, &last_sync).await;
    assert!(recorded.expect("recorded"));
    let mut changes = ChangeSet::new(repository);
    changes.synced = Some(SyncedCommitUpdate {
        commit: SyncedCommit {
            repository: repository.into(),
            ref_name: "main".into(),
            commit: MAIN_SHA.into(),
            commit_time: 1,
            synced_at: 1,
        },
        expected_previous: None,
    });
    state.apply(changes).await.expect("synced commit");
}

fn queued(queue: &RecordingJobQueue) -> Vec<String> {
    queue.jobs().into_iter().map(|j| j.repository).collect()
}

#[tokio::test]
async fn a_dependent_of_a_project_that_did_not_register_the_skill_repository_is_not_re_synced() {
    let (stores, _dir) = embedded_stores().await;
    let github = world(&stores).await;
    // `proj-other` registered the runbooks (alias `other`); `proj-third` did not, though its
    // last sync names them (say its alias was removed since).
    synced_dependent(&stores, "octo/other", "proj-other", &["steadymd/runbooks"]).await;
    synced_dependent(&stores, "octo/third", "proj-third", &["steadymd/runbooks"]).await;
    synced_dependent(
        &stores,
        "octo/unrelated",
        "proj-other",
        &["astrolift/catalogue"],
    )
    .await;
    let (runner, queue) = following(&github, &stores);
    let push = runbooks_push(RUNBOOKS_SHA);
    let outcome = runner.run(&push).await.expect("checked");
    assert_eq!(queued(&queue), vec!["octo/other"]);
    assert_eq!(outcome.followed.dependents.len(), 1);
    // The catalogue belongs to the deployment: its dependents are any project's.
    let push = skill_push(
        "astrolift/catalogue",
        CATALOGUE_ID,
        CATALOGUE_INSTALLATION,
        CATALOGUE_SHA,
    );
    runner.run(&push).await.expect("checked");
    assert_eq!(queued(&queue), vec!["octo/other", "octo/unrelated"]);
    // A branch that is not the catalogue's registered ref is no skill source.
    let dev = SyncJob {
        branch: Some("dev".into()),
        ..push.clone()
    };
    let outcome = runner.run(&dev).await.expect("checked");
    assert!(!outcome.followed.is_source);
    assert_eq!(queue.jobs().len(), 2);
}

#[tokio::test]
async fn at_most_max_dependents_are_re_synced_per_push() {
    let (stores, _dir) = embedded_stores().await;
    let github = world(&stores).await;
    for index in 0..MAX_DEPENDENTS {
        let repository = format!("octo/dep-{index:02}");
        synced_dependent(&stores, &repository, "proj-bot", &["steadymd/runbooks"]).await;
    }
    let (runner, queue) = following(&github, &stores);
    let push = runbooks_push(RUNBOOKS_SHA);
    // At the limit: every dependent is queued.
    let outcome = runner.run(&push).await.expect("checked");
    assert_eq!(queue.jobs().len(), MAX_DEPENDENTS);
    assert!(outcome.followed.over_limit.is_empty());
    // One past it: the last (in repository order) is named, not queued.
    synced_dependent(&stores, "octo/dep-zz", "proj-bot", &["steadymd/runbooks"]).await;
    let (runner, queue) = following(&github, &stores);
    let outcome = runner.run(&push).await.expect("checked");
    assert_eq!(queue.jobs().len(), MAX_DEPENDENTS);
    let over = &outcome.followed.over_limit;
    assert_eq!(over, &vec![("octo/dep-zz".to_owned(), "main".to_owned())]);
    let text = section(&outcome.followed).expect("a skill source");
    insta::assert_snapshot!(
        "over_the_limit_tail",
        text.lines().last().unwrap_or_default()
    );
}

/// A dependent registered without an installation (the seed's `register-repo` has no
/// installation flag) is re-synced as the installation GitHub says covers it, asked once
/// per ten minutes; one the App is not installed on is listed as not re-synced, and why.
#[tokio::test]
async fn a_registration_without_an_installation_is_re_synced_as_the_one_github_names() {
    let (stores, _dir) = embedded_stores().await;
    let github = world(&stores).await;
    for repository in ["octo/installed", "octo/elsewhere"] {
        synced_dependent(&stores, repository, "proj-other", &["steadymd/runbooks"]).await;
        let state = stores.state.as_ref();
        let registered = state.get_registration(repository).await.expect("read");
        let mut registration = registered.expect("registered");
        registration.installation_id = None;
        state.put_registration(&registration).await.expect("put");
    }
    github.install_repo(INSTALLATION, "octo", "installed");
    let (runner, queue) = following(&github, &stores);

    let outcome = runner
        .run(&runbooks_push(RUNBOOKS_SHA))
        .await
        .expect("checked");
    let jobs = queue.jobs();
    assert_eq!(queued(&queue), vec!["octo/installed"]);
    assert_eq!(jobs[0].installation_id, INSTALLATION);
    let skipped: Vec<_> = outcome
        .followed
        .dependents
        .iter()
        .filter_map(|d| d.skipped.map(|why| (d.repository.as_str(), why)))
        .collect();
    assert_eq!(
        skipped,
        vec![("octo/elsewhere", astrolift_bot::dependents::NOT_INSTALLED)]
    );

    let again = SyncJob {
        delivery_id: "d-runbooks-again".into(),
        ..runbooks_push(RUNBOOKS_SHA)
    };
    runner.run(&again).await.expect("checked");
    assert_eq!(queued(&queue), vec!["octo/installed", "octo/installed"]);
    let asked = |repository: &str| {
        github
            .requests_to("GET", &format!("/repos/{repository}/installation"))
            .len()
    };
    assert_eq!(asked("octo/installed"), 1, "the installation found is kept");
    assert_eq!(asked("octo/elsewhere"), 2, "no installation is asked again");
}
