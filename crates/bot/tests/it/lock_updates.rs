//! Update pull requests of locked dependents (docs/reference.md §5.7, "Locked skills"): a
//! push to a skill source re-syncs a dependent whose `astrolift.lock` pins references into
//! it; the agents keep their pins, and the moved lock is committed by the App on
//! `astrolift/lock-update` and proposed on one pull request, updated in place while open.
//!
//! The agent repository is a copy of `fixtures/skills/` with the lock computed in the test
//! (through `astrolift_sync::locking::relock`, as `astrolift lock` writes it), so its bytes
//! and tree hashes are exact; the runbooks' new commit is `fixtures/runbooks-moved/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use astrolift_bot::lock_update::{APP_TRAILER, LOCK_BRANCH, LOCK_PR_TITLE};
use astrolift_bot::reconcile::{NoProgress, ReconcileOptions, RefKind, RefStatus, reconcile};
use astrolift_bot::skills::skill_fetcher;
use astrolift_bot::{JobOutcome, JobTrigger, RecordingJobQueue, SyncJob, SyncRunner};
use astrolift_fake_github::{FakeGitHub, FakePullRequest};
use astrolift_forge::github::{FileMode, GitHubApp, RepoPath, TreeEntry};
use astrolift_manifest::lock::{LOCK_FILE, Lock, parse_lock};
use astrolift_manifest::{DirTree, Limits, ValidateOptions, validate_repository};
use astrolift_store::blob::BlobKey;
use astrolift_sync::PlanStatus::Unchanged;
use astrolift_sync::Stores;
use astrolift_sync::locking::{RelockSources, Update, relock};
use astrolift_sync::skills::NO_PROJECT;
use serde_json::Value;
use tempfile::TempDir;

use crate::skills::{MOVED_SHA, RUNBOOKS_INSTALLATION, RUNBOOKS_SHA, fixture, skill_world};
use crate::support::{INSTALLATION, MAIN_SHA, embedded_stores, push_job, runner};

/// The runbooks' `main` with a second skill, `intake`, before `MOVED_SHA`.
const INTAKE_SHA: &str = "5555555555555555555555555555555555555555";
/// A third commit of the runbooks' `main`.
const THIRD_SHA: &str = "4444444444444444444444444444444444444444";
const RUNBOOKS_ID: u64 = 7001;
/// The organization reference both fixture agents make.
const TRIAGE_REF: &str = "steadymd/runbooks/clinical-triage@main";
/// The catalogue reference of `triage`: its source is not pushed, so it never moves.
const CATALOGUE_REF: &str = "pr-review@1.2.0";
const INTAKE_REF: &str = "steadymd/runbooks/intake@main";
const TRIAGE: &str = "agents/triage/astrolift.toml";

fn remote_skills(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../manifest/tests/remote_skills")
        .join(name)
}

/// Copies the directory `from` to `to` (file modes kept).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory");
    for entry in std::fs::read_dir(from).expect("a fixture") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copied");
        }
    }
}

/// A temporary copy of `from`.
fn copy_of(from: &Path) -> TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(from, dir.path());
    dir
}

/// The remote-skill tests' world (`skill_world`: `octo/agents` registered for `proj-bot`,
/// whose alias `steadymd` is the runbooks), the runbooks' `main` moved to `runbooks` when
/// given; `octo/agents` synced once at `MAIN_SHA` (with the lock, when `locked`) by a
/// runner that queues dependents.
struct World {
    stores: Stores,
    github: FakeGitHub,
    runner: SyncRunner,
    queue: Arc<RecordingJobQueue>,
    /// The agent repository's lock as registered, if any.
    lock: Option<String>,
    _dirs: Vec<TempDir>,
}

