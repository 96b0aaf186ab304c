//! Reconcile (docs/reference.md §4, "astrolift reconcile"): a branch moved on GitHub with no
//! delivery is found by comparing its head with the synced commit, and synced (trigger
//! `reconcile`); a pass with nothing changed sends one conditional request per ref (all
//! `304`) and queues nothing; a head is queued once; a low rate limit stops the asking.

use std::sync::Arc;

use astrolift_bot::reconcile::{
    ReconcileOptions, ReconcileReport, RefKind, RefStatus, SkipReason, reconcile,
};
use astrolift_bot::{JobTrigger, RecordingJobQueue, SyncRunner};
use astrolift_dispatch::content::RecordOnlyContent;
use astrolift_dispatch::dispatch::MemoryDispatchQueue;
use astrolift_dispatch::workflow::{RecordingDispatcher, StageDispatcher, start_run};
use astrolift_fake_github::FakeGitHub;
use astrolift_forge::github::GitHubApp;
use astrolift_manifest::Limits;
use astrolift_manifest::workflow::{Stage, Workflow};
use astrolift_store::state::{
    LastSync, RepoRegistration, RunStatus, StageStatus, WorkflowRecord, WorkflowStatus,
};
use astrolift_sync::Stores;

use crate::support::{
    INSTALLATION, MAIN_SHA, REPO_ID, embedded_stores, examples, fake_github, push_job, register,
    register_repository, register_repository_of, runner,
};

/// `main`'s next commit, pushed while no delivery reached the App.
const MOVED: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const HEADS: &str = "/repos/octo/agents/commits/";

/// Registered stores whose `main` is applied at `MAIN_SHA`, the fake GitHub, the runner.
async fn synced_world() -> (Stores, tempfile::TempDir, FakeGitHub, SyncRunner) {
    let (stores, dir) = embedded_stores().await;
    register(&stores).await;
    let github = fake_github("monorepo").await;
    github.add_commit("octo", "agents", MAIN_SHA, &[]);
    let runner = runner(&github, &stores);
    let first = runner.run(&push_job("d-first")).await.expect("synced");
    assert!(first.applied, "{:?}", first.report.skipped);
    (stores, dir, github, runner)
}

/// `main` moves to `MOVED` on GitHub; no webhook is delivered.
fn push_without_delivery(github: &FakeGitHub) {
    github.add_repo("octo", "agents", "main", MOVED, examples("monorepo"));
    github.add_commit("octo", "agents", MOVED, &[MAIN_SHA]);
}

async fn pass(
    stores: &Stores,
    app: &GitHubApp,
    queue: &RecordingJobQueue,
    options: ReconcileOptions,
) -> ReconcileReport {
    pass_with(stores, app, queue, None, options).await
}

/// [`pass`], dispatching workflow stages through `stages`.
async fn pass_with(
    stores: &Stores,
    app: &GitHubApp,
    queue: &RecordingJobQueue,
    stages: Option<&dyn StageDispatcher>,
    options: ReconcileOptions,
) -> ReconcileReport {
    let progress = astrolift_bot::reconcile::NoProgress;
    reconcile(
        stores.state.as_ref(),
        app,
        queue,
        stages,
        options,
        &progress,
    )
    .await
    .expect("a reconcile pass")
}

fn registered(report: &ReconcileReport) -> Vec<&astrolift_bot::reconcile::RefOutcome> {
    report
        .refs
        .iter()
        .filter(|r| r.kind == RefKind::Registered)
        .collect()
}

