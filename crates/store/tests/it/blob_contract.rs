//! The BlobStore contract, run against the directory store and S3 (moto).

use std::sync::Arc;
use std::time::Duration;

use astrolift_store::testing::{FaultPlan, FaultyBlobStore};
use astrolift_store::{BlobBody, BlobKey, BlobOptions, BlobStore, PutOutcome, StoreError};

use crate::support::{download, pattern};

/// Small multipart settings so a ~11 MiB object takes 3 parts.
pub const TEST_OPTIONS: BlobOptions = BlobOptions {
    multipart_threshold: 1024 * 1024,
    part_size: 5 * 1024 * 1024,
};

/// A store under test and what its backend is expected to do.
pub struct Subject {
    pub store: Arc<dyn BlobStore>,
    /// Bodies over the threshold use multipart upload.
    pub multipart: bool,
    /// Keeps a temporary directory alive.
    pub _dir: Option<tempfile::TempDir>,
}

fn key(n: u8) -> BlobKey {
    BlobKey::package(&format!("{:064x}", n)).expect("valid digest")
}

pub async fn put_if_absent_uploads_once(subject: Subject) {
    let store = subject.store;
    let k = key(1);
    assert!(!store.exists(&k).await.unwrap());
    let first = store
        .put_if_absent(&k, b"archive".to_vec().into(), "application/gzip")
        .await
        .unwrap();
    assert_eq!(first, PutOutcome::Created);
    let again = store
        .put_if_absent(&k, b"other bytes".to_vec().into(), "application/gzip")
        .await
        .unwrap();
    assert_eq!(again, PutOutcome::AlreadyExists);
    assert!(store.exists(&k).await.unwrap());
    assert_eq!(
        store.get(&k).await.unwrap(),
        b"archive",
        "an existing object is never replaced"
    );
    let stats = store.stats();
    assert_eq!((stats.puts, stats.skips), (1, 1));
}

pub async fn rerun_does_no_puts(subject: Subject) {
    let store = subject.store;
    let keys: Vec<BlobKey> = (10..15).map(key).collect();
    for k in &keys {
        store
            .put_if_absent(k, k.as_str().as_bytes().to_vec().into(), "application/gzip")
            .await
            .unwrap();
    }
    let before = store.stats();
    for k in &keys {
        let outcome = store
            .put_if_absent(k, k.as_str().as_bytes().to_vec().into(), "application/gzip")
            .await
            .unwrap();
        assert_eq!(outcome, PutOutcome::AlreadyExists);
    }
    let after = store.stats();
    assert_eq!(after.puts - before.puts, 0, "0 PUTs on a re-run");
    assert_eq!(after.skips - before.skips, 5);
}

pub async fn missing_object_is_not_found(subject: Subject) {
    let err = subject.store.get(&key(2)).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
    assert!(!subject.store.exists(&key(2)).await.unwrap());
}

pub async fn large_file_uses_multipart(subject: Subject) {
    let store = subject.store;
    let body = pattern(11 * 1024 * 1024 + 17, 7);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &body).unwrap();
    let k = key(3);
    let outcome = store
        .put_if_absent(
            &k,
            BlobBody::File(file.path().to_owned()),
            "application/gzip",
        )
        .await
        .unwrap();
    assert_eq!(outcome, PutOutcome::Created);
    assert!(
        store.get(&k).await.unwrap() == body,
        "round trip of a multipart object"
    );
    let stats = store.stats();
    if subject.multipart {
        assert_eq!((stats.multipart_uploads, stats.parts), (1, 3));
    }
    assert_eq!(stats.puts, 1);
}

pub async fn large_bytes_use_multipart(subject: Subject) {
    let store = subject.store;
    let body = pattern(6 * 1024 * 1024, 9);
    let k = key(4);
    store
        .put_if_absent(&k, body.clone().into(), "application/gzip")
        .await
        .unwrap();
    assert!(store.get(&k).await.unwrap() == body);
    if subject.multipart {
        assert_eq!(
            (store.stats().multipart_uploads, store.stats().parts),
            (1, 2)
        );
    }
}

pub async fn small_file_streams_in_one_put(subject: Subject) {
    let store = subject.store;
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), b"{\"snapshot\":true}").unwrap();
    let k = BlobKey::snapshot(&format!("sha256:{:064x}", 5)).unwrap();
    store
        .put_if_absent(
            &k,
            BlobBody::File(file.path().to_owned()),
            "application/json",
        )
        .await
        .unwrap();
    assert_eq!(store.get(&k).await.unwrap(), b"{\"snapshot\":true}");
    assert_eq!(store.stats().multipart_uploads, 0);
}