async fn world_of(agents: &Path, runbooks: Option<(&str, &Path)>, locked: bool) -> World {
    let (stores, store_dir) = embedded_stores().await;
    let copy = copy_of(agents);
    // Read when asked: the lock written below is part of `MAIN_SHA`.
    let github = skill_world(&stores, copy.path().to_path_buf(), true).await;
    if let Some((sha, runbooks)) = runbooks {
        github.add_repo("steadymd", "runbooks", "main", sha, runbooks);
    }
    let queue = Arc::new(RecordingJobQueue::new());
    let mut runner = runner(&github, &stores);
    runner.jobs = Some(queue.clone());
    let lock = if locked {
        let text = lock_text(&runner.github, &stores, agents).await;
        std::fs::write(copy.path().join(LOCK_FILE), &text).expect("the lock");
        Some(text)
    } else {
        None
    };
    let first = runner.run(&push_job("d-agents")).await.expect("synced");
    assert!(first.applied, "{:#?}", first.report.diagnostics);
    let errors = first.report.diagnostics.iter().filter(|d| d.is_error());
    assert_eq!(errors.count(), 0, "{:#?}", first.report.diagnostics);
    World {
        stores,
        github,
        runner,
        queue,
        lock,
        _dirs: vec![store_dir, copy],
    }
}

/// The world of `fixtures/skills/` and the manifest crate's runbooks.
async fn world(locked: bool) -> World {
    world_of(&fixture("skills"), None, locked).await
}

/// The lock `astrolift lock` writes for the agent repository `dir` (any lock of its own
/// ignored) against the skill sources as they are now on the fake GitHub.
async fn lock_text(github: &Arc<GitHubApp>, stores: &Stores, dir: &Path) -> String {
    let limits = Limits::DEFAULT;
    let tree = DirTree::open(dir, limits.tarball_files).expect("the fixture");
    let options = ValidateOptions {
        limits,
        config_paths: Vec::new(),
    };
    let validation = validate_repository(&tree, &options);
    let agents: Vec<_> = validation
        .agents
        .iter()
        .map(|agent| (agent, Some("proj-bot".to_owned())))
        .collect();
    let fetcher = skill_fetcher(Some(github.clone()), limits, false);
    let sources = RelockSources {
        state: stores.state.skills(),
        fetcher: &fetcher,
        limits: &limits,
        no_project: NO_PROJECT,
    };
    let relocked = relock(&agents, None, &Update::Missing, &sources).await;
    let relocked = relocked.expect("relocked");
    assert!(!relocked.is_blocked(), "{:#?}", relocked.diagnostics);
    relocked.text()
}

fn parsed(text: &str) -> Lock {
    let (lock, diagnostics) = parse_lock(text);
    assert!(diagnostics.is_empty(), "{diagnostics:#?}");
    lock
}

/// `commit` and `tree_hash` of `reference` in `lock`.
fn pin(lock: &Lock, reference: &str) -> (Option<String>, String) {
    let entry = lock.entry(reference).expect("pinned");
    (entry.commit.clone(), entry.tree_hash.clone())
}

/// The runbooks' `main` moves to `sha` (`dir`), pushed to the App: the dependent's queued
/// re-sync.
async fn move_runbooks(world: &World, sha: &str, dir: &Path) -> SyncJob {
    world
        .github
        .add_repo("steadymd", "runbooks", "main", sha, dir);
    let push = SyncJob {
        repository: "steadymd/runbooks".into(),
        repository_id: RUNBOOKS_ID,
        installation_id: RUNBOOKS_INSTALLATION,
        head_sha: sha.into(),
        delivery_id: format!("d-runbooks-{sha}"),
        ..push_job("unused")
    };
    world.runner.run(&push).await.expect("the skill push");
    let jobs = world.queue.jobs();
    let job = jobs.last().expect("a queued re-sync").clone();
    assert_eq!(job.trigger, JobTrigger::SkillChanged);
    assert_eq!(job.repository, "octo/agents");
    job
}

async fn resync(world: &World, job: &SyncJob) -> JobOutcome {
    world.runner.run(job).await.expect("the re-sync succeeds")
}

/// The summary of the agent repository's last check run.
fn last_summary(github: &FakeGitHub) -> String {
    let runs = github.check_runs();
    let run = runs.iter().rev().find(|r| r.repo == "agents");
    run.expect("a run").summary.clone().unwrap_or_default()
}

