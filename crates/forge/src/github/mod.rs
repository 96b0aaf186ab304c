//! The GitHub REST side, on `octocrab`: App auth, the client, the retry
//! layer, tarballs, check runs (with requested actions), commit comparison, ref lookup,
//! repository installations, collaborators' permissions, pull requests (their state, files
//! and reviews; the App's own opened, found and updated), issue comments with their
//! reactions, and commits through the Git Data API (blobs, trees, commits, branches).
//!
//! ```text
//! let app = GitHubApp::from_env()?;                  // GITHUB_API_URL, GITHUB_APP_ID, key
//! let gh = app.installation(installation_id);        // token fetched once, then cached
//! let run = gh.create_in_progress(&repo, sha, CHECK_RUN_NAME).await?;
//! let tree = gh.tarball(&repo, sha).await?
//!     .read_blocking(move |r| SourceTarball::read(r, &limits)).await?;
//! let status = gh.compare(&repo, registered, pushed).await?;   // ahead | behind | ...
//! let covering = app.repository_installation(&repo).await?;    // None: the App is not installed
//! let sha = gh.commit_sha(&repo, "main").await?;              // None: no such ref
//! let head = gh.ref_head(&repo, "main", Some(etag)).await?;   // NotModified: a 304
//! gh.complete(&repo, run, Conclusion::of(&diagnostics), output).await?;  // or gh.fail_run(..)
//! let who = gh.collaborator_permission(&repo, "mona").await?;  // None: not a collaborator
//! let pull = gh.pull_request(&repo, 7).await?;                // None: no such pull request
//! let files = gh.pull_request_files(&repo, 7).await?;          // with each file's `patch`
//! gh.create_comment_reaction(&repo, comment_id, REACTION_EYES).await?;  // 201 new, 200 again
//! gh.create_review(&repo, 7, &NewReview { .. }).await?;       // event COMMENT, ≤ 50 comments
//! let action = Installation::with_token(config, token)?;      // a workflow's GITHUB_TOKEN
//! let blob = gh.create_blob(&repo, lock_bytes).await?;         // then a tree over the base,
//! let tree = gh.create_tree(&repo, Some(base), &[TreeEntry { .. }]).await?;
//! let commit = gh.create_commit(&repo, "message", &tree, &[base]).await?;
//! match gh.branch_head(&repo, BRANCH).await? {                 // a commit, then the branch
//!     None => gh.create_branch(&repo, BRANCH, &commit).await?,
//!     Some(_) => gh.move_branch(&repo, BRANCH, &commit, true).await?,
//! }
//! let open = gh.find_open_pull_request(&repo, owner, BRANCH).await?;  // None: open one
//! // an error with `is_forbidden()`: the installation has not granted `contents: write`
//! ```

mod app;
mod checks;
mod client;
mod comments;
mod commits;
mod compare;
mod git_data;
mod layers;
mod permissions;
mod pulls;
mod repository;
pub mod retry;
mod tarball;

pub use crate::account::User;
pub use app::{
    AppCredentials, AppJwtClaims, Clock, CredentialsError, InstallationToken, JWT_BACKDATE,
    JWT_LIFETIME, SystemClock, TOKEN_REFRESH_MARGIN,
};
pub use checks::{
    ACCEPT_DRIFT, ANNOTATIONS_PER_REQUEST, Annotation, AnnotationLevel, CHECK_RUN_NAME, CheckRun,
    CheckRunAction, CheckRunOutput, Conclusion, MAX_ANNOTATION_TEXT, MAX_OUTPUT_TEXT,
    MAX_TITLE_CHARS, trim_chars, trim_with_note,
};
pub use client::{
    API_VERSION, DEFAULT_API_URL, DEFAULT_MAX_TARBALL_BYTES, GitHubApp, GitHubConfig, GitHubError,
    Installation, RepoPath,
};
pub use comments::{IssueComment, REACTION_CONTENTS, REACTION_EYES, Reaction};
pub use commits::{HeadAnswer, MAX_ETAG_LEN, RefHead};
pub use compare::CompareStatus;
pub use git_data::{CommitInfo, FileMode, TreeEntry};
pub use permissions::RepositoryPermission;
pub use pulls::{
    COMMENTS_PER_REVIEW, MAX_PAGES, NewReview, PullRequestBase, PullRequestDetails,
    PullRequestFile, PullRequestHead, PullRequestRef, PullRequestRepository, Review, ReviewComment,
    Side,
};
pub use retry::RetryPolicy;
pub use tarball::TarballDownload;
