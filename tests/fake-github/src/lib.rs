//! A fake of the parts of GitHub's REST API the bot uses, for tests.
//!
//! - `POST /app/installations/{id}/access_tokens`: verifies the App JWT
//!   (RS256, against the test key pair in `keys/`), hands out 1-hour tokens;
//! - `GET /repos/{owner}/{repo}/tarball/{ref}`: 302 to `/_codeload/...`,
//!   which serves a GitHub-shaped `tar.gz` built from a fixture directory;
//! - `POST /repos/{owner}/{repo}/check-runs` and `PATCH .../check-runs/{id}`:
//!   validated like GitHub (422 otherwise), state kept, annotations appended,
//!   requested actions (`actions`) kept as the last request set them;
//! - `GET /repos/{owner}/{repo}/compare/{base}...{head}`: `status` (`ahead`,
//!   `behind`, `identical`, `diverged`) over a commit graph the test sets
//!   ([`FakeGitHub::add_commit`]), 404 for an unknown SHA;
//! - `GET /repos/{owner}/{repo}/pulls/{n}` (state, merged, head and base with their
//!   repositories, an `ETag`), `GET .../pulls/{n}/files` and `.../reviews`, paginated
//!   with `Link` headers, and `POST .../pulls/{n}/reviews`, validated like
//!   GitHub (422 `Unprocessable Entity` for a comment off the diff), over
//!   pull requests the test sets ([`FakeGitHub::add_pull_request`],
//!   [`FakeGitHub::set_pull_request`]: closed, merged, moved, from a fork);
//! - `GET /repos/{owner}/{repo}/collaborators/{username}/permission`, over
//!   the roles the test sets ([`FakeGitHub::add_collaborator`]), 404 for
//!   anyone else.
//! - `POST` and `GET /repos/{owner}/{repo}/issues/{n}/comments` (the list paginated), and
//!   `POST /repos/{owner}/{repo}/issues/comments/{id}/reactions` (201 new, 200 again, 422
//!   for content outside GitHub's set), kept for the test ([`FakeGitHub::comments`],
//!   [`FakeGitHub::reactions`]);
//! - `GET /repos/{owner}/{repo}/commits/{ref}`: the commit a ref (or sha) names,
//!   422 `No commit found for SHA` for an unknown ref; with an `ETag`, `304 Not Modified`
//!   for an `If-None-Match` that names it, and `X-RateLimit-*` headers per installation
//!   ([`FakeGitHub::set_rate_limit_remaining`]);
//! - `GET /repos/{owner}/{repo}`: the repository's id (set by the test, or derived from
//!   its name);
//! - `GET /repos/{owner}/{repo}/installation` (App JWT): the installation the
//!   test put the repository in ([`FakeGitHub::install_repo`]), 404 otherwise;
//! - the Git Data API (`POST .../git/blobs`, `.../git/trees`, `.../git/commits`,
//!   `GET .../git/ref/heads/{branch}`, `POST .../git/refs`, `PATCH .../git/refs/heads/{branch}`):
//!   commits made through it are served like [`FakeGitHub::add_repo`]'s, on the same refs
//!   ([`FakeGitHub::branch_head`], [`FakeGitHub::commit`]);
//! - `GET` and `POST /repos/{owner}/{repo}/pulls` (filtered by `state`, `head` and `base`;
//!   422 for a second open pull request of a head) and `PATCH .../pulls/{n}` (title, body,
//!   state), kept for the test ([`FakeGitHub::pull_requests`]). The writes of both answer 403
//!   `Resource not accessible by integration` where the installation has not granted
//!   `contents: write` ([`FakeGitHub::deny_contents_write`]).
//!
//! Any number of repositories can be served ([`FakeGitHub::add_repo`]); adding a
//! ref again moves it to the new commit, as a push does. A repository put in an
//! installation is readable (tarball, commits) only with that installation's
//! tokens: another installation's token gets GitHub's 404.
//!
//! Faults are injected per test ([`Fault`]) and every request is recorded
//! ([`RecordedRequest`]), authorization values redacted.
//!
//! The key pair is a TEST-ONLY fixture (see `keys/README.md`).
#![forbid(unsafe_code)]

mod auth;
mod checks;
mod collaborators;
pub mod comments;
mod commits;
mod compare;
mod faults;
mod git_data;
mod pulls;
mod repos;
mod tarball;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use serde_json::{Value, json};