/// The agent repository's last check run, which says there is no update pull request:
/// its summary. Nothing was proposed: no branch of the App's, no pull request.
fn not_proposed(github: &FakeGitHub) -> String {
    assert!(github.pull_requests("octo", "agents").is_empty());
    let summary = last_summary(github);
    let section = "**Locked skills:** no update pull request";
    assert!(summary.contains(section), "{summary}");
    summary
}

fn open_pulls(github: &FakeGitHub) -> Vec<(u64, FakePullRequest)> {
    let pulls = github.pull_requests("octo", "agents");
    pulls
        .into_iter()
        .filter(|(_, p)| p.state == "open")
        .collect()
}

/// The lock committed at `sha` of `octo/agents`.
fn lock_at(github: &FakeGitHub, sha: &str) -> String {
    let commit = github.commit("octo", "agents", sha).expect("a commit");
    let bytes = commit.files.get(LOCK_FILE).expect("a lock").clone();
    String::from_utf8(bytes).expect("UTF-8")
}

/// The pull request body's table row of `reference`, as its cells.
fn row(body: &str, reference: &str) -> Vec<String> {
    let line = body
        .lines()
        .find(|line| line.starts_with("| ") && line.contains(&format!("`{reference}`")))
        .unwrap_or_else(|| panic!("no row of {reference} in:\n{body}"));
    let cells = line.trim_matches('|').split('|');
    cells.map(|cell| cell.trim().to_owned()).collect()
}

/// The commit the triage agent's snapshot pins its organization skill to.
async fn triage_pin(stores: &Stores) -> Value {
    let agents = stores.state.list_agents("octo/agents").await;
    let agents = agents.expect("agents");
    let agent = agents.into_iter().find(|a| a.manifest_path == TRIAGE);
    let agent = agent.expect("registered");
    let key = BlobKey::snapshot(&agent.snapshot_hash).expect("key");
    let bytes = stores.blobs.get(&key).await.expect("stored");
    let json: Value = serde_json::from_slice(&bytes).expect("JSON");
    let skills = json["skills"].as_array().cloned().unwrap_or_default();
    let org = skills.into_iter().find(|s| s["kind"] == "org");
    org.expect("the organization skill")["commit"].clone()
}

/// The first update of a locked dependent: the branch, its commit and the pull request.
#[tokio::test]
async fn a_moved_source_opens_one_update_pull_request_and_leaves_the_agents_pinned() {
    let world = world(true).await;
    let registered = world.lock.clone().expect("locked");
    let job = move_runbooks(&world, MOVED_SHA, &fixture("runbooks-moved")).await;
    let outcome = resync(&world, &job).await;
    // The agents keep their pins: nothing changes until the pull request is merged.
    let statuses: Vec<_> = outcome.report.plan.iter().map(|e| e.status).collect();
    assert_eq!(
        statuses,
        vec![Unchanged, Unchanged],
        "{:#?}",
        outcome.report.plan
    );
    assert_eq!(triage_pin(&world.stores).await, RUNBOOKS_SHA);

    let head = world.github.branch_head("octo", "agents", LOCK_BRANCH);
    let head = head.expect("the branch");
    let commit = world
        .github
        .commit("octo", "agents", &head)
        .expect("its commit");
    assert_eq!(commit.parents, vec![MAIN_SHA.to_owned()]);
    assert!(commit.message.contains(APP_TRAILER), "{}", commit.message);
    // The registered commit's files, the lock rewritten as `astrolift lock` writes it now.
    let base = world
        .github
        .commit("octo", "agents", MAIN_SHA)
        .expect("base");
    let expected = lock_text(&world.runner.github, &world.stores, &fixture("skills")).await;
    let mut files = base.files.clone();
    files.insert(LOCK_FILE.to_owned(), expected.clone().into_bytes());
    assert_eq!(commit.files, files);
    let (old, new) = (parsed(&registered), parsed(&expected));
    let (moved_commit, moved_hash) = pin(&new, TRIAGE_REF);
    assert_eq!(moved_commit.as_deref(), Some(MOVED_SHA));
    assert_ne!(moved_hash, pin(&old, TRIAGE_REF).1, "a new tree hash");
    assert_eq!(pin(&new, CATALOGUE_REF), pin(&old, CATALOGUE_REF));

    let pulls = open_pulls(&world.github);
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    let (number, pull) = &pulls[0];
    assert_eq!(pull.title.as_deref(), Some(LOCK_PR_TITLE));
    assert_eq!(
        (pull.base_ref.as_str(), pull.head_ref.as_str()),
        ("main", LOCK_BRANCH)
    );
    assert_eq!(pull.head_sha, head);
    let body = pull.body.clone().unwrap_or_default();
    let cells = row(&body, TRIAGE_REF);
    assert_eq!(cells.len(), 4, "{body}");
    assert!(cells[1].contains(&RUNBOOKS_SHA[..12]), "{body}");
    assert!(cells[2].contains(&MOVED_SHA[..12]), "{body}");
    // NOTES.txt and scripts/triage.sh removed, SKILL.md changed.
    assert_eq!(cells[3], "3", "{body}");
    assert!(!body.contains(CATALOGUE_REF), "{body}");
    let summary = last_summary(&world.github);
    let opened = format!("**Locked skills:** opened [#{number}](");
    assert!(summary.contains(&opened), "{summary}");
}

