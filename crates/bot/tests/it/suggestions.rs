//! Suggested fixes on pull requests, against the fake GitHub: fixes on lines
//! the pull request adds become one `COMMENT` review of suggestions, others
//! stay annotations; a second delivery posts nothing; 120 fixes are three
//! reviews of at most 50; a refused review is a warning, not a failed run.

use std::path::{Path, PathBuf};

use astrolift_bot::{JobOutcome, JobTrigger, SyncJob, SyncRunner};
use astrolift_fake_github::{FakeGitHub, FakePullRequestFile, FakeReview, Fault, FaultKind};
use serde_json::Value;

use crate::support::{INSTALLATION, REPO_ID, embedded_stores, runner};

const PR: u64 = 7;
const HEAD: &str = "cccccccccccccccccccccccccccccccccccccccc";
const REVIEWS: &str = "/repos/octo/agents/pulls/7/reviews";
/// The patch of `fixtures/suggestions/astrolift.toml`: lines 10–12 added.
const PATCH: &str = "@@ -7,5 +7,7 @@ astrolift_version = 1\n name = \"fixer\"\n kind = \"agent\"\n run_famly = \"task\"\n-max_retries = 3\n+max_retires = 3\n+tool_timeout_secnds = 1200\n+result_ttl_hour = 168\n \n   [[workloads.containers]]";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/suggestions")
}

fn pull_request_job(delivery: &str, fork: bool) -> SyncJob {
    SyncJob {
        version: 1,
        delivery_id: delivery.into(),
        trigger: JobTrigger::PullRequest,
        installation_id: INSTALLATION,
        repository: "octo/agents".into(),
        repository_id: REPO_ID,
        head_sha: HEAD.into(),
        branch: Some("fix-typos".into()),
        fork,
        commit_time: None,
        before: None,
        default_branch: Some("main".into()),
        pull_request: Some(PR),
        accept_drift: None,
        skill_change: None,
        base_ref: None,
        preview_approved_by: None,
        merged: false,
        comment: None,
    }
}

async fn fake_pull_request(tree: &Path, files: Vec<FakePullRequestFile>) -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub");
    github.add_installation(INSTALLATION);
    github.add_repo("octo", "agents", "fix-typos", HEAD, tree);
    github.add_pull_request("octo", "agents", PR, HEAD, files);
    github
}

fn typos_pull_request() -> Vec<FakePullRequestFile> {
    vec![
        FakePullRequestFile::modified("astrolift.toml", PATCH),
        FakePullRequestFile::without_patch("brief/diagram.png"),
    ]
}

async fn run(runner: &SyncRunner, delivery: &str, fork: bool) -> JobOutcome {
    runner
        .run(&pull_request_job(delivery, fork))
        .await
        .expect("the run completes")
}

/// (line, code) of each annotation of the last check run.
fn annotations(github: &FakeGitHub) -> Vec<(u64, String)> {
    let runs = github.check_runs();
    let last = runs.last().expect("a check run");
    last.annotations
        .iter()
        .map(|a| {
            let line = a["start_line"].as_u64().unwrap_or(0);
            (line, a["title"].as_str().unwrap_or("").to_owned())
        })
        .collect()
}

fn fixable(outcome: &JobOutcome) -> usize {
    let diagnostics = outcome.report.diagnostics.iter();
    diagnostics.filter(|d| d.fix.is_some()).count()
}

fn suggested_lines(comments: &[Value]) -> Vec<u64> {
    comments.iter().filter_map(|c| c["line"].as_u64()).collect()
}

#[tokio::test]
async fn fixes_on_added_lines_are_one_review_and_the_others_stay_annotations() {
    let (stores, _dir) = embedded_stores().await;
    let github = fake_pull_request(&fixture(), typos_pull_request()).await;
    let runner = runner(&github, &stores);
    let outcome = run(&runner, "d-1", false).await;
    assert_eq!(fixable(&outcome), 4, "{:#?}", outcome.report.diagnostics);

    let reviews = github.reviews("octo", "agents", PR);
    assert_eq!(reviews.len(), 1);
    let review = &reviews[0];
    assert_eq!(
        (review.state.as_str(), review.commit_id.as_str()),
        ("COMMENTED", HEAD)
    );
    assert!(review.body.contains(&format!("head={HEAD} part=1/1 -->")));
    assert_eq!(suggested_lines(&review.comments), [10, 11, 12]);
    let first = review.comments[0]["body"].as_str().unwrap_or("");
    assert!(first.contains("**toml/unknown-key** (error)"), "{first}");
    assert!(
        first.ends_with("```suggestion\nmax_retries = 3\n```\n"),
        "{first}"
    );
    assert!(review.comments.iter().all(|c| c["side"] == "RIGHT"));
    // The fix on line 9, which the pull request did not add, is an annotation.
    assert_eq!(annotations(&github), [(9, "toml/unknown-key".to_owned())]);
    // The summary still counts all four errors; nothing was pushed anywhere.
    assert_eq!(outcome.report.counts.diagnostics.errors, 4);
    assert!(github.requests().iter().all(|r| !r.path.contains("/git/")));

    let again = run(&runner, "d-2", false).await;
    assert_eq!(again.report.counts.diagnostics.errors, 4);
    assert_eq!(
        github.reviews("octo", "agents", PR).len(),
        1,
        "no second review"
    );
    assert_eq!(github.requests_to("POST", REVIEWS).len(), 1);
    assert_eq!(annotations(&github), [(9, "toml/unknown-key".to_owned())]);
}

