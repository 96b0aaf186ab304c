//! Registration order by commit ancestry (GitHub's compare API on the fake
//! GitHub), never by the committer's timestamp.

use astrolift_bot::{SyncJob, SyncRunner};
use astrolift_fake_github::FakeGitHub;
use astrolift_sync::Stores;

use crate::support::{embedded_stores, examples, fake_github, push_job, register, runner};

/// The registered ref's first commit.
const ROOT: &str = "1111111111111111111111111111111111111111";
/// A child of `ROOT` whose committer claims 2099.
const DATED_2099: &str = "2099209920992099209920992099209920992099";
/// A child of `DATED_2099`, with an honest date.
const NEXT: &str = "3333333333333333333333333333333333333333";
/// A child of `ROOT` that rewrites history (a force push over `DATED_2099`).
const FORCED: &str = "4444444444444444444444444444444444444444";
/// 2099-01-01.
const YEAR_2099: i64 = 4_070_908_800;

async fn github_with_history() -> FakeGitHub {
    let github = fake_github("monorepo").await;
    for (sha, parents) in [
        (ROOT, &[][..]),
        (DATED_2099, &[ROOT][..]),
        (NEXT, &[DATED_2099][..]),
        (FORCED, &[ROOT][..]),
    ] {
        github.add_repo("octo", "agents", "main", sha, examples("monorepo"));
        github.add_commit("octo", "agents", sha, parents);
    }
    github
}

/// Registered embedded stores, the fake GitHub with the history, a runner.
async fn registered_with_history() -> (Stores, tempfile::TempDir, FakeGitHub, SyncRunner) {
    let (stores, dir) = embedded_stores().await;
    register(&stores).await;
    let github = github_with_history().await;
    let runner = runner(&github, &stores);
    (stores, dir, github, runner)
}

async fn apply(runner: &SyncRunner, job: &SyncJob) {
    let outcome = runner.run(job).await.expect("run");
    assert!(outcome.applied, "{:?}", outcome.report.skipped);
}

fn push_of(sha: &str, before: &str, commit_time: i64) -> SyncJob {
    let mut job = push_job(&format!("d-{sha}"));
    job.head_sha = sha.to_owned();
    job.before = Some(before.to_owned());
    job.commit_time = Some(commit_time);
    job
}

async fn registered_commit(stores: &Stores) -> String {
    let synced = stores
        .state
        .get_synced_commit("octo/agents", "main")
        .await
        .expect("read")
        .expect("a synced commit");
    synced.commit
}

fn compares(github: &FakeGitHub) -> usize {
    github
        .requests_to("GET", "/repos/octo/agents/compare/")
        .len()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_push_after_a_commit_dated_2099_applies() {
    let (stores, _dir, github, runner) = registered_with_history().await;
    apply(&runner, &push_of(DATED_2099, ROOT, YEAR_2099)).await;

    let next = runner.run(&push_of(NEXT, DATED_2099, 1_795_946_400)).await;
    assert!(next.expect("next push").applied);
    assert_eq!(registered_commit(&stores).await, NEXT);
    assert_eq!(compares(&github), 0, "fast-forwards need no comparison");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_late_older_push_is_skipped_and_the_run_says_why() {
    let (stores, _dir, github, runner) = registered_with_history().await;
    apply(&runner, &push_of(NEXT, DATED_2099, 1)).await;

    // DATED_2099's push arrives after NEXT's, with a later committer time.
    let late = runner.run(&push_of(DATED_2099, ROOT, YEAR_2099)).await;
    let late = late.expect("late push checked");
    assert!(!late.applied);
    assert_eq!(registered_commit(&stores).await, NEXT);
    assert_eq!(compares(&github), 1);
    let run = github
        .check_runs()
        .into_iter()
        .find(|r| r.head_sha == DATED_2099)
        .expect("the late push's run");
    assert_eq!(run.status, "completed");
    let summary = run.summary.unwrap_or_default();
    assert!(
        // Escaped Markdown text: `\,` is a comma.
        summary.contains(
            "**Skipped:** commit 209920992099 is an ancestor of 333333333333\\, already registered for main"
        ),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_force_push_applies() {
    let (stores, _dir, github, runner) = registered_with_history().await;
    apply(&runner, &push_of(NEXT, DATED_2099, YEAR_2099)).await;

    // `before` is not the registered commit (another push came between), so
    // GitHub is asked: FORCED and NEXT have diverged.
    let forced = runner.run(&push_of(FORCED, DATED_2099, 1)).await;
    assert!(forced.expect("force push").applied);
    assert_eq!(registered_commit(&stores).await, FORCED);
    assert_eq!(compares(&github), 1);
}

#[test]
fn a_job_queued_before_before_existed_still_parses() {
    let mut json = serde_json::to_value(push_job("d-old")).expect("serialize");
    json.as_object_mut().expect("object").remove("before");
    let job: SyncJob = serde_json::from_value(json).expect("old job parses");
    assert_eq!(job.before, None);
}