/// A redelivered re-sync finds its lock on the branch already: nothing is written.
#[tokio::test]
async fn the_same_re_sync_twice_writes_one_commit_and_one_pull_request() {
    let world = world(true).await;
    let job = move_runbooks(&world, MOVED_SHA, &fixture("runbooks-moved")).await;
    resync(&world, &job).await;
    let head = world.github.branch_head("octo", "agents", LOCK_BRANCH);
    let commits = world
        .github
        .requests_to("POST", "/repos/octo/agents/git/commits");
    assert_eq!(commits.len(), 1);

    let again = SyncJob {
        delivery_id: format!("{}-again", job.delivery_id),
        ..job.clone()
    };
    resync(&world, &job).await;
    resync(&world, &again).await;
    assert_eq!(
        world.github.branch_head("octo", "agents", LOCK_BRANCH),
        head
    );
    let commits = world
        .github
        .requests_to("POST", "/repos/octo/agents/git/commits");
    assert_eq!(commits.len(), 1, "no second commit");
    assert_eq!(world.github.pull_requests("octo", "agents").len(), 1);
    let summary = last_summary(&world.github);
    assert!(!summary.contains("opened ["), "{summary}");
}

/// A second move while the pull request is open force-moves the branch over the registered
/// commit again and edits the same pull request.
#[tokio::test]
async fn a_second_move_updates_the_open_pull_request_in_place() {
    let world = world(true).await;
    let job = move_runbooks(&world, MOVED_SHA, &fixture("runbooks-moved")).await;
    resync(&world, &job).await;
    let first = world.github.branch_head("octo", "agents", LOCK_BRANCH);
    let first = first.expect("the branch");
    let (number, _) = open_pulls(&world.github)[0].clone();

    let third = copy_of(&fixture("runbooks-moved"));
    let skill = third.path().join("runbooks/clinical-triage/SKILL.md");
    let mut text = std::fs::read_to_string(&skill).expect("SKILL.md");
    text.push_str("Write the handover note before the shift ends.\n");
    std::fs::write(&skill, text).expect("changed");
    let job = move_runbooks(&world, THIRD_SHA, third.path()).await;
    resync(&world, &job).await;

    let head = world.github.branch_head("octo", "agents", LOCK_BRANCH);
    let head = head.expect("the branch");
    assert_ne!(head, first, "the branch moved");
    let commit = world
        .github
        .commit("octo", "agents", &head)
        .expect("its commit");
    assert_eq!(
        commit.parents,
        vec![MAIN_SHA.to_owned()],
        "not over the first"
    );
    let lock = parsed(&lock_at(&world.github, &head));
    assert_eq!(pin(&lock, TRIAGE_REF).0.as_deref(), Some(THIRD_SHA));
    let pulls = open_pulls(&world.github);
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    let (again, pull) = &pulls[0];
    assert_eq!(*again, number, "the same pull request");
    assert_eq!(pull.head_sha, head);
    let body = pull.body.clone().unwrap_or_default();
    let cells = row(&body, TRIAGE_REF);
    assert!(cells[1].contains(&RUNBOOKS_SHA[..12]), "{body}");
    assert!(cells[2].contains(&THIRD_SHA[..12]), "{body}");
    assert!(!body.contains(&MOVED_SHA[..12]), "{body}");
    let summary = last_summary(&world.github);
    let updated = format!("**Locked skills:** updated [#{number}](");
    assert!(summary.contains(&updated), "{summary}");
}