#[tokio::test]
async fn a_branch_moved_without_a_delivery_is_applied_and_a_second_pass_is_all_304() {
    let (stores, _dir, github, runner) = synced_world().await;
    let queue = RecordingJobQueue::new();
    let app = runner.github.clone();
    // A first pass learns the ETag of every head: nothing moved yet.
    let first = pass(&stores, &app, &queue, ReconcileOptions::default()).await;
    assert_eq!(first.totals.queued, 0, "{first:#?}");
    assert_eq!(registered(&first)[0].status, RefStatus::Unchanged);
    assert!(queue.jobs().is_empty());

    push_without_delivery(&github);
    let before = github.requests_to("GET", HEADS).len();
    let moved = pass(&stores, &app, &queue, ReconcileOptions::default()).await;
    let outcome = registered(&moved)[0];
    assert_eq!(outcome.status, RefStatus::Queued, "{moved:#?}");
    assert_eq!(outcome.head.as_deref(), Some(MOVED));
    assert_eq!(outcome.synced.as_deref(), Some(MAIN_SHA));
    assert_eq!(github.requests_to("GET", HEADS).len(), before + 1);
    let jobs = queue.jobs();
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    let job = &jobs[0];
    assert_eq!(job.trigger, JobTrigger::Reconcile);
    assert_eq!(
        (job.head_sha.as_str(), job.installation_id),
        (MOVED, INSTALLATION)
    );
    // The lane of the branch's pushes.
    assert_eq!(job.message_group_id(), push_job("x").message_group_id());
    let synced = runner.run(job).await.expect("the reconcile job runs");
    assert!(synced.applied, "{:?}", synced.report.skipped);
    let commit = stores
        .state
        .get_synced_commit("octo/agents", "main")
        .await
        .expect("read")
        .expect("synced");
    assert_eq!(commit.commit, MOVED);

    // Nothing changed since: one conditional request per ref, every one a 304, no job.
    let before = github.requests_to("GET", "/repos/").len();
    let again = pass(&stores, &app, &queue, ReconcileOptions::default()).await;
    let asked: Vec<_> = github.requests_to("GET", "/repos/")[before..].to_vec();
    assert_eq!(asked.len(), again.totals.refs, "{asked:#?}");
    assert!(asked.iter().all(|r| r.header("if-none-match").is_some()));
    assert_eq!(again.totals.not_modified, again.totals.refs, "{again:#?}");
    assert_eq!(again.totals.queued, 0);
    assert_eq!(queue.jobs().len(), 1, "nothing more queued");
    assert_eq!(registered(&again)[0].status, RefStatus::Unchanged);
}

#[tokio::test]
async fn a_moved_head_is_queued_once_however_often_reconcile_runs() {
    let (stores, _dir, github, runner) = synced_world().await;
    let queue = RecordingJobQueue::new();
    push_without_delivery(&github);
    let app = runner.github.clone();
    let first = pass(&stores, &app, &queue, ReconcileOptions::default()).await;
    assert_eq!(registered(&first)[0].status, RefStatus::Queued);
    let second = pass(&stores, &app, &queue, ReconcileOptions::default()).await;
    let outcome = registered(&second)[0];
    assert_eq!(outcome.status, RefStatus::Skipped);
    assert_eq!(outcome.reason, Some(SkipReason::AlreadyQueued));
    assert_eq!(queue.jobs().len(), 1);
}

/// A registration made with the CLI (`register-repo`: no installation, and no sync through
/// the App has recorded the repository's id): reconcile learns both from GitHub and queues
/// its head in the lane of the branch's pushes, and the job applies.
#[tokio::test]
async fn a_registration_no_app_sync_applied_is_reconciled_in_its_pushes_lane() {
    let (stores, _dir) = embedded_stores().await;
    register_repository_of(&stores, None).await;
    astrolift_store::testing::register_example_skill_sources(stores.state.as_ref(), "proj-bot")
        .await
        .expect("skill sources");
    let github = fake_github("monorepo").await;
    github.add_commit("octo", "agents", MAIN_SHA, &[]);
    github.install_repo(INSTALLATION, "octo", "agents");
    github.set_repo_id("octo", "agents", REPO_ID);
    let runner = runner(&github, &stores);
    let queue = RecordingJobQueue::new();

    let report = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    let outcome = registered(&report)[0];
    assert_eq!(outcome.status, RefStatus::Queued, "{report:#?}");
    assert_eq!(outcome.synced, None);
    assert_eq!(
        github
            .requests_to("GET", "/repos/octo/agents/installation")
            .len(),
        1
    );
    let repository_asked = github.requests_to("GET", "/repos/octo/agents");
    let repository_asked = repository_asked
        .iter()
        .filter(|r| r.path == "/repos/octo/agents");
    assert_eq!(
        repository_asked.count(),
        1,
        "the repository's id, asked once"
    );
    let jobs = queue.jobs();
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    assert_eq!(
        (jobs[0].repository_id, jobs[0].installation_id),
        (REPO_ID, INSTALLATION)
    );
    assert_eq!(jobs[0].message_group_id(), push_job("x").message_group_id());
    let synced = runner.run(&jobs[0]).await.expect("the reconcile job runs");
    assert!(synced.applied, "{:?}", synced.report.skipped);

    // Synced now: the next pass asks one conditional head and nothing else of the repository.
    let before = github.requests_to("GET", "/repos/octo/agents").len();
    let again = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    assert_eq!(
        registered(&again)[0].status,
        RefStatus::Unchanged,
        "{again:#?}"
    );
    let asked = github.requests_to("GET", "/repos/octo/agents")[before..].to_vec();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert!(asked[0].path.starts_with(HEADS), "{asked:#?}");
    assert_eq!(queue.jobs().len(), 1);
}