pub use checks::FakeCheckRun;
pub use comments::{APP_BOT_LOGIN, FakeComment, FakeReaction, REACTION_CONTENTS};
pub use faults::{Fault, FaultKind, RecordedRequest};
pub use git_data::FakeCommit;
pub use pulls::{FakeHeadRepo, FakePullRequest, FakePullRequestFile, FakeReview};

/// The App id the fake accepts JWTs for.
pub const TEST_APP_ID: u64 = 4242;
/// TEST-ONLY private key (PKCS#1 PEM, like the keys GitHub hands out).
pub const TEST_PRIVATE_KEY_PEM: &str = include_str!("../keys/test-app-private-key.pem");
/// The matching public key, which the fake verifies JWTs against.
pub const TEST_PUBLIC_KEY_PEM: &str = include_str!("../keys/test-app-public-key.pem");

/// The examples' organization skill repository ([`FakeGitHub::add_example_skill_repos`]).
pub const EXAMPLE_RUNBOOKS: &str = "example/runbooks";
/// The commit its `main` names.
pub const EXAMPLE_RUNBOOKS_SHA: &str = "5111111111111111111111111111111111111111";
/// The examples' catalogue repository.
pub const EXAMPLE_CATALOGUE: &str = "example/catalogue";
/// The commit its `main` names.
pub const EXAMPLE_CATALOGUE_SHA: &str = "5222222222222222222222222222222222222222";

/// A repository commit the fake can serve.
#[derive(Debug, Clone)]
pub(crate) struct FakeRepo {
    /// A branch name or `refs/...`; empty for a commit made through the Git Data API that no
    /// ref names (it is served by its sha).
    pub git_ref: String,
    pub sha: String,
    pub fixture: PathBuf,
}

/// An installation token the fake issued.
#[derive(Debug, Clone)]
pub(crate) struct IssuedToken {
    pub expires_at: SystemTime,
    /// The installation it was issued for; `None` for a workflow's `GITHUB_TOKEN`.
    pub installation_id: Option<u64>,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub base_url: String,
    /// Where tarball downloads are served from (`base_url` unless moved).
    pub download_base_url: String,
    pub clock_offset: Duration,
    pub installations: Vec<u64>,
    pub tokens: HashMap<String, IssuedToken>,
    pub repos: HashMap<(String, String), Vec<FakeRepo>>,
    pub faults: Vec<Fault>,
    /// Every request answers 503 until then (an outage).
    pub down_until: Option<std::time::Instant>,
    pub requests: Vec<RecordedRequest>,
    pub check_runs: Vec<FakeCheckRun>,
    /// Issue and pull request comments, in order.
    pub comments: Vec<comments::FakeComment>,
    /// Reactions to comments, in order.
    pub reactions: Vec<comments::FakeReaction>,
    /// Parents per commit, per `(owner, repo)`.
    pub commit_graphs: HashMap<(String, String), compare::CommitGraph>,
    /// Pull requests by `(owner, repo, number)`.
    pub pull_requests: HashMap<(String, String, u64), FakePullRequest>,
    /// Where `Link` headers point (`base_url` unless moved).
    pub link_base_url: String,
    /// Collaborators' roles by `(owner, repo, lowercased login)`.
    pub collaborators: HashMap<(String, String, String), String>,
    /// The installation that covers a repository, by `(owner, repo)`.
    pub repo_installations: HashMap<(String, String), u64>,
    /// Requests left this hour per installation (0: a token of no installation), as the
    /// commit answers' `X-RateLimit-Remaining` says; [`RATE_LIMIT_PER_HOUR`] until used.
    pub rate_limit_remaining: HashMap<u64, u64>,
    /// Repository ids a test set, by `(owner, repo)` (others are derived from the name).
    pub repo_ids: HashMap<(String, String), u64>,
    /// Repositories `GET /repos/{owner}/{repo}` says are private.
    pub private_repos: HashSet<(String, String)>,
    /// The Git objects made through the Git Data API, by `(owner, repo)`.
    pub git: HashMap<(String, String), git_data::GitObjects>,
    /// Repositories whose installation has not granted `contents: write`.
    pub contents_write_denied: HashSet<(String, String)>,
    /// Where the files of commits made through the Git Data API are written (made on the
    /// first one, removed with the server).
    pub scratch_dir: Option<PathBuf>,
}

/// An installation's REST budget an hour, as GitHub's `X-RateLimit-Limit` says.
pub const RATE_LIMIT_PER_HOUR: u64 = 5_000;

