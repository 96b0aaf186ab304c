//! Resolving a skill repository: which installation covers it, what commit a ref names,
//! and that another installation's token cannot read it (GitHub's 404), against the fake
//! GitHub serving two repositories.

use astrolift_forge::github::RepoPath;

use super::{INSTALLATION, OWNER, REPO, SHA, fixture, setup};

const SKILLS_INSTALLATION: u64 = 78;
const SKILLS_SHA: &str = "1111111111111111111111111111111111111111";
const MOVED_SHA: &str = "2222222222222222222222222222222222222222";

fn skills_repo() -> RepoPath {
    RepoPath::parse("steadymd/runbooks").expect("a valid repository name")
}

#[tokio::test]
async fn a_ref_resolves_to_its_commit_and_moves_with_a_push() {
    let setup = setup().await;
    let gh = setup.installation();
    let repo = setup.repo();
    assert_eq!(
        gh.commit_sha(&repo, "main").await.expect("resolved"),
        Some(SHA.to_owned())
    );
    assert_eq!(
        gh.commit_sha(&repo, SHA).await.expect("a sha names itself"),
        Some(SHA.to_owned())
    );
    assert_eq!(
        gh.commit_sha(&repo, "nowhere").await.expect("GitHub's 422"),
        None
    );
    setup
        .fake
        .add_repo(OWNER, REPO, "main", MOVED_SHA, fixture("one-agent"));
    assert_eq!(
        gh.commit_sha(&repo, "main").await.expect("resolved"),
        Some(MOVED_SHA.to_owned())
    );
    let unknown = RepoPath::parse("octo/nothing").expect("valid");
    let error = gh.commit_sha(&unknown, "main").await.expect_err("404");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(404));
}

#[tokio::test]
async fn the_installation_covering_a_repository_alone_reads_it() {
    let setup = setup().await;
    let skills = skills_repo();
    setup.fake.add_repo(
        &skills.owner,
        &skills.name,
        "main",
        SKILLS_SHA,
        fixture("one-agent"),
    );
    assert_eq!(
        setup
            .app
            .repository_installation(&skills)
            .await
            .expect("asked"),
        None,
        "not installed yet"
    );
    setup
        .fake
        .install_repo(SKILLS_INSTALLATION, &skills.owner, &skills.name);
    setup.fake.install_repo(INSTALLATION, OWNER, REPO);
    let covering = setup
        .app
        .repository_installation(&skills)
        .await
        .expect("asked");
    assert_eq!(covering, Some(SKILLS_INSTALLATION));

    let agents = setup.installation();
    let refused = agents
        .commit_sha(&skills, "main")
        .await
        .expect_err("hidden");
    assert_eq!(refused.status().map(|s| s.as_u16()), Some(404));
    let refused = agents.tarball(&skills, "main").await.expect_err("hidden");
    assert_eq!(refused.status().map(|s| s.as_u16()), Some(404));

    let own = setup.app.installation(SKILLS_INSTALLATION);
    let sha = own.commit_sha(&skills, "main").await.expect("readable");
    assert_eq!(sha.as_deref(), Some(SKILLS_SHA));
    assert_eq!(setup.fake.tarball_downloads(&skills.owner, &skills.name), 0);
    let download = own.tarball(&skills, SKILLS_SHA).await.expect("readable");
    let bytes = download
        .read_blocking(|mut reader| {
            let mut all = Vec::new();
            std::io::Read::read_to_end(&mut reader, &mut all).map(|_| all)
        })
        .await
        .expect("the reader ran")
        .expect("read");
    assert!(!bytes.is_empty());
    assert_eq!(setup.fake.tarball_downloads(&skills.owner, &skills.name), 1);
    assert_eq!(setup.fake.tarball_downloads(OWNER, REPO), 0);
}