/// A registration of `repository`'s `main`, as if a sync through the App had applied it.
async fn register_synced(
    stores: &Stores,
    repository: &str,
    installation_id: Option<u64>,
    repository_id: u64,
) {
    let registration = RepoRegistration {
        repository: repository.into(),
        installation_id,
        project_id: "proj-bot".into(),
        registered_ref: "main".into(),
        manifest_path: None,
        updated_at: 1,
        last_sync: Some(LastSync {
            repository_id,
            skill_sources: Vec::new(),
        }),
        previews: false,
    };
    stores
        .state
        .put_registration(&registration)
        .await
        .expect("registered");
}

/// A second registered ref (`octo/tools`), of `installation_id`.
async fn register_dev(stores: &Stores, installation_id: Option<u64>) {
    register_synced(stores, "octo/tools", installation_id, REPO_ID + 1).await;
}

#[tokio::test]
async fn an_installation_low_on_rate_limit_is_asked_nothing_more_and_reported_skipped() {
    let (stores, _dir, github, runner) = synced_world().await;
    register_dev(&stores, Some(INSTALLATION)).await;
    github.add_repo("octo", "tools", "main", MOVED, examples("monorepo"));
    let queue = RecordingJobQueue::new();
    let options = ReconcileOptions {
        concurrency: 1,
        rate_limit_floor: 4_999,
    };
    github.set_rate_limit_remaining(INSTALLATION, 4_999);
    let report = pass(&stores, &runner.github, &queue, options).await;
    let outcomes = registered(&report);
    // `octo/agents` is asked first (sorted) and leaves 4,998: below the floor.
    assert_eq!(outcomes[0].repository, "octo/agents");
    assert_ne!(outcomes[0].status, RefStatus::Skipped);
    assert_eq!(outcomes[1].status, RefStatus::Skipped, "{report:#?}");
    assert_eq!(outcomes[1].reason, Some(SkipReason::RateLimited));
    assert!(github.requests_to("GET", "/repos/octo/tools/").is_empty());
}

#[tokio::test]
async fn an_installation_is_learnt_for_a_registration_that_names_none() {
    let (stores, _dir, github, runner) = synced_world().await;
    register_dev(&stores, None).await;
    github.add_repo("octo", "tools", "main", MOVED, examples("monorepo"));
    let queue = RecordingJobQueue::new();
    let report = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    let tools = registered(&report)[1];
    assert_eq!(tools.status, RefStatus::Skipped, "{report:#?}");
    assert_eq!(tools.reason, Some(SkipReason::NotInstalled));

    github.install_repo(INSTALLATION, "octo", "tools");
    let report = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    assert_eq!(
        registered(&report)[1].status,
        RefStatus::Queued,
        "{report:#?}"
    );
    let jobs = queue.jobs();
    let job = jobs
        .iter()
        .find(|j| j.repository == "octo/tools")
        .expect("queued");
    assert_eq!(job.installation_id, INSTALLATION);
    assert_eq!(job.repository_id, REPO_ID + 1);
}