impl State {
    /// The fake's idea of now: the real time plus the test's offset.
    pub fn now(&self) -> SystemTime {
        SystemTime::now() + self.clock_offset
    }
}

/// Shared state of one fake server.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shared(Arc<Mutex<State>>);

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked mid-request leaves the state usable.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A running fake GitHub. Dropping it stops the server.
#[derive(Debug)]
pub struct FakeGitHub {
    base_url: String,
    state: Shared,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        self.server.abort();
        if let Some(dir) = self.state.lock().scratch_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl FakeGitHub {
    /// Starts on a free port of 127.0.0.1.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Starts on `addr`.
    pub async fn start_on(addr: SocketAddr) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let state = Shared::default();
        {
            let mut state = state.lock();
            state.base_url = base_url.clone();
            state.download_base_url = base_url.clone();
            state.link_base_url = base_url.clone();
        }
        let app = router(state.clone());
        let server = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                eprintln!("fake GitHub stopped: {error}");
            }
        });
        Ok(Self {
            base_url,
            state,
            server,
        })
    }

    /// `http://127.0.0.1:PORT`, the value for `GITHUB_API_URL`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn app_id(&self) -> u64 {
        TEST_APP_ID
    }

    pub fn private_key_pem(&self) -> &'static str {
        TEST_PRIVATE_KEY_PEM
    }

    /// Makes installation `id` known (others answer 404).
    pub fn add_installation(&self, id: u64) {
        self.state.lock().installations.push(id);
    }

    /// Serves `fixture_dir` as `owner/repo` at `git_ref` (a branch name or
    /// `refs/...`) and at its commit `sha` (40 hex digits).
    pub fn add_repo(
        &self,
        owner: &str,
        repo: &str,
        git_ref: &str,
        sha: &str,
        fixture_dir: impl Into<PathBuf>,
    ) {
        let entry = FakeRepo {
            git_ref: git_ref.to_owned(),
            sha: sha.to_owned(),
            fixture: fixture_dir.into(),
        };
        let key = (owner.to_owned(), repo.to_owned());
        self.state.lock().repos.entry(key).or_default().push(entry);
    }

    /// Puts `owner/repo` in installation `id` (made known too): `GET
    /// /repos/{owner}/{repo}/installation` answers it, and only its tokens read the
    /// repository. Repositories in no installation are readable with any token.
    pub fn install_repo(&self, id: u64, owner: &str, repo: &str) {
        let mut state = self.state.lock();
        if !state.installations.contains(&id) {
            state.installations.push(id);
        }
        let key = (owner.to_owned(), repo.to_owned());
        state.repo_installations.insert(key, id);
    }

    /// Makes `GET /repos/{owner}/{repo}` answer `id` as the repository's id (otherwise
    /// [`repo_id`](Self::repo_id) derives one from its name).
    pub fn set_repo_id(&self, owner: &str, repo: &str, id: u64) {
        let key = (owner.to_owned(), repo.to_owned());
        self.state.lock().repo_ids.insert(key, id);
    }

    /// Makes `GET /repos/{owner}/{repo}` say `private`.
    pub fn set_private(&self, owner: &str, repo: &str, private: bool) {
        let key = (owner.to_owned(), repo.to_owned());
        let mut state = self.state.lock();
        if private {
            state.private_repos.insert(key);
        } else {
            state.private_repos.remove(&key);
        }
    }

    /// The id `GET /repos/{owner}/{repo}` answers for `owner/repo`.
    pub fn repo_id(&self, owner: &str, repo: &str) -> u64 {
        let key = (owner.to_owned(), repo.to_owned());
        let set = self.state.lock().repo_ids.get(&key).copied();
        set.unwrap_or_else(|| repos::derived_id(owner, repo))
    }

    /// Sets what installation `id` has left of its hourly budget: the next commit answers
    /// say `X-RateLimit-Remaining` from there.
    pub fn set_rate_limit_remaining(&self, id: u64, remaining: u64) {
        let remaining = remaining.min(RATE_LIMIT_PER_HOUR);
        self.state.lock().rate_limit_remaining.insert(id, remaining);
    }

    /// Serves the examples' skill repositories (`tests/fake-github/skill-repos/`), which their
    /// catalogue and organization skills name: [`EXAMPLE_RUNBOOKS`] and
    /// [`EXAMPLE_CATALOGUE`] at `main`, each in an installation of its own (not the agent
    /// repository's). The stores' side is `astrolift_store::testing::register_example_skill_sources`.
    pub fn add_example_skill_repos(&self) {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skill-repos");
        for (full_name, sha, folder, installation) in [
            (EXAMPLE_RUNBOOKS, EXAMPLE_RUNBOOKS_SHA, "runbooks", 9_001),
            (EXAMPLE_CATALOGUE, EXAMPLE_CATALOGUE_SHA, "catalogue", 9_002),
        ] {
            let (owner, repo) = full_name.split_once('/').unwrap_or((full_name, ""));
            self.add_repo(owner, repo, "main", sha, dir.join(folder));
            self.install_repo(installation, owner, repo);
        }
    }

    /// How many tarballs of `owner/repo` were downloaded (requests to the download URL).
    pub fn tarball_downloads(&self, owner: &str, repo: &str) -> usize {
        let prefix = format!("/_codeload/{owner}/{repo}/");
        self.requests_to("GET", &prefix).len()
    }

    /// Adds commit `sha` with its `parents` to `owner/repo`'s commit graph
    /// (a root commit has none), which the compare endpoint answers from.
    pub fn add_commit(&self, owner: &str, repo: &str, sha: &str, parents: &[&str]) {
        let key = (owner.to_owned(), repo.to_owned());
        let parents = parents.iter().map(|p| (*p).to_owned()).collect();
        let mut state = self.state.lock();
        let graph = state.commit_graphs.entry(key).or_default();
        graph.insert(sha.to_owned(), parents);
    }

    /// Opens pull request `number` of `owner/repo` with head `head_sha` and
    /// these files (replacing one opened before under that number, reviews kept).
    pub fn add_pull_request(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        head_sha: &str,
        files: Vec<FakePullRequestFile>,
    ) {
        let key = (owner.to_owned(), repo.to_owned(), number);
        let mut state = self.state.lock();
        let pull = state.pull_requests.entry(key).or_default();
        pull.head_sha = head_sha.to_owned();
        pull.files = files;
    }

    /// Makes `login` a collaborator of `owner/repo` with `role` (`admin`,
    /// `maintain`, `write`, `triage` or `read`), replacing the role it had; others answer
    /// 404.
    pub fn add_collaborator(&self, owner: &str, repo: &str, login: &str, role: &str) {
        let key = (owner.to_owned(), repo.to_owned(), login.to_lowercase());
        self.state.lock().collaborators.insert(key, role.to_owned());
    }

    /// `login` is no longer a collaborator of `owner/repo`: its permission answers 404.
    pub fn remove_collaborator(&self, owner: &str, repo: &str, login: &str) {
        let key = (owner.to_owned(), repo.to_owned(), login.to_lowercase());
        self.state.lock().collaborators.remove(&key);
    }

    /// Sets pull request `number` of `owner/repo` to `pull` (its state, head, base, files
    /// and reviews), replacing one set before under that number.
    pub fn set_pull_request(&self, owner: &str, repo: &str, number: u64, pull: FakePullRequest) {
        let key = (owner.to_owned(), repo.to_owned(), number);
        self.state.lock().pull_requests.insert(key, pull);
    }

    /// Pull request `number` of `owner/repo` as the fake holds it.
    pub fn pull_request(&self, owner: &str, repo: &str, number: u64) -> Option<FakePullRequest> {
        let key = (owner.to_owned(), repo.to_owned(), number);
        self.state.lock().pull_requests.get(&key).cloned()
    }

    /// Closes pull request `number` (merged or not); nothing when there is none.
    pub fn close_pull_request(&self, owner: &str, repo: &str, number: u64, merged: bool) {
        self.edit_pull_request(owner, repo, number, |pull| {
            pull.state = "closed".to_owned();
            pull.merged = merged;
        });
    }

    /// Reopens pull request `number` (closed and not merged); nothing when there is none.
    pub fn reopen_pull_request(&self, owner: &str, repo: &str, number: u64) {
        self.edit_pull_request(owner, repo, number, |pull| {
            pull.state = "open".to_owned();
            pull.merged = false;
        });
    }

    /// Moves pull request `number`'s head to `sha`, as a push to its branch does.
    pub fn set_pull_request_head(&self, owner: &str, repo: &str, number: u64, sha: &str) {
        self.edit_pull_request(owner, repo, number, |pull| {
            sha.clone_into(&mut pull.head_sha)
        });
    }

    /// Makes pull request `number` come from a fork: `head_full_name` with `head_repo_id`
    /// (another id than the base repository's).
    pub fn set_pull_request_fork(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        head_repo_id: u64,
        head_full_name: &str,
    ) {
        self.edit_pull_request(owner, repo, number, |pull| {
            pull.head_repo = FakeHeadRepo::Fork {
                id: head_repo_id,
                full_name: head_full_name.to_owned(),
            };
        });
    }

    fn edit_pull_request(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        edit: impl FnOnce(&mut FakePullRequest),
    ) {
        let key = (owner.to_owned(), repo.to_owned(), number);
        if let Some(pull) = self.state.lock().pull_requests.get_mut(&key) {
            edit(pull);
        }
    }

    /// Seeds a comment by a person, `login`, on issue or pull request `number` of
    /// `owner/repo` (as if written on GitHub) and returns its id; the list of the issue's
    /// comments answers it.
    pub fn add_issue_comment(
        &self,
        owner: &str,
        repo: &str,
        number: u64,
        login: &str,
        body: &str,
    ) -> u64 {
        let comment = FakeComment {
            id: 0,
            owner: owner.to_owned(),
            repo: repo.to_owned(),
            number,
            body: body.to_owned(),
            user_login: login.to_owned(),
            user_type: "User".to_owned(),
        };
        comments::push_comment(&mut self.state.lock(), comment)
    }

    /// Adds `review` to a pull request opened before (its id is assigned).
    pub fn add_review(&self, owner: &str, repo: &str, number: u64, mut review: FakeReview) {
        let key = (owner.to_owned(), repo.to_owned(), number);
        let mut state = self.state.lock();
        review.id = 6_000
            + state
                .pull_requests
                .values()
                .map(|p| p.reviews.len())
                .sum::<usize>() as u64;
        if let Some(pull) = state.pull_requests.get_mut(&key) {
            pull.reviews.push(review);
        }
    }

    /// The reviews of a pull request, in creation order.
    pub fn reviews(&self, owner: &str, repo: &str, number: u64) -> Vec<FakeReview> {
        let key = (owner.to_owned(), repo.to_owned(), number);
        let state = self.state.lock();
        state
            .pull_requests
            .get(&key)
            .map(|pull| pull.reviews.clone())
            .unwrap_or_default()
    }

    /// Makes `Link` headers point at `http://localhost:PORT` (the same server
    /// under another host name): a client must not follow them with its token.
    pub fn page_links_to_another_host(&self) {
        let mut state = self.state.lock();
        state.link_base_url = state.base_url.replace("127.0.0.1", "localhost");
    }

    /// Issues an installation token, as GitHub Actions hands one to a
    /// workflow (`GITHUB_TOKEN`), valid for an hour.
    pub fn issue_token(&self) -> String {
        let mut state = self.state.lock();
        let token = format!("ghs_fakeactions{:04}", state.tokens.len());
        let expires_at = state.now() + Duration::from_secs(3600);
        let issued = IssuedToken {
            expires_at,
            installation_id: None,
        };
        state.tokens.insert(token.clone(), issued);
        token
    }

    /// An outage: every request answers 503 for `duration` from now.
    pub fn down_for(&self, duration: Duration) {
        self.state.lock().down_until = Some(std::time::Instant::now() + duration);
    }

    /// Queues a fault; faults apply in the order injected.
    pub fn inject(&self, fault: Fault) {
        self.state.lock().faults.push(fault);
    }

    /// GitHub recovers: the faults not yet applied are dropped.
    pub fn clear_faults(&self) {
        self.state.lock().faults.clear();
    }

    /// Redirects tarball downloads to `http://localhost:PORT` (the same
    /// server under another host name), as github.com sends them to
    /// codeload.github.com: the client must not send its token there.
    pub fn serve_downloads_from_another_host(&self) {
        let mut state = self.state.lock();
        state.download_base_url = state.base_url.replace("127.0.0.1", "localhost");
    }

    /// Revokes every installation token issued so far (as when an
    /// installation is suspended and restored).
    pub fn revoke_tokens(&self) {
        self.state.lock().tokens.clear();
    }

    /// Moves the fake's clock (token expiry, JWT checks) forward.
    pub fn advance_clock(&self, by: Duration) {
        self.state.lock().clock_offset += by;
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.lock().requests.clone()
    }

    /// Requests whose path starts with `prefix`.
    pub fn requests_to(&self, method: &str, prefix: &str) -> Vec<RecordedRequest> {
        let requests = self.requests();
        requests
            .into_iter()
            .filter(|r| r.method == method && r.path.starts_with(prefix))
            .collect()
    }

    /// Every check run, with its full state.
    pub fn check_runs(&self) -> Vec<FakeCheckRun> {
        self.state.lock().check_runs.clone()
    }

    /// Every issue or pull request comment, in order: those created through the API
    /// (by the App's bot, [`APP_BOT_LOGIN`], or a workflow's token) and those a test
    /// seeded ([`FakeGitHub::add_issue_comment`]).
    pub fn comments(&self) -> Vec<comments::FakeComment> {
        self.state.lock().comments.clone()
    }

    /// Every reaction left on a comment, in order (a repeated one only once).
    pub fn reactions(&self) -> Vec<FakeReaction> {
        self.state.lock().reactions.clone()
    }

    /// `owner/repo`'s installation has not granted `contents: write`: the Git Data writes and
    /// the pull-request writes answer 403 `Resource not accessible by integration`; reads
    /// still work.
    pub fn deny_contents_write(&self, owner: &str, repo: &str) {
        let key = (owner.to_owned(), repo.to_owned());
        self.state.lock().contents_write_denied.insert(key);
    }

    /// Grants `contents: write` again (the default).
    pub fn allow_contents_write(&self, owner: &str, repo: &str) {
        let key = (owner.to_owned(), repo.to_owned());
        self.state.lock().contents_write_denied.remove(&key);
    }

    /// The commit branch `branch` of `owner/repo` points at: set by
    /// [`add_repo`](Self::add_repo) or through the Git Data API, whichever was last.
    pub fn branch_head(&self, owner: &str, repo: &str, branch: &str) -> Option<String> {
        git_data::branch_head(&self.state.lock(), owner, repo, branch)
    }

    /// Commit `sha` of `owner/repo` with its tree's files: one made through the Git Data API,
    /// or one [`add_repo`](Self::add_repo) serves (read from its fixture); `None` for an
    /// unknown one (or a fixture that cannot be read).
    pub fn commit(&self, owner: &str, repo: &str, sha: &str) -> Option<FakeCommit> {
        git_data::inspect_commit(&mut self.state.lock(), owner, repo, sha)
            .ok()
            .flatten()
    }

    /// The pull requests of `owner/repo` by number, lowest first: those a test set and those
    /// created through the API.
    pub fn pull_requests(&self, owner: &str, repo: &str) -> Vec<(u64, FakePullRequest)> {
        let state = self.state.lock();
        let mut pulls: Vec<(u64, FakePullRequest)> = state
            .pull_requests
            .iter()
            .filter(|((o, r, _), _)| o == owner && r == repo)
            .map(|((_, _, number), pull)| (*number, pull.clone()))
            .collect();
        pulls.sort_by_key(|(number, _)| *number);
        pulls
    }
}

