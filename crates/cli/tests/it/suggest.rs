//! `astrolift suggest` (what `action.yml` runs) against the fake GitHub:
//! the review of suggestions with a handed-in `GITHUB_TOKEN`, once per head;
//! a refused token or a missing one is exit 2 with nothing posted.

use std::path::{Path, PathBuf};
use std::process::Output;

use astrolift_fake_github::{FakeGitHub, FakePullRequestFile};

const HEAD: &str = "cccccccccccccccccccccccccccccccccccccccc";
const REVIEWS: &str = "/repos/octo/agents/pulls/7/reviews";
/// The patch of the fixture's `astrolift.toml`: lines 10–12 added.
const PATCH: &str = "@@ -7,5 +7,7 @@\n name = \"fixer\"\n kind = \"agent\"\n run_famly = \"task\"\n-max_retries = 3\n+max_retires = 3\n+tool_timeout_secnds = 1200\n+result_ttl_hour = 168\n \n   [[workloads.containers]]";

/// The bot's fixture: three misspelt keys on added lines, one on line 9.
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bot/tests/it/fixtures/suggestions")
}

async fn fake() -> FakeGitHub {
    let github = FakeGitHub::start().await.expect("fake GitHub");
    let files = vec![FakePullRequestFile::modified("astrolift.toml", PATCH)];
    github.add_pull_request("octo", "agents", 7, HEAD, files);
    github
}

/// Runs the binary on a blocking thread, the fake serving meanwhile.
async fn suggest(github: &FakeGitHub, token: Option<String>) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_astrolift"));
    command
        .args([
            "suggest",
            "--repo",
            "octo/agents",
            "--pr",
            "7",
            "--head",
            HEAD,
        ])
        .arg(checkout())
        .env("GITHUB_API_URL", github.base_url())
        .env_remove("GITHUB_TOKEN");
    if let Some(token) = token {
        command.env("GITHUB_TOKEN", token);
    }
    tokio::task::spawn_blocking(move || command.output().expect("runs"))
        .await
        .expect("joined")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_one_review_of_suggestions_per_head_with_github_token() {
    let github = fake().await;
    let token = github.issue_token();
    let first = suggest(&github, Some(token.clone())).await;
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert_eq!(
        stdout.trim(),
        r#"{"suggestions":3,"reviews_created":1,"reviews_found":0}"#
    );
    let reviews = github.reviews("octo", "agents", 7);
    assert_eq!(reviews.len(), 1);
    let lines: Vec<u64> = reviews[0]
        .comments
        .iter()
        .filter_map(|c| c["line"].as_u64())
        .collect();
    assert_eq!(lines, [10, 11, 12]);
    // Acting with the token handed in: no App token was asked for.
    assert!(github.requests_to("POST", "/app/installations").is_empty());

    let again = suggest(&github, Some(token)).await;
    assert_eq!(again.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert_eq!(
        stdout.trim(),
        r#"{"suggestions":3,"reviews_created":0,"reviews_found":1}"#
    );
    assert_eq!(github.requests_to("POST", REVIEWS).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_or_missing_token_is_exit_2_and_never_printed() {
    let github = fake().await;
    let refused = suggest(&github, Some("ghs_not_issued_by_github".to_owned())).await;
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("401"), "{stderr}");
    assert!(!stderr.contains("ghs_not_issued_by_github"), "{stderr}");
    let missing = suggest(&github, None).await;
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("GITHUB_TOKEN is not set"));
    assert!(github.reviews("octo", "agents", 7).is_empty());
}