/// The JSON shape of `astrolift reconcile --format json` (docs/reference.md §4).
#[tokio::test]
async fn the_report_serializes_as_documented() {
    let (stores, _dir, github, runner) = synced_world().await;
    push_without_delivery(&github);
    let queue = Arc::new(RecordingJobQueue::new());
    let report = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    insta::assert_json_snapshot!("reconcile_report", report);
}

/// A skill source that moved with no delivery re-syncs its dependents (trigger `skill`), once:
/// the first pass only records the heads it sees.
#[tokio::test]
async fn a_skill_source_moved_without_a_delivery_re_syncs_its_dependents() {
    let (stores, _dir, github, runner) = synced_world().await;
    let queue = RecordingJobQueue::new();
    let first = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    assert_eq!(first.totals.jobs, 0, "{first:#?}");
    let moved = "5333333333333333333333333333333333333333";
    github.add_repo("example", "runbooks", "main", moved, examples("monorepo"));
    let second = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    let source = second
        .refs
        .iter()
        .find(|r| r.kind == RefKind::SkillSource)
        .expect("the runbooks");
    assert_eq!(source.status, RefStatus::Queued, "{second:#?}");
    let jobs = queue.jobs();
    assert_eq!(jobs.len(), source.jobs);
    assert!(!jobs.is_empty());
    assert!(jobs.iter().all(|j| j.trigger == JobTrigger::SkillChanged));
    assert!(jobs.iter().all(|j| j.repository == "octo/agents"));
    let third = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    assert_eq!(third.totals.jobs, 0, "{third:#?}");
    assert_eq!(queue.jobs().len(), jobs.len());
}

/// Reconcile of 1,000 refs, a benchmark: 1,000 registered refs
/// that have not moved, against the fake GitHub; the first pass learns the ETags, the second
/// is timed. `cargo test -p astrolift-bot --test it reconcile_of_1000 -- --ignored --nocapture`
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by hand, figures in BENCHMARKS.md"]
async fn reconcile_of_1000_unchanged_refs() {
    use astrolift_store::state::{ChangeSet, SyncedCommit, SyncedCommitUpdate};
    const REFS: usize = 1_000;
    let (stores, _dir) = embedded_stores().await;
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    let app = runner(&github, &stores).github;
    for index in 0..REFS {
        let name = format!("repo-{index:04}");
        let repository = format!("octo/{name}");
        github.add_repo("octo", &name, "main", MAIN_SHA, examples("monorepo"));
        let repository_id = 10_000 + index as u64;
        register_synced(&stores, &repository, Some(INSTALLATION), repository_id).await;
        let mut changes = ChangeSet::new(&repository);
        changes.synced = Some(SyncedCommitUpdate {
            commit: SyncedCommit {
                repository: repository.clone(),
                ref_name: "main".into(),
                commit: MAIN_SHA.into(),
                commit_time: 1,
                synced_at: 1,
            },
            expected_previous: None,
        });
        stores.state.apply(changes).await.expect("synced commit");
    }
    let queue = RecordingJobQueue::new();
    let options = ReconcileOptions::default();
    let started = std::time::Instant::now();
    let first = pass(&stores, &app, &queue, options).await;
    let first_time = started.elapsed();
    let first_requests = github.requests().len();
    let started = std::time::Instant::now();
    let second = pass(&stores, &app, &queue, options).await;
    let second_time = started.elapsed();
    let requests = github.requests();
    let second_requests = &requests[first_requests..];
    let conditional = second_requests
        .iter()
        .filter(|r| r.header("if-none-match").is_some())
        .count();
    let peak = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(str::to_owned)
        })
        .unwrap_or_default();
    println!(
        "first pass: {} refs, {first_requests} GitHub requests, {:.2} s, {} queued",
        first.totals.refs,
        first_time.as_secs_f64(),
        first.totals.queued
    );
    println!(
        "second pass: {} GitHub requests ({conditional} conditional, {} answered 304), {:.2} s, {} queued; peak RSS of the test process {peak}",
        second_requests.len(),
        second.totals.not_modified,
        second_time.as_secs_f64(),
        second.totals.queued
    );
    assert_eq!(second.totals.refs, REFS);
    assert_eq!(second.totals.not_modified, REFS);
    assert!(second_requests.len() <= REFS);
    assert_eq!(conditional, second_requests.len());
    assert!(queue.jobs().is_empty());
}