/// Two references into the pushed source move in one commit and one pull request; the
/// catalogue reference, whose source was not pushed, keeps its pin.
#[tokio::test]
async fn two_moved_references_share_one_commit_and_one_pull_request() {
    let intake = "---\nname: intake\ndescription: Take a clinical ticket in.\n---\n";
    let runbooks = copy_of(&remote_skills("runbooks"));
    let dir = runbooks.path().join("runbooks/intake");
    std::fs::create_dir_all(&dir).expect("a skill");
    std::fs::write(dir.join("SKILL.md"), format!("{intake}Read it once.\n")).expect("written");
    let moved = copy_of(&fixture("runbooks-moved"));
    let dir = moved.path().join("runbooks/intake");
    std::fs::create_dir_all(&dir).expect("a skill");
    let text = format!("{intake}Read it twice.\n");
    std::fs::write(dir.join("SKILL.md"), text).expect("written");
    // `review` uses the new skill instead.
    let agents = copy_of(&fixture("skills"));
    let review = agents.path().join("agents/review/astrolift.toml");
    let manifest = std::fs::read_to_string(&review).expect("a manifest");
    let manifest = manifest.replace(TRIAGE_REF, INTAKE_REF);
    std::fs::write(&review, manifest).expect("written");

    let runbooks = Some((INTAKE_SHA, runbooks.path()));
    let world = world_of(agents.path(), runbooks, true).await;
    let registered = parsed(world.lock.as_deref().expect("locked"));
    assert_eq!(registered.entries.len(), 3, "{registered:#?}");
    let job = move_runbooks(&world, MOVED_SHA, moved.path()).await;
    resync(&world, &job).await;

    let commits = world
        .github
        .requests_to("POST", "/repos/octo/agents/git/commits");
    assert_eq!(commits.len(), 1, "one commit");
    let head = world.github.branch_head("octo", "agents", LOCK_BRANCH);
    let lock = parsed(&lock_at(&world.github, &head.expect("the branch")));
    for reference in [TRIAGE_REF, INTAKE_REF] {
        let (commit, hash) = pin(&lock, reference);
        assert_eq!(commit.as_deref(), Some(MOVED_SHA), "{reference}");
        assert_ne!(hash, pin(&registered, reference).1, "{reference}");
    }
    assert_eq!(pin(&lock, CATALOGUE_REF), pin(&registered, CATALOGUE_REF));
    let pulls = open_pulls(&world.github);
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    let body = pulls[0].1.body.clone().unwrap_or_default();
    assert_eq!(row(&body, INTAKE_REF)[3], "1", "{body}");
    assert!(
        row(&body, TRIAGE_REF)[2].contains(&MOVED_SHA[..12]),
        "{body}"
    );
    assert!(!body.contains(CATALOGUE_REF), "{body}");
}

/// Without a lock the re-sync moves the agents, as before: no branch, no pull request.
#[tokio::test]
async fn an_unlocked_dependent_is_re_synced_to_the_moved_source_without_a_pull_request() {
    let world = world(false).await;
    assert_eq!(triage_pin(&world.stores).await, RUNBOOKS_SHA);
    let job = move_runbooks(&world, MOVED_SHA, &fixture("runbooks-moved")).await;
    let outcome = resync(&world, &job).await;
    assert!(outcome.report.applied);
    assert_eq!(triage_pin(&world.stores).await, MOVED_SHA);
    assert_eq!(
        world.github.branch_head("octo", "agents", LOCK_BRANCH),
        None
    );
    assert!(world.github.pull_requests("octo", "agents").is_empty());
    assert!(!last_summary(&world.github).contains("**Locked skills:**"));
}

