//! Pull requests against the fake: one pull request's state, head and base (open,
//! closed, merged, from a fork, unknown); files and reviews, every page read through
//! `Link` headers, a `next` link on another host refused, reviews created
//! as `COMMENT` on diff lines, GitHub's 422 for a line off the diff.

use astrolift_fake_github::{FakeHeadRepo, FakePullRequest, FakePullRequestFile, FakeReview};
use astrolift_forge::github::{
    COMMENTS_PER_REVIEW, GitHubConfig, Installation, MAX_PAGES, NewReview, ReviewComment,
};
use secrecy::SecretString;

use super::{OWNER, REPO, SHA, Setup, setup};

const PR: u64 = 12;

fn files(count: usize) -> Vec<FakePullRequestFile> {
    (0..count)
        .map(|n| {
            FakePullRequestFile::added(&format!("agents/a{n:03}/astrolift.toml"), "a = 1\nb = 2\n")
        })
        .collect()
}

fn review(comments: Vec<ReviewComment>) -> NewReview {
    NewReview {
        commit_id: SHA.to_owned(),
        body: "Astrolift suggests fixes.".to_owned(),
        comments,
    }
}

async fn with_pull(count: usize) -> Setup {
    let setup = setup().await;
    setup
        .fake
        .add_pull_request(OWNER, REPO, PR, SHA, files(count));
    setup
}

#[tokio::test]
async fn every_page_of_files_is_read_through_link_headers() {
    let setup = with_pull(250).await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let listed = gh.pull_request_files(&repo, PR).await.expect("listed");
    assert_eq!(listed.len(), 250);
    assert_eq!(listed[249].filename, "agents/a249/astrolift.toml");
    assert_eq!(
        listed[0].patch.as_deref(),
        Some("@@ -0,0 +1,2 @@\n+a = 1\n+b = 2")
    );
    let pages = setup
        .fake
        .requests_to("GET", "/repos/octo/agents/pulls/12/files");
    let queries: Vec<_> = pages.iter().filter_map(|r| r.query.clone()).collect();
    assert_eq!(
        queries,
        ["per_page=100", "per_page=100&page=2", "per_page=100&page=3"]
    );
}

#[tokio::test]
async fn a_file_without_a_patch_is_listed_without_one() {
    let setup = setup().await;
    let files = vec![
        FakePullRequestFile::without_patch("logo.png"),
        FakePullRequestFile::modified("a.toml", "@@ -1 +1 @@\n-a = 1\n+a = 2"),
    ];
    setup.fake.add_pull_request(OWNER, REPO, PR, SHA, files);
    let listed = setup
        .installation()
        .pull_request_files(&setup.repo(), PR)
        .await
        .expect("listed");
    assert_eq!(listed[0].patch, None);
    assert_eq!(listed[1].status, "modified");
}

#[tokio::test]
async fn a_next_link_on_another_host_is_not_followed() {
    let setup = with_pull(150).await;
    setup.fake.page_links_to_another_host();
    let error = setup
        .installation()
        .pull_request_files(&setup.repo(), PR)
        .await
        .expect_err("refused");
    assert!(
        error.to_string().contains("not on the API's origin"),
        "{error}"
    );
    // Only the first page was asked for, on the API's host.
    assert_eq!(
        setup
            .fake
            .requests_to("GET", "/repos/octo/agents/pulls")
            .len(),
        1
    );
}

#[tokio::test]
async fn an_unknown_pull_request_is_a_404() {
    let setup = setup().await;
    let error = setup
        .installation()
        .pull_request_reviews(&setup.repo(), 404)
        .await
        .expect_err("unknown");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(404));
}

#[tokio::test]
async fn a_review_is_posted_as_comment_and_listed() {
    let setup = with_pull(1).await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let path = "agents/a000/astrolift.toml";
    let comments = vec![
        ReviewComment::on_new_lines(path, None, 1, "```suggestion\na = 2\n```".to_owned()),
        ReviewComment::on_new_lines(path, Some(1), 2, "```suggestion\nc = 3\n```".to_owned()),
    ];
    let posted = gh
        .create_review(&repo, PR, &review(comments))
        .await
        .expect("posted");
    assert_eq!(posted.commit_id.as_deref(), Some(SHA));
    assert!(posted.by_a_bot());
    let sent = setup
        .fake
        .requests_to("POST", "/repos/octo/agents/pulls/12/reviews");
    let body = sent[0].json();
    assert_eq!(body["event"], "COMMENT");
    assert_eq!(body["comments"][1]["start_line"], 1);
    assert_eq!(body["comments"][1]["side"], "RIGHT");
    let listed = gh.pull_request_reviews(&repo, PR).await.expect("listed");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state.as_deref(), Some("COMMENTED"));
}

