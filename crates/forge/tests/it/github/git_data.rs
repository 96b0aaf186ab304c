//! Commits through the Git Data API against the fake: a blob, a tree over the base commit's
//! tree, a commit, a branch created and read back (its tarball has the new file and keeps the
//! others), moved forward or by force only; the App's pull request of the branch opened,
//! found and updated; GitHub's 422 for a branch that exists and 403 where the installation
//! has not granted `contents: write`.

use astrolift_forge::github::{FileMode, GitHubError, Installation, RepoPath, TreeEntry};
use astrolift_manifest::Limits;
use astrolift_manifest::tree::SourceTree;
use astrolift_package::SourceTarball;

use super::{OWNER, REPO, SHA, Setup, setup};

const BRANCH: &str = "astrolift/lock-update";
const LOCK: &str = "astrolift.lock";

/// A commit of `astrolift.lock` with `text` over `base` (a commit), with `base` as its parent.
async fn commit_lock(gh: &Installation, repo: &RepoPath, base: &str, text: &str) -> String {
    let blob = gh.create_blob(repo, text.as_bytes()).await.expect("a blob");
    let entry = TreeEntry {
        path: LOCK.to_owned(),
        mode: FileMode::Regular,
        blob_sha: blob,
    };
    let tree = gh
        .create_tree(repo, Some(base), &[entry])
        .await
        .expect("a tree");
    gh.create_commit(repo, "Update astrolift.lock", &tree, &[base])
        .await
        .expect("a commit")
}

/// The paths and the lock file of the tarball of `git_ref`.
async fn tarball(gh: &Installation, repo: &RepoPath, git_ref: &str) -> (Vec<String>, String) {
    let download = gh.tarball(repo, git_ref).await.expect("download starts");
    let tree = download
        .read_blocking(|reader| SourceTarball::read(reader, &Limits::DEFAULT))
        .await
        .expect("the reader task runs")
        .expect("a GitHub-shaped tarball");
    let paths = tree.entries().iter().map(|e| e.path.clone()).collect();
    let lock = tree
        .read(LOCK, 1024)
        .map(|b| b.into_owned())
        .unwrap_or_default();
    (paths, String::from_utf8_lossy(&lock).into_owned())
}

/// A setup with [`BRANCH`] created at a commit of the lock over the fixture's commit: the
/// installation, the repository and that commit.
async fn on_branch() -> (Setup, Installation, RepoPath, String) {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let commit = commit_lock(&gh, &repo, SHA, "1").await;
    gh.create_branch(&repo, BRANCH, &commit)
        .await
        .expect("created");
    (setup, gh, repo, commit)
}

fn status(error: &GitHubError) -> Option<u16> {
    error.status().map(|s| s.as_u16())
}

#[tokio::test]
async fn a_commit_made_through_git_data_is_on_the_new_branch_with_the_other_files() {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    assert_eq!(gh.branch_head(&repo, BRANCH).await.expect("asked"), None);
    assert_eq!(
        gh.branch_head(&repo, "main").await.expect("asked"),
        Some(SHA.to_owned())
    );

    let commit = commit_lock(&gh, &repo, SHA, "version = 1\n").await;
    gh.create_branch(&repo, BRANCH, &commit)
        .await
        .expect("created");
    assert_eq!(
        gh.branch_head(&repo, BRANCH).await.expect("asked"),
        Some(commit.clone())
    );
    assert_eq!(
        setup.fake.branch_head(OWNER, REPO, BRANCH),
        Some(commit.clone())
    );

    let (paths, lock) = tarball(&gh, &repo, BRANCH).await;
    assert_eq!(lock, "version = 1\n");
    assert!(
        paths.iter().any(|p| p == "agents/support/astrolift.toml"),
        "{paths:?}"
    );
    assert!(
        paths
            .iter()
            .any(|p| p == "agents/support/prompts/system.md"),
        "{paths:?}"
    );

    let info = gh.commit_info(&repo, &commit).await.expect("described");
    assert_eq!(info.sha, commit);
    assert_eq!(info.parents, [SHA]);
    let age = jiff::Timestamp::now().duration_since(info.date);
    assert!(age.as_secs() < 600, "committed now: {}", info.date);
    let made = setup.fake.commit(OWNER, REPO, &commit).expect("kept");
    assert_eq!(made.message, "Update astrolift.lock");
    assert_eq!(made.files[LOCK], b"version = 1\n");
    assert!(made.files.contains_key("agents/support/astrolift.toml"));

    let base = gh.commit_info(&repo, SHA).await.expect("described");
    assert!(base.parents.is_empty());
    let unknown = gh
        .commit_info(&repo, "0123456789012345678901234567890123456789")
        .await
        .expect_err("no such commit");
    assert_eq!(status(&unknown), Some(422));
}

#[tokio::test]
async fn a_branch_moves_forward_and_elsewhere_only_by_force() {
    let (setup, gh, repo, first) = on_branch().await;

    let second = commit_lock(&gh, &repo, &first, "2").await;
    gh.move_branch(&repo, BRANCH, &second, false)
        .await
        .expect("a fast forward");
    assert_eq!(
        gh.branch_head(&repo, BRANCH).await.expect("asked"),
        Some(second.clone())
    );

    // A new lock over the base again: not a descendant of the branch's head.
    let rebuilt = commit_lock(&gh, &repo, SHA, "3").await;
    let refused = gh
        .move_branch(&repo, BRANCH, &rebuilt, false)
        .await
        .expect_err("not a fast forward");
    assert_eq!(status(&refused), Some(422));
    assert!(
        refused.to_string().contains("Update is not a fast forward"),
        "{refused}"
    );
    gh.move_branch(&repo, BRANCH, &rebuilt, true)
        .await
        .expect("forced");
    let (_, lock) = tarball(&gh, &repo, &rebuilt).await;
    assert_eq!(lock, "3");
    assert_eq!(setup.fake.branch_head(OWNER, REPO, BRANCH), Some(rebuilt));

    let missing = gh
        .move_branch(&repo, "nowhere", &second, true)
        .await
        .expect_err("no such branch");
    assert_eq!(status(&missing), Some(422));
}