fn router(state: Shared) -> Router {
    Router::new()
        .route(
            "/app/installations/{id}/access_tokens",
            post(auth::access_token),
        )
        .route(
            "/repos/{owner}/{repo}/tarball/{*git_ref}",
            get(tarball::redirect),
        )
        .route(
            "/_codeload/{owner}/{repo}/legacy.tar.gz/{sha}",
            get(tarball::download),
        )
        .route("/repos/{owner}/{repo}/check-runs", post(checks::create))
        .route(
            "/repos/{owner}/{repo}/compare/{basehead}",
            get(compare::compare),
        )
        .route(
            "/repos/{owner}/{repo}/check-runs/{id}",
            patch(checks::update),
        )
        .route(
            "/repos/{owner}/{repo}/commits/{*git_ref}",
            get(commits::commit),
        )
        .route("/repos/{owner}/{repo}", get(repos::repository))
        .route(
            "/repos/{owner}/{repo}/installation",
            get(commits::repository_installation),
        )
        .route(
            "/repos/{owner}/{repo}/collaborators/{username}/permission",
            get(collaborators::permission),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/comments",
            get(comments::list).post(comments::create),
        )
        .route(
            "/repos/{owner}/{repo}/issues/comments/{id}/reactions",
            post(comments::react),
        )
        .route(
            "/repos/{owner}/{repo}/git/blobs",
            post(git_data::create_blob),
        )
        .route(
            "/repos/{owner}/{repo}/git/trees",
            post(git_data::create_tree),
        )
        .route(
            "/repos/{owner}/{repo}/git/commits",
            post(git_data::create_commit),
        )
        .route(
            "/repos/{owner}/{repo}/git/ref/{*git_ref}",
            get(git_data::get_ref),
        )
        .route("/repos/{owner}/{repo}/git/refs", post(git_data::create_ref))
        .route(
            "/repos/{owner}/{repo}/git/refs/{*git_ref}",
            patch(git_data::update_ref),
        )
        .route(
            "/repos/{owner}/{repo}/pulls",
            get(pulls::list_pulls).post(pulls::create_pull),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}",
            get(pulls::pull_request).patch(pulls::update_pull),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/files",
            get(pulls::files),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/reviews",
            get(pulls::reviews).post(pulls::create_review),
        )
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            faults::record_and_inject,
        ))
        .with_state(state)
}