#[tokio::test]
async fn a_comment_off_the_diff_gets_githubs_422() {
    let setup = setup().await;
    let patch = "@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 3\n c = 4";
    let files = vec![FakePullRequestFile::modified("a.toml", patch)];
    setup.fake.add_pull_request(OWNER, REPO, PR, SHA, files);
    let (gh, repo) = (setup.installation(), setup.repo());
    let off = ReviewComment::on_new_lines("a.toml", None, 9, "x".to_owned());
    let error = gh
        .create_review(&repo, PR, &review(vec![off]))
        .await
        .expect_err("refused");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(422));
    assert!(
        error.to_string().contains("Line could not be resolved"),
        "{error}"
    );
    // A context line is on the diff; a person's review is not a bot's.
    let context = ReviewComment::on_new_lines("a.toml", None, 3, "x".to_owned());
    gh.create_review(&repo, PR, &review(vec![context]))
        .await
        .expect("on the diff");
    setup.fake.add_review(
        OWNER,
        REPO,
        PR,
        FakeReview::by_a_person("octocat", SHA, "lgtm"),
    );
    let listed = gh.pull_request_reviews(&repo, PR).await.expect("listed");
    let bots: Vec<bool> = listed.iter().map(|r| r.by_a_bot()).collect();
    assert_eq!(bots, [true, false]);
}