#[tokio::test]
async fn creating_a_branch_that_exists_is_a_422() {
    let (_setup, gh, repo, commit) = on_branch().await;
    let again = gh
        .create_branch(&repo, BRANCH, &commit)
        .await
        .expect_err("exists");
    assert_eq!(status(&again), Some(422));
    assert!(
        again.to_string().contains("Reference already exists"),
        "{again}"
    );
    assert!(!again.is_forbidden());
    let main = gh
        .create_branch(&repo, "main", &commit)
        .await
        .expect_err("exists");
    assert_eq!(status(&main), Some(422));
    let bad = gh
        .create_branch(&repo, "../main", &commit)
        .await
        .expect_err("not a branch name");
    assert_eq!(status(&bad), None);
}

#[tokio::test]
async fn the_branchs_pull_request_is_opened_found_and_updated() {
    let (setup, gh, repo, commit) = on_branch().await;
    assert_eq!(
        gh.find_open_pull_request(&repo, OWNER, BRANCH)
            .await
            .expect("asked"),
        None
    );

    let opened = gh
        .create_pull_request(&repo, "Update skills", BRANCH, "main", "dates: 1")
        .await
        .expect("opened");
    assert_eq!(opened.head_sha, commit);
    assert_eq!(opened.body.as_deref(), Some("dates: 1"));
    assert_eq!(
        opened.html_url,
        format!("https://github.com/{OWNER}/{REPO}/pull/{}", opened.number)
    );
    let again = gh
        .create_pull_request(&repo, "Update skills", BRANCH, "main", "dates: 1")
        .await
        .expect_err("one is open");
    assert_eq!(status(&again), Some(422));
    assert!(
        again.to_string().contains("A pull request already exists"),
        "{again}"
    );

    let found = gh
        .find_open_pull_request(&repo, OWNER, BRANCH)
        .await
        .expect("asked");
    assert_eq!(found.as_ref(), Some(&opened));
    let elsewhere = gh
        .find_open_pull_request(&repo, "someone", BRANCH)
        .await
        .expect("asked");
    assert_eq!(elsewhere, None);

    // A second commit moves the branch, and the pull request with it.
    let second = commit_lock(&gh, &repo, &commit, "2").await;
    gh.move_branch(&repo, BRANCH, &second, true)
        .await
        .expect("moved");
    let updated = gh
        .update_pull_request(&repo, opened.number, None, Some("dates: 2"))
        .await
        .expect("updated");
    assert_eq!(updated.body.as_deref(), Some("dates: 2"));
    assert_eq!(updated.head_sha, second);
    let found = gh
        .find_open_pull_request(&repo, OWNER, BRANCH)
        .await
        .expect("asked")
        .expect("still open");
    assert_eq!(found.body.as_deref(), Some("dates: 2"));
    let pulls = setup.fake.pull_requests(OWNER, REPO);
    assert_eq!(pulls.len(), 1);
    assert_eq!(pulls[0].1.title.as_deref(), Some("Update skills"));

    setup
        .fake
        .close_pull_request(OWNER, REPO, opened.number, false);
    assert_eq!(
        gh.find_open_pull_request(&repo, OWNER, BRANCH)
            .await
            .expect("asked"),
        None
    );
}

#[tokio::test]
async fn an_installation_without_contents_write_is_forbidden_but_reads() {
    let setup = setup().await;
    let (gh, repo) = (setup.installation(), setup.repo());
    let commit = commit_lock(&gh, &repo, SHA, "1").await;
    setup.fake.deny_contents_write(OWNER, REPO);

    let blob = gh.create_blob(&repo, b"x").await.expect_err("denied");
    assert!(blob.is_forbidden(), "{blob}");
    assert!(
        blob.to_string()
            .contains("Resource not accessible by integration"),
        "{blob}"
    );
    let tree = gh.create_tree(&repo, Some(SHA), &[]).await;
    assert!(tree.is_err_and(|e| e.is_forbidden()));
    let made = gh.create_commit(&repo, "m", SHA, &[SHA]).await;
    assert!(made.is_err_and(|e| e.is_forbidden()));
    let branch = gh.create_branch(&repo, BRANCH, &commit).await;
    assert!(branch.is_err_and(|e| e.is_forbidden()));
    let moved = gh.move_branch(&repo, "main", &commit, false).await;
    assert!(moved.is_err_and(|e| e.is_forbidden()));
    let pull = gh
        .create_pull_request(&repo, "t", "main", "main", "b")
        .await;
    assert!(pull.is_err_and(|e| e.is_forbidden()));
    let edit = gh.update_pull_request(&repo, 1, Some("t"), None).await;
    assert!(edit.is_err_and(|e| e.is_forbidden()));

    assert_eq!(
        gh.branch_head(&repo, "main").await.expect("a read"),
        Some(SHA.to_owned())
    );
    assert!(
        gh.find_open_pull_request(&repo, OWNER, BRANCH)
            .await
            .expect("a read")
            .is_none()
    );
    // Nothing was retried: a 403 without a rate limit is final.
    assert_eq!(
        setup
            .fake
            .requests_to("POST", "/repos/octo/agents/git/blobs")
            .len(),
        2
    );
}