async fn not_found() -> Response {
    github_error(
        StatusCode::NOT_FOUND,
        "Not Found",
        "https://docs.github.com/rest",
    )
}

/// GitHub's error shape: `{"message", "documentation_url", "status"}`.
pub(crate) fn github_error(status: StatusCode, message: &str, documentation_url: &str) -> Response {
    let body = json!({
        "message": message,
        "documentation_url": documentation_url,
        "status": status.as_u16().to_string(),
    });
    json_response(status, body, HeaderMap::new())
}

pub(crate) fn json_response(status: StatusCode, body: Value, mut headers: HeaderMap) -> Response {
    headers.insert(
        "content-type",
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    headers.insert(
        "x-github-media-type",
        HeaderValue::from_static("github.v3; format=json"),
    );
    (status, headers, body.to_string()).into_response()
}

/// The installation token of `Authorization: Bearer|token <token>`, if the
/// fake issued it and it has not expired.
pub(crate) fn valid_token(state: &State, headers: &HeaderMap) -> bool {
    let Some(token) = bearer(headers) else {
        return false;
    };
    let now = state.now();
    state
        .tokens
        .get(token)
        .is_some_and(|issued| issued.expires_at > now)
}

/// GitHub's answer when the caller's token may not read `owner/repo`: 401 for a token the
/// fake did not issue (or that expired), 404 for a repository in another installation than
/// the token's (GitHub hides what a token cannot see); `None` when it may.
pub(crate) fn repo_refusal(
    state: &State,
    headers: &HeaderMap,
    owner: &str,
    repo: &str,
    docs: &str,
) -> Option<Response> {
    if !valid_token(state, headers) {
        return Some(bad_credentials());
    }
    let key = (owner.to_owned(), repo.to_owned());
    let covering = *state.repo_installations.get(&key)?;
    let issued_for = bearer(headers)
        .and_then(|token| state.tokens.get(token))
        .and_then(|issued| issued.installation_id);
    issued_for
        .filter(|id| *id != covering)
        .map(|_| github_error(StatusCode::NOT_FOUND, "Not Found", docs))
}

/// [`repo_refusal`], then GitHub's 403 for a write to a repository whose installation has not
/// granted `contents: write` ([`FakeGitHub::deny_contents_write`]).
pub(crate) fn write_refusal(
    state: &State,
    headers: &HeaderMap,
    owner: &str,
    repo: &str,
    docs: &str,
) -> Option<Response> {
    if let Some(refused) = repo_refusal(state, headers, owner, repo, docs) {
        return Some(refused);
    }
    let key = (owner.to_owned(), repo.to_owned());
    state.contents_write_denied.contains(&key).then(|| {
        let message = "Resource not accessible by integration";
        github_error(StatusCode::FORBIDDEN, message, docs)
    })
}

/// GitHub's `422 Validation Failed` with its `errors` (each `{resource, field, code}`, or
/// `{resource, code: "custom", message}`).
pub(crate) fn validation_failed(errors: Value, docs: &str) -> Response {
    let body = json!({
        "message": "Validation Failed",
        "errors": errors,
        "documentation_url": docs,
        "status": "422",
    });
    json_response(StatusCode::UNPROCESSABLE_ENTITY, body, HeaderMap::new())
}

pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get("authorization")?.to_str().ok()?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("token "))
        .map(str::trim)
}

pub(crate) fn bad_credentials() -> Response {
    github_error(
        StatusCode::UNAUTHORIZED,
        "Bad credentials",
        "https://docs.github.com/rest",
    )
}
