//! Directory-store specifics and the URL constructors.

use astrolift_store::{BlobKey, BlobStore, blob_store_from_url};

#[tokio::test]
async fn objects_land_at_their_key_without_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = blob_store_from_url(&format!("file:{}", dir.path().display()))
        .await
        .unwrap();
    let key = BlobKey::package(&"ab".repeat(32)).unwrap();
    store
        .put_if_absent(&key, b"bytes".to_vec().into(), "application/gzip")
        .await
        .unwrap();
    let object_dir = dir.path().join("packages/sha256");
    let names: Vec<String> = std::fs::read_dir(&object_dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![format!("{}.tar.gz", "ab".repeat(32))]);
    assert_eq!(store.location(), format!("file:{}", dir.path().display()));
}

#[tokio::test]
async fn presigned_url_is_a_file_url() {
    let dir = tempfile::tempdir().unwrap();
    let store = <dyn BlobStore>::from_url(&format!("file:{}", dir.path().display()))
        .await
        .unwrap();
    let key = BlobKey::snapshot(&"cd".repeat(32)).unwrap();
    let url = store
        .presigned_get_url(&key, std::time::Duration::from_secs(1))
        .await
        .unwrap();
    assert!(url.starts_with("file:///"), "{url}");
    assert!(
        url.ends_with(&format!("snapshots/sha256/{}.json", "cd".repeat(32))),
        "{url}"
    );
}

#[test]
fn keys_are_validated() {
    for bad in ["", "/abs", "a/../b", "a//b", "./a", "a/b c", "a\\b", "ünï"] {
        assert!(BlobKey::parse(bad).is_err(), "{bad:?} must be rejected");
    }
    assert!(BlobKey::parse("packages/sha256/x.tar.gz").is_ok());
    assert!(BlobKey::package("ABC").is_err());
    assert!(
        BlobKey::package(&"A".repeat(64)).is_err(),
        "uppercase hex is not canonical"
    );
    assert_eq!(
        BlobKey::package(&format!("sha256:{}", "0".repeat(64)))
            .unwrap()
            .as_str(),
        format!("packages/sha256/{}.tar.gz", "0".repeat(64))
    );
}

#[tokio::test]
async fn unknown_url_scheme_is_invalid() {
    let err = blob_store_from_url("ftp://x").await.unwrap_err();
    assert!(
        matches!(err, astrolift_store::StoreError::Invalid(_)),
        "{err:?}"
    );
    assert!(blob_store_from_url("file:").await.is_err());
}