/// An installation that has not granted `contents: write`: the re-sync succeeds and says
/// why there is no pull request.
#[tokio::test]
async fn without_contents_write_the_check_run_says_why_there_is_no_pull_request() {
    let world = world(true).await;
    world.github.deny_contents_write("octo", "agents");
    let job = move_runbooks(&world, MOVED_SHA, &fixture("runbooks-moved")).await;
    let outcome = resync(&world, &job).await;
    assert_eq!(triage_pin(&world.stores).await, RUNBOOKS_SHA);
    assert!(outcome.report.plan.iter().all(|e| e.status == Unchanged));
    assert_eq!(
        world.github.branch_head("octo", "agents", LOCK_BRANCH),
        None
    );
    let summary = not_proposed(&world.github);
    assert!(summary.contains("contents: write"), "{summary}");
    let runs = world.github.check_runs();
    let run = runs
        .iter()
        .rev()
        .find(|r| r.repo == "agents")
        .expect("a run");
    assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
}

/// A person's commit at the branch's head: the App leaves the branch alone and says so.
#[tokio::test]
async fn a_commit_the_app_did_not_make_stops_the_updates() {
    let world = world(true).await;
    let installation = world.runner.github.installation(INSTALLATION);
    let repo = RepoPath::parse("octo/agents").expect("a repository");
    let base = installation.commit_info(&repo, MAIN_SHA).await;
    let base = base.expect("the registered commit");
    let blob = installation
        .create_blob(&repo, b"Mine.\n")
        .await
        .expect("a blob");
    let entry = TreeEntry {
        path: "NOTES.md".into(),
        mode: FileMode::Regular,
        blob_sha: blob,
    };
    let tree = installation
        .create_tree(&repo, Some(&base.tree), &[entry])
        .await;
    let tree = tree.expect("a tree");
    let message = "Notes of my own";
    let commit = installation
        .create_commit(&repo, message, &tree, &[MAIN_SHA])
        .await;
    let commit = commit.expect("a commit");
    let created = installation
        .create_branch(&repo, LOCK_BRANCH, &commit)
        .await;
    created.expect("the branch");

    let job = move_runbooks(&world, MOVED_SHA, &fixture("runbooks-moved")).await;
    resync(&world, &job).await;
    let head = world.github.branch_head("octo", "agents", LOCK_BRANCH);
    assert_eq!(
        head.as_deref(),
        Some(commit.as_str()),
        "the branch is unchanged"
    );
    let summary = not_proposed(&world.github);
    assert!(summary.contains("the App stops updating it"), "{summary}");
    assert!(summary.contains(&commit[..12]), "{summary}");
}

/// A skill source that moved without a delivery is found by reconcile; the dependent's job
/// it queues opens the pull request too.
#[tokio::test]
async fn a_source_moved_without_a_delivery_is_proposed_through_reconcile() {
    let world = world(true).await;
    let queue = RecordingJobQueue::new();
    let options = ReconcileOptions::default;
    let state = world.stores.state.as_ref();
    let github = world.runner.github.as_ref();
    let first = reconcile(state, github, &queue, None, options(), &NoProgress).await;
    assert_eq!(first.expect("a pass").totals.jobs, 0);
    let moved = fixture("runbooks-moved");
    world
        .github
        .add_repo("steadymd", "runbooks", "main", MOVED_SHA, moved);
    let second = reconcile(state, github, &queue, None, options(), &NoProgress).await;
    let second = second.expect("a pass");
    let source = second.refs.iter().find(|r| r.kind == RefKind::SkillSource);
    let source = source.expect("the runbooks");
    assert_eq!(source.status, RefStatus::Queued, "{second:#?}");
    let jobs = queue.jobs();
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    assert_eq!(jobs[0].trigger, JobTrigger::SkillChanged);
    resync(&world, &jobs[0]).await;
    let head = world.github.branch_head("octo", "agents", LOCK_BRANCH);
    let lock = parsed(&lock_at(&world.github, &head.expect("the branch")));
    assert_eq!(pin(&lock, TRIAGE_REF).0.as_deref(), Some(MOVED_SHA));
    assert_eq!(open_pulls(&world.github).len(), 1);
}