/// A registered repository with no agents is synced at a commit like any other: the
/// reconcile job that syncs it records the commit, so the next pass queues nothing and
/// asks one conditional request per ref.
#[tokio::test]
async fn a_registered_repository_without_agents_is_reconciled_once() {
    let (stores, _dir) = embedded_stores().await;
    register_repository(&stores).await;
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/no-agents");
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "main", MAIN_SHA, fixture);
    github.add_commit("octo", "agents", MAIN_SHA, &[]);
    let runner = runner(&github, &stores);
    let queue = RecordingJobQueue::new();

    let first = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    assert_eq!(
        registered(&first)[0].status,
        RefStatus::Queued,
        "{first:#?}"
    );
    let jobs = queue.jobs();
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    let synced = runner.run(&jobs[0]).await.expect("the reconcile job runs");
    assert!(synced.applied, "{:?}", synced.report.skipped);
    assert!(synced.report.plan.is_empty(), "{:?}", synced.report.plan);
    let commit = stores
        .state
        .get_synced_commit("octo/agents", "main")
        .await
        .expect("read")
        .expect("the synced commit is recorded with no agent");
    assert_eq!(commit.commit, MAIN_SHA);

    let before = github.requests_to("GET", "/repos/").len();
    let again = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    let asked = github.requests_to("GET", "/repos/")[before..].to_vec();
    assert_eq!(asked.len(), again.totals.refs, "{asked:#?}");
    assert!(
        asked.iter().all(|r| r.path.starts_with(HEADS)),
        "{asked:#?}"
    );
    assert!(asked.iter().all(|r| r.header("if-none-match").is_some()));
    assert_eq!(again.totals.queued, 0, "{again:#?}");
    assert_eq!(registered(&again)[0].status, RefStatus::Unchanged);
    assert_eq!(queue.jobs().len(), 1, "nothing more queued");
}

/// An active preview of pull request `number` of `octo/agents`, last pushed at `pushed_at`.
fn preview_of(number: u64, pushed_at: i64) -> astrolift_store::state::Preview {
    use astrolift_store::state::{Preview, PreviewStatus, preview_name};
    Preview {
        repository: "octo/agents".into(),
        manifest_path: "agents/triage/astrolift.toml".into(),
        pull_request: number,
        project_id: "proj-1".into(),
        agent: "emr-triage".into(),
        name: preview_name("emr-triage", number),
        head_sha: "e".repeat(40),
        snapshot_hash: "f".repeat(64),
        payload_digest: "0".repeat(64),
        layer_key: None,
        status: PreviewStatus::Active,
        fork_approved_by: None,
        pushed_at,
        updated_at: pushed_at,
        version: 1,
    }
}

#[tokio::test]
async fn reconcile_tears_down_the_previews_of_closed_and_quiet_pull_requests() {
    use astrolift_fake_github::FakePullRequest;
    use astrolift_store::state::PreviewStatus;

    let (stores, _dir, github, runner) = synced_world().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let week = 7 * 24 * 60 * 60;
    // #1 open and pushed an hour ago; #2 closed on GitHub (its delivery missed); #3 gone
    // from GitHub; #4 open, but no push for 7 days.
    let open = FakePullRequest::open("feature", &"e".repeat(40), "main");
    github.set_pull_request("octo", "agents", 1, open.clone());
    github.set_pull_request("octo", "agents", 2, open.clone());
    github.close_pull_request("octo", "agents", 2, false);
    github.set_pull_request("octo", "agents", 4, open);
    let previews = stores.state.previews();
    for (number, pushed_at) in [(1, now - 3600), (2, now), (3, now), (4, now - week)] {
        previews
            .put_preview(&preview_of(number, pushed_at))
            .await
            .expect("stored");
    }
    let queue = RecordingJobQueue::new();
    let report = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    assert_eq!(report.totals.previews_torn_down, 3, "{report:#?}");
    let status = |number| {
        let previews = &previews;
        async move {
            previews
                .get_preview("octo/agents", "agents/triage/astrolift.toml", number)
                .await
                .expect("read")
                .expect("kept")
                .status
        }
    };
    assert_eq!(status(1).await, PreviewStatus::Active);
    for number in [2, 3, 4] {
        assert_eq!(status(number).await, PreviewStatus::TornDown, "#{number}");
    }
    // #4 was torn down for its quiet, without asking GitHub.
    assert!(
        github
            .requests_to("GET", "/repos/octo/agents/pulls/4")
            .is_empty()
    );
    let again = pass(&stores, &runner.github, &queue, ReconcileOptions::default()).await;
    assert_eq!(again.totals.previews_torn_down, 0);
}

