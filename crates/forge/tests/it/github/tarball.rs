//! Tarball download through the redirect, streamed into the package reader.

use astrolift_forge::github::GitHubError;
use astrolift_manifest::Limits;
use astrolift_manifest::tree::SourceTree;
use astrolift_package::{SourceTarball, TarballError, TarballTree};
use tokio::io::AsyncReadExt;

use super::{SHA, Setup, setup};

/// Downloads the fixture commit and reads it with the package reader.
async fn read_tree(setup: &Setup) -> Result<TarballTree, TarballError> {
    let download = setup
        .installation()
        .tarball(&setup.repo(), SHA)
        .await
        .expect("download starts");
    download
        .read_blocking(|reader| SourceTarball::read(reader, &Limits::DEFAULT))
        .await
        .expect("the reader task runs")
}

#[tokio::test]
async fn the_tarball_streams_through_the_redirect_into_the_package_reader() {
    let setup = setup().await;
    let tree = read_tree(&setup).await.expect("a GitHub-shaped tarball");
    assert_eq!(tree.top_directory(), "octo-agents-8f3c2a1");
    let paths: Vec<&str> = tree.entries().iter().map(|e| e.path.as_str()).collect();
    assert!(
        paths.contains(&"agents/support/astrolift.toml"),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"agents/support/prompts/system.md"),
        "{paths:?}"
    );
    let manifest = tree
        .read("agents/support/astrolift.toml", 1024)
        .expect("readable");
    assert!(String::from_utf8_lossy(&manifest).contains("name = \"support\""));

    let api = setup.fake.requests_to("GET", "/repos/octo/agents/tarball/");
    let codeload = setup.fake.requests_to("GET", "/_codeload/");
    assert_eq!((api.len(), codeload.len()), (1, 1));
    assert_eq!(api[0].path, format!("/repos/octo/agents/tarball/{SHA}"));
    assert_eq!(
        codeload[0].query.as_deref(),
        Some("token=GHSAT0FAKEDOWNLOADTOKEN")
    );
}

#[tokio::test]
async fn the_token_is_not_sent_to_another_host() {
    let setup = setup().await;
    setup.fake.serve_downloads_from_another_host();
    assert!(read_tree(&setup).await.is_ok());
    let api = setup.fake.requests_to("GET", "/repos/");
    let codeload = setup.fake.requests_to("GET", "/_codeload/");
    assert_eq!(api[0].header("authorization"), Some("Bearer [redacted]"));
    assert_eq!(
        codeload[0]
            .header("host")
            .map(|h| h.starts_with("localhost:")),
        Some(true)
    );
    assert_eq!(codeload[0].header("authorization"), None);
}

#[tokio::test]
async fn a_branch_ref_resolves_and_the_body_reads_as_async() {
    let setup = setup().await;
    let download = setup
        .installation()
        .tarball(&setup.repo(), "refs/heads/main")
        .await
        .expect("starts");
    let mut bytes = Vec::new();
    download
        .into_async_read()
        .read_to_end(&mut bytes)
        .await
        .expect("reads");
    assert_eq!(bytes.get(..2), Some(&[0x1f, 0x8b][..]), "gzip magic");
}

#[tokio::test]
async fn an_unknown_repository_is_a_404_not_retried() {
    let setup = setup().await;
    let repo = astrolift_forge::github::RepoPath::parse("octo/missing").expect("valid name");
    let error = setup
        .installation()
        .tarball(&repo, SHA)
        .await
        .expect_err("404");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(404), "{error}");
    assert!(matches!(error, GitHubError::Status { .. }));
    assert_eq!(setup.fake.requests_to("GET", "/repos/").len(), 1);
}

#[test]
fn repository_names_are_checked_before_any_request() {
    use astrolift_forge::github::RepoPath;
    for bad in [
        "octo",
        "octo/",
        "/repo",
        "octo/../x",
        "octo/a b",
        "octo/a/b",
        "../x",
    ] {
        assert!(RepoPath::parse(bad).is_err(), "{bad}");
    }
    assert!(RepoPath::parse("octo-org/agents.repo_1").is_ok());
}

/// The whole download of the fixture commit, through `setup`.
async fn download_all(setup: &Setup) -> std::io::Result<Vec<u8>> {
    let download = setup
        .installation()
        .tarball(&setup.repo(), SHA)
        .await
        .map_err(std::io::Error::other)?;
    let mut bytes = Vec::new();
    download
        .into_async_read()
        .read_to_end(&mut bytes)
        .await
        .map(|_| bytes)
}

#[tokio::test]
async fn a_tarball_at_the_size_bound_downloads_and_one_byte_past_it_is_refused() {
    let size = download_all(&setup().await).await.expect("downloads").len() as u64;
    let at_bound = super::setup_with(|config| config.max_tarball_bytes = size).await;
    let bytes = download_all(&at_bound).await.expect("exactly at the bound");
    assert_eq!(bytes.len() as u64, size);

    let past = super::setup_with(|config| config.max_tarball_bytes = size - 1).await;
    let refused = match past.installation().tarball(&past.repo(), SHA).await {
        Err(error) => {
            assert!(
                matches!(&error, GitHubError::TarballTooLarge { limit, .. } if *limit == size - 1),
                "{error}"
            );
            error.to_string()
        }
        Ok(download) => {
            let mut bytes = Vec::new();
            let mut reader = download.into_async_read();
            let error = reader
                .read_to_end(&mut bytes)
                .await
                .expect_err("cut past the bound");
            error.to_string()
        }
    };
    assert!(
        refused.contains(&format!("larger than {}", size - 1)),
        "{refused}"
    );
    assert!(!refused.contains("GHSAT0"), "{refused}");
}

#[test]
fn the_app_is_built_outside_a_runtime_and_used_inside_one() {
    let fake_key = astrolift_fake_github::TEST_PRIVATE_KEY_PEM.to_owned();
    let credentials =
        astrolift_forge::github::AppCredentials::new(1, secrecy::SecretString::from(fake_key))
            .expect("the test key loads");
    let mut config =
        astrolift_forge::github::GitHubConfig::new("http://127.0.0.1:9").expect("valid");
    config.retry = super::test_retry_policy();
    let app =
        astrolift_forge::github::GitHubApp::new(config, credentials).expect("no runtime needed");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let error = runtime
        .block_on(app.installation(1).token())
        .expect_err("nothing listens on port 9");
    assert!(matches!(error, GitHubError::Transport { .. }), "{error}");
}