#[tokio::test]
async fn a_fork_pull_request_gets_its_review_on_the_base_repository() {
    let (stores, _dir) = embedded_stores().await;
    let github = fake_pull_request(&fixture(), typos_pull_request()).await;
    run(&runner(&github, &stores), "d-fork", true).await;
    let reviews = github.reviews("octo", "agents", PR);
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0].comments.len(), 3);
}

#[tokio::test]
async fn a_refused_review_is_a_warning_and_every_fix_an_annotation() {
    let (stores, _dir) = embedded_stores().await;
    let github = fake_pull_request(&fixture(), typos_pull_request()).await;
    github.inject(Fault::new(FaultKind::Status(403), 1).on("POST", REVIEWS));
    let outcome = run(&runner(&github, &stores), "d-1", false).await;
    assert!(github.reviews("octo", "agents", PR).is_empty());
    let runs = github.check_runs();
    let run = runs.last().expect("a check run");
    assert_eq!(run.status, "completed");
    assert_eq!(
        run.conclusion.as_deref(),
        Some("failure"),
        "the errors, as before"
    );
    let text = run.text.as_deref().unwrap_or("");
    assert!(
        text.starts_with("> [!WARNING]\n> Astrolift could not post its suggested fixes"),
        "{text}"
    );
    let lines: Vec<u64> = annotations(&github).iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [9, 10, 11, 12]);
    assert_eq!(outcome.report.counts.diagnostics.errors, 4);
}

#[tokio::test]
async fn a_clean_pull_request_asks_nothing_about_pull_requests() {
    let (stores, _dir) = embedded_stores().await;
    let clean = crate::support::examples("single-agent");
    let github = fake_pull_request(&clean, typos_pull_request()).await;
    run(&runner(&github, &stores), "d-1", false).await;
    assert!(
        github
            .requests_to("GET", "/repos/octo/agents/pulls")
            .is_empty()
    );
}

/// 40 workloads of three misspelt keys each: 120 fixes on added lines.
fn many_typos(dir: &Path) -> String {
    let mut text =
        String::from("astrolift_version = 1\nname = \"fixer\"\nbrief = \"brief/README.md\"\n");
    for n in 0..40 {
        text.push_str(&format!(
            "\n[[workloads]]\nname = \"w{n}\"\nkind = \"agent\"\nmax_retires = 3\ntool_timeout_secnds = 1200\nresult_ttl_hour = 168\n\n  [[workloads.containers]]\n  name = \"agent\"\n  is_primary = true\n  image_ref = \"ghcr.io/calliopeai/astrolift-agent-claude-code-vnc:latest\"\n"
        ));
    }
    std::fs::create_dir_all(dir.join("brief")).expect("brief dir");
    std::fs::write(dir.join("brief/README.md"), "# Fixer\n").expect("brief");
    std::fs::write(dir.join("astrolift.toml"), &text).expect("manifest");
    text
}

/// A pull request that adds the whole manifest of [`many_typos`].
async fn many_typos_pull_request(tree: &Path) -> FakeGitHub {
    let text = many_typos(tree);
    let files = vec![FakePullRequestFile::added("astrolift.toml", &text)];
    fake_pull_request(tree, files).await
}

#[tokio::test]
async fn one_hundred_and_twenty_fixes_are_three_reviews_of_at_most_fifty() {
    let (stores, dir) = embedded_stores().await;
    let github = many_typos_pull_request(&dir.path().join("repo")).await;
    let runner = runner(&github, &stores);
    let outcome = run(&runner, "d-1", false).await;
    assert_eq!(fixable(&outcome), 120);

    let posts = github.requests_to("POST", REVIEWS);
    let sizes: Vec<usize> = posts
        .iter()
        .map(|p| p.json()["comments"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(sizes, [50, 50, 20]);
    let reviews = github.reviews("octo", "agents", PR);
    assert_eq!(reviews.len(), 3, "every request was accepted (no 422)");
    for (n, review) in reviews.iter().enumerate() {
        assert!(review.body.contains(&format!("part={}/3 -->", n + 1)));
    }
    let unknown_key = annotations(&github)
        .into_iter()
        .filter(|(_, code)| code == "toml/unknown-key")
        .count();
    assert_eq!(unknown_key, 0, "all 120 are suggestions");

    run(&runner, "d-2", false).await;
    assert_eq!(
        github.requests_to("POST", REVIEWS).len(),
        3,
        "a redelivery posts nothing"
    );
}

#[tokio::test]
async fn a_review_lost_half_way_is_completed_by_the_next_delivery() {
    let (stores, dir) = embedded_stores().await;
    let github = many_typos_pull_request(&dir.path().join("repo")).await;
    // Part 1 was posted by an earlier delivery; a person quoting the marker
    // of part 2 does not count as our review.
    let marker = |part: u32| format!("<!-- astrolift:suggestions head={HEAD} part={part}/3 -->");
    let mut ours = FakeReview::by_a_person("astrolift[bot]", HEAD, &marker(1));
    ours.user_type = "Bot".to_owned();
    github.add_review("octo", "agents", PR, ours);
    let quoted = FakeReview::by_a_person("octocat", HEAD, &marker(2));
    github.add_review("octo", "agents", PR, quoted);
    run(&runner(&github, &stores), "d-2", false).await;
    let posts = github.requests_to("POST", REVIEWS);
    let bodies: Vec<String> = posts
        .iter()
        .map(|p| p.json()["body"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[0].contains(&marker(2)) && bodies[1].contains(&marker(3)));
}
