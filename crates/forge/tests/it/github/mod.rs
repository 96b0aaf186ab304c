//! The REST client against the fake GitHub (`astrolift-fake-github`).

mod auth;
mod checks;
mod comments;
mod commits;
mod compare;
mod faults;
mod git_data;
mod permissions;
mod pulls;
mod tarball;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use astrolift_fake_github::FakeGitHub;
use astrolift_forge::github::{
    AppCredentials, Clock, GitHubApp, GitHubConfig, Installation, RepoPath, RetryPolicy,
};
use secrecy::SecretString;

pub const INSTALLATION: u64 = 77;
pub const OWNER: &str = "octo";
pub const REPO: &str = "agents";
pub const SHA: &str = "8f3c2a1b9d0e4f5a6b7c8d9e0f1a2b3c4d5e6f70";

/// A clock the test moves forward.
#[derive(Debug, Default)]
pub struct TestClock {
    offset: Mutex<Duration>,
}

impl TestClock {
    pub fn advance(&self, by: Duration) {
        let mut offset = self.offset.lock().unwrap_or_else(|p| p.into_inner());
        *offset += by;
    }
}

impl Clock for TestClock {
    fn now(&self) -> SystemTime {
        SystemTime::now() + *self.offset.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running fake, an App pointed at it, and the test clock.
pub struct Setup {
    pub fake: FakeGitHub,
    pub app: GitHubApp,
    pub clock: Arc<TestClock>,
}

impl Setup {
    pub fn installation(&self) -> Installation {
        self.app.installation(INSTALLATION)
    }

    pub fn repo(&self) -> RepoPath {
        RepoPath::parse(&format!("{OWNER}/{REPO}")).expect("a valid repository name")
    }
}

/// Retries quick enough for tests, with room for a 1 s `retry-after`.
pub fn test_retry_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_total_wait: Duration::from_secs(3),
    }
}

pub fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/fixtures")
        .join(name)
}

/// A setup with one check run created `in_progress`: the installation, the
/// repository and the run's id.
pub async fn with_run() -> (Setup, Installation, RepoPath, u64) {
    let setup = setup().await;
    let gh = setup.installation();
    let repo = setup.repo();
    let id = gh
        .create_in_progress(&repo, SHA, astrolift_forge::github::CHECK_RUN_NAME)
        .await
        .expect("created");
    (setup, gh, repo, id)
}

pub async fn setup() -> Setup {
    setup_with(|_| {}).await
}

pub async fn setup_with(configure: impl FnOnce(&mut GitHubConfig)) -> Setup {
    let fake = FakeGitHub::start().await.expect("the fake GitHub starts");
    fake.add_installation(INSTALLATION);
    fake.add_repo(OWNER, REPO, "main", SHA, fixture("one-agent"));
    let clock = Arc::new(TestClock::default());
    let mut config = GitHubConfig::new(fake.base_url()).expect("a valid base URL");
    config.retry = test_retry_policy();
    config.clock = clock.clone();
    configure(&mut config);
    let key = SecretString::from(fake.private_key_pem().to_owned());
    let credentials = AppCredentials::new(fake.app_id(), key).expect("the test key loads");
    let app = GitHubApp::new(config, credentials).expect("the client builds");
    Setup { fake, app, clock }
}

/// The client's futures can be spawned on a multi-threaded runtime.
#[allow(dead_code, clippy::let_underscore_future)]
fn futures_are_send(gh: Installation, repo: RepoPath) {
    fn send<T: Send>(_: T) {}
    use astrolift_forge::github::{CheckRunOutput, Conclusion};
    send(gh.token());
    send(gh.tarball(&repo, SHA));
    send(gh.create_in_progress(&repo, SHA, "Astrolift"));
    send(gh.complete(&repo, 1, Conclusion::Success, CheckRunOutput::default()));
    send(gh.fail_run(&repo, 1, "why"));
    send(gh.pull_request_files(&repo, 1));
    send(gh.pull_request_reviews(&repo, 1));
    send(gh.pull_request(&repo, 1));
    send(gh.issue_comments(&repo, 1));
    send(gh.create_comment_reaction(&repo, 1, "eyes"));
    send(gh.create_blob(&repo, b"x"));
    send(gh.create_tree(&repo, Some(SHA), &[]));
    send(gh.create_commit(&repo, "m", SHA, &[SHA]));
    send(gh.branch_head(&repo, "main"));
    send(gh.create_branch(&repo, "b", SHA));
    send(gh.move_branch(&repo, "b", SHA, false));
    send(gh.commit_info(&repo, SHA));
    send(gh.find_open_pull_request(&repo, "octo", "b"));
    send(gh.create_pull_request(&repo, "t", "b", "main", "body"));
    send(gh.update_pull_request(&repo, 1, None, Some("body")));
    let review = astrolift_forge::github::NewReview {
        commit_id: SHA.to_owned(),
        body: "b".to_owned(),
        comments: Vec::new(),
    };
    send(async move { gh.create_review(&repo, 1, &review).await });
}
