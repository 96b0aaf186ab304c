//! Commit comparison: GitHub's `status` for each shape of history, 404 for an unknown commit.

use astrolift_forge::github::CompareStatus;

use super::{OWNER, REPO, setup};

#[tokio::test]
async fn every_status_of_the_compare_api() {
    let setup = setup().await;
    // root ← a ← b, and root ← c.
    for (sha, parents) in [
        ("root", &[][..]),
        ("a", &["root"][..]),
        ("b", &["a"][..]),
        ("c", &["root"][..]),
    ] {
        setup.fake.add_commit(OWNER, REPO, sha, parents);
    }
    let (gh, repo) = (setup.installation(), setup.repo());
    for (base, head, status) in [
        ("a", "b", CompareStatus::Ahead),
        ("b", "a", CompareStatus::Behind),
        ("b", "b", CompareStatus::Identical),
        ("b", "c", CompareStatus::Diverged),
    ] {
        let answer = gh.compare(&repo, base, head).await.expect("compared");
        assert_eq!(answer, status, "{base}...{head}");
    }
    let unknown = gh
        .compare(&repo, "b", "nowhere")
        .await
        .expect_err("unknown commit");
    assert_eq!(unknown.status().map(|s| s.as_u16()), Some(404));
}