pub async fn presigned_url_downloads(subject: Subject) {
    let store = subject.store;
    let k = key(6);
    store
        .put_if_absent(&k, b"presigned body".to_vec().into(), "application/gzip")
        .await
        .unwrap();
    let url = store
        .presigned_get_url(&k, Duration::from_secs(300))
        .await
        .unwrap();
    assert_eq!(download(&url).await, b"presigned body");
}

pub async fn concurrent_puts_store_once(subject: Subject) {
    let store = subject.store;
    let k = key(7);
    let tasks: Vec<_> = (0..4u8)
        .map(|i| {
            let (store, k) = (store.clone(), k.clone());
            tokio::spawn(async move {
                store
                    .put_if_absent(&k, vec![b'a' + i; 64].into(), "application/gzip")
                    .await
            })
        })
        .collect();
    let mut created = 0;
    for task in tasks {
        if task.await.unwrap().unwrap() == PutOutcome::Created {
            created += 1;
        }
    }
    assert_eq!(created, 1, "exactly one writer stores the object");
    let stats = store.stats();
    assert_eq!((stats.puts, stats.skips), (1, 3));
    let stored = store.get(&k).await.unwrap();
    assert!(
        stored.len() == 64 && stored.iter().all(|b| *b == stored[0]),
        "one writer's bytes, whole"
    );
}

pub async fn failed_put_leaves_nothing(subject: Subject) {
    let faulty = FaultyBlobStore::new(subject.store.clone(), FaultPlan::nth_write(1));
    let k = key(8);
    let err = faulty
        .put_if_absent(&k, b"x".to_vec().into(), "application/gzip")
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(!subject.store.exists(&k).await.unwrap());
    let retried = faulty
        .put_if_absent(&k, b"x".to_vec().into(), "application/gzip")
        .await
        .unwrap();
    assert_eq!(retried, PutOutcome::Created);
    assert_eq!(faulty.faults().injected(), 1);
}

/// Runs each named contract test against each backend.
macro_rules! blob_contract_tests {
    ($($test:ident),* $(,)?) => {
        mod fs {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test(super::fs_subject()).await;
                }
            )*
        }
        mod s3 {
            $(
                #[tokio::test]
                async fn $test() {
                    if let Some(subject) = super::s3_subject(stringify!($test), "").await {
                        super::$test(subject).await;
                    }
                }
            )*
        }
        mod s3_prefixed {
            $(
                #[tokio::test]
                async fn $test() {
                    if let Some(subject) = super::s3_subject(stringify!($test), "some/prefix").await {
                        super::$test(subject).await;
                    }
                }
            )*
        }
    };
}

blob_contract_tests!(
    put_if_absent_uploads_once,
    rerun_does_no_puts,
    missing_object_is_not_found,
    large_file_uses_multipart,
    large_bytes_use_multipart,
    small_file_streams_in_one_put,
    presigned_url_downloads,
    concurrent_puts_store_once,
    failed_put_leaves_nothing,
);

fn fs_subject() -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let store = astrolift_store::FsBlobStore::new(dir.path().join("blobs")).unwrap();
    Subject {
        store: Arc::new(store),
        multipart: false,
        _dir: Some(dir),
    }
}

async fn s3_subject(test: &str, prefix: &str) -> Option<Subject> {
    crate::support::aws_endpoint(test)?;
    // In a shared bucket (the smoke test's stack) each test writes under its own prefix.
    let shared = crate::support::shared_resource(crate::support::SHARED_BUCKET);
    let (bucket, prefix) = match &shared {
        Some(bucket) => {
            let unique = crate::support::unique_name("contract");
            let prefix = match prefix {
                "" => unique,
                _ => format!("{unique}/{prefix}"),
            };
            (bucket.clone(), prefix)
        }
        None => (crate::support::unique_name("blobs"), prefix.to_owned()),
    };
    let store = astrolift_store::S3BlobStore::from_env(&bucket, &prefix, TEST_OPTIONS)
        .await
        .unwrap();
    if shared.is_none() {
        store.create_bucket().await.unwrap();
    }
    Some(Subject {
        store: Arc::new(store),
        multipart: true,
        _dir: None,
    })
}