/// A workflow of one stage of `emr-triage` (default timeout, 24h), registered in `octo/agents`.
async fn one_stage_workflow(stores: &Stores) -> WorkflowRecord {
    let workflow = Workflow {
        path: "workflows/nightly.toml".into(),
        name: "nightly".into(),
        description: None,
        stages: vec![Stage {
            name: "collect".into(),
            agent: "emr-triage".into(),
            manifest: "agents/triage/astrolift.toml".into(),
            ..Stage::default()
        }],
    };
    let record = WorkflowRecord {
        repository: "octo/agents".into(),
        name: workflow.name.clone(),
        path: workflow.path.clone(),
        status: WorkflowStatus::Active,
        content_hash: "sha256:nightly".into(),
        definition: serde_json::to_string(&workflow).expect("json"),
        commit: MAIN_SHA.into(),
        updated_at: 1,
        version: 1,
        state_machine_arn: None,
        retired_state_machines: Vec::new(),
    };
    let workflows = stores.state.workflows();
    workflows.put_workflow(&record, None).await.expect("stored");
    record
}

/// A stage dispatched 25 hours ago and never reported is past its 24-hour timeout:
/// reconcile fails it once (the run fails: it has no retries), and a second pass finds
/// nothing to do.
#[tokio::test]
async fn reconcile_fails_a_workflow_stage_past_its_timeout_once() {
    let (stores, _dir, _github, runner) = synced_world().await;
    let record = one_stage_workflow(&stores).await;
    let outbox = MemoryDispatchQueue::new();
    let dispatcher = RecordingDispatcher {
        state: stores.state.as_ref(),
        queue: Some(&outbox),
        content: &RecordOnlyContent { lenient: true },
        callback_base: None,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let input = serde_json::Value::Null;
    let started = start_run(
        stores.state.as_ref(),
        &dispatcher,
        &record,
        &input,
        now - 25 * 3600,
        &Limits::DEFAULT,
    )
    .await
    .expect("started");
    assert_eq!(started.dispatched.len(), 1);
    let queue = RecordingJobQueue::new();
    let stages = Some(&dispatcher as &dyn StageDispatcher);
    let options = ReconcileOptions::default();
    let report = pass_with(&stores, &runner.github, &queue, stages, options).await;
    assert_eq!(
        (report.totals.stages_timed_out, report.totals.stages_retried),
        (1, 0),
        "{report:#?}"
    );
    let run = stores
        .state
        .workflows()
        .get_workflow_run(&started.run.id)
        .await
        .expect("read")
        .expect("the run");
    assert_eq!(run.status, RunStatus::Failed);
    let collect = &run.stages["collect"];
    assert_eq!((collect.status, collect.attempt), (StageStatus::Failed, 1));
    let error = collect.error.as_deref().unwrap_or_default();
    assert!(error.contains("timeout of 24h"), "{error}");
    let again = pass_with(&stores, &runner.github, &queue, stages, options).await;
    assert_eq!(again.totals.stages_timed_out, 0, "{again:#?}");
    assert_eq!(outbox.messages().len(), 1, "nothing dispatched again");
}