#[tokio::test]
async fn more_than_fifty_comments_or_no_body_are_refused_before_sending() {
    let setup = with_pull(1).await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let comment = ReviewComment::on_new_lines("agents/a000/astrolift.toml", None, 1, "x".into());
    let at_limit = review(vec![comment.clone(); COMMENTS_PER_REVIEW]);
    gh.create_review(&repo, PR, &at_limit)
        .await
        .expect("50 are sent");
    let past = review(vec![comment.clone(); COMMENTS_PER_REVIEW + 1]);
    assert!(gh.create_review(&repo, PR, &past).await.is_err());
    let mut no_body = review(vec![comment]);
    no_body.body = " ".to_owned();
    assert!(gh.create_review(&repo, PR, &no_body).await.is_err());
    assert_eq!(
        setup
            .fake
            .requests_to("POST", "/repos/octo/agents/pulls")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_handed_in_token_acts_without_app_credentials() {
    let setup = with_pull(1).await;
    let mut config = GitHubConfig::new(setup.fake.base_url()).expect("config");
    config.retry = super::test_retry_policy();
    let token = SecretString::from(setup.fake.issue_token());
    let gh = Installation::with_token(config, token).expect("a session");
    let listed = gh
        .pull_request_files(&setup.repo(), PR)
        .await
        .expect("listed");
    assert_eq!(listed.len(), 1);
    assert!(
        setup
            .fake
            .requests_to("POST", "/app/installations")
            .is_empty()
    );
    let refused = Installation::with_token(
        GitHubConfig::new(setup.fake.base_url()).expect("config"),
        SecretString::from("ghs_unknown".to_owned()),
    )
    .expect("a session");
    let error = refused
        .pull_request_reviews(&setup.repo(), PR)
        .await
        .expect_err("401");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(401));
}

#[tokio::test]
async fn thirty_pages_are_read_and_a_thirty_first_is_refused() {
    let setup = with_pull(1).await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let review = || FakeReview::by_a_person("octocat", SHA, "lgtm");
    for _ in 0..MAX_PAGES * 100 {
        setup.fake.add_review(OWNER, REPO, PR, review());
    }
    let listed = gh.pull_request_reviews(&repo, PR).await.expect("30 pages");
    assert_eq!(listed.len(), 3000);
    setup.fake.add_review(OWNER, REPO, PR, review());
    let error = gh
        .pull_request_reviews(&repo, PR)
        .await
        .expect_err("31 pages");
    assert!(error.to_string().contains("more than 30 pages"), "{error}");
}

const HEAD: &str = "ABCDEF0123456789ABCDEF0123456789ABCDEF01";

#[tokio::test]
async fn a_pull_request_from_the_repository_itself_is_read_with_its_head_and_base() {
    let setup = setup().await;
    let open = FakePullRequest::open("feature/x", HEAD, "main");
    setup.fake.set_pull_request(OWNER, REPO, PR, open);
    let (gh, repo) = (setup.installation(), setup.repo());
    let pull = gh
        .pull_request(&repo, PR)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(pull.number, PR);
    assert!(
        pull.is_open() && !pull.merged && !pull.is_fork(),
        "{pull:?}"
    );
    assert_eq!(pull.head.sha, HEAD.to_ascii_lowercase());
    assert_eq!(pull.head.git_ref, "feature/x");
    assert_eq!(pull.base.git_ref, "main");
    assert_eq!(pull.base.repo.full_name, "octo/agents");
    assert_eq!(pull.base.repo.id, setup.fake.repo_id(OWNER, REPO));
    assert_eq!(
        pull.head.repo.as_ref().map(|r| r.id),
        Some(pull.base.repo.id)
    );
    assert_eq!(pull.user.login, "mona");
    assert_eq!(
        pull.html_url.as_deref(),
        Some("https://github.com/octo/agents/pull/12")
    );
}

#[tokio::test]
async fn closing_merging_moving_and_forks_are_what_github_answers() {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let read = || async {
        gh.pull_request(&repo, PR)
            .await
            .expect("read")
            .expect("found")
    };
    setup
        .fake
        .set_pull_request(OWNER, REPO, PR, FakePullRequest::open("f", SHA, "main"));
    let moved = "1111111111111111111111111111111111111111";
    setup.fake.set_pull_request_head(OWNER, REPO, PR, moved);
    assert_eq!(read().await.head.sha, moved);

    setup.fake.close_pull_request(OWNER, REPO, PR, false);
    let closed = read().await;
    assert!(!closed.is_open() && !closed.merged, "{closed:?}");
    setup.fake.reopen_pull_request(OWNER, REPO, PR);
    assert!(read().await.is_open());
    setup.fake.close_pull_request(OWNER, REPO, PR, true);
    let merged = read().await;
    assert_eq!((merged.state.as_str(), merged.merged), ("closed", true));

    setup
        .fake
        .set_pull_request_fork(OWNER, REPO, PR, 999, "someone/agents");
    let fork = read().await;
    assert!(fork.is_fork());
    assert_eq!(
        fork.head
            .repo
            .as_ref()
            .map(|r| (r.id, r.full_name.as_str())),
        Some((999, "someone/agents"))
    );
    let mut deleted = FakePullRequest::open("f", SHA, "main");
    deleted.head_repo = FakeHeadRepo::Deleted;
    setup.fake.set_pull_request(OWNER, REPO, PR, deleted);
    let gone = read().await;
    assert!(gone.head.repo.is_none() && gone.is_fork(), "{gone:?}");
}

#[tokio::test]
async fn an_unknown_pull_request_is_none_and_the_answer_has_an_etag() {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    assert_eq!(gh.pull_request(&repo, 404).await.expect("asked"), None);
    setup
        .fake
        .set_pull_request(OWNER, REPO, PR, FakePullRequest::open("f", SHA, "main"));
    let url = format!("{}/repos/{OWNER}/{REPO}/pulls/{PR}", setup.fake.base_url());
    let token = gh.token().await.expect("a token");
    let client = reqwest::Client::new();
    let get = |etag: Option<String>| {
        let mut request = client
            .get(&url)
            .bearer_auth(secrecy::ExposeSecret::expose_secret(&token));
        if let Some(etag) = etag {
            request = request.header("if-none-match", etag);
        }
        request.send()
    };
    let first = get(None).await.expect("answered");
    assert_eq!(first.status().as_u16(), 200);
    let etag = first
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .expect("an ETag");
    let unchanged = get(Some(etag.clone())).await.expect("answered");
    assert_eq!(unchanged.status().as_u16(), 304);
    setup.fake.close_pull_request(OWNER, REPO, PR, false);
    let changed = get(Some(etag)).await.expect("answered");
    assert_eq!(changed.status().as_u16(), 200);
}
