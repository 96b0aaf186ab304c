//! Content-addressed blob storage: package archives and snapshots.

mod fs;
mod s3;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub use fs::FsBlobStore;
pub use s3::S3BlobStore;

use crate::{BoxFuture, StoreError, StoreResult};

/// Content type of package archives.
pub const CONTENT_TYPE_TAR_GZ: &str = "application/gzip";
/// Content type of snapshots.
pub const CONTENT_TYPE_JSON: &str = "application/json";

/// Longest key we accept (S3 allows 1,024 bytes, and a prefix comes on top).
const MAX_KEY_LEN: usize = 512;

/// A validated object key: relative, `/`-separated, made of `[A-Za-z0-9._-]` segments,
/// none of them empty, `.` or `..`. So a key can never escape a directory store's root.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobKey(String);

impl BlobKey {
    /// Validates a key.
    pub fn parse(key: &str) -> StoreResult<Self> {
        let invalid = |why: &str| StoreError::Invalid(format!("blob key {key:?}: {why}"));
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            return Err(invalid("must be 1 to 512 bytes"));
        }
        for segment in key.split('/') {
            if segment.is_empty() || segment == "." || segment == ".." {
                return Err(invalid("has an empty, `.` or `..` segment"));
            }
            if !segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            {
                return Err(invalid(
                    "may only contain A-Z, a-z, 0-9, `.`, `_`, `-` and `/`",
                ));
            }
        }
        Ok(BlobKey(key.to_owned()))
    }

    /// `packages/sha256/<hex>.tar.gz`, the key of a package archive.
    pub fn package(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "packages/sha256/{}.tar.gz",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// `packages/fingerprints/<hex>.json`, the record of what archive a slice
    /// fingerprint produced (a cache: written after the archive, never needed
    /// for correctness; delete it together with `packages/`).
    pub fn package_fingerprint(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "packages/fingerprints/{}.json",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// `snapshots/sha256/<hex>.json`, the key of an agent package snapshot.
    pub fn snapshot(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "snapshots/sha256/{}.json",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// `configs/sha256/<hex>.json`, the key of a config manifest's bundle (its assembled
    /// document and the list of its files).
    pub fn config_bundle(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "configs/sha256/{}.json",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// `configs/files/sha256/<hex>`, the key of one file a config manifest requests
    /// (a prompt, a file, a script, a binary or an asset), by its bytes.
    pub fn config_file(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "configs/files/sha256/{}",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BlobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Accepts 64 lowercase hex digits, optionally prefixed with `sha256:`.
fn checked_sha256_hex(digest: &str) -> StoreResult<&str> {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(hex)
    } else {
        Err(StoreError::Invalid(format!(
            "{digest:?} is not a sha256 digest (64 lowercase hex digits)"
        )))
    }
}

/// The content of an upload. Large archives should be passed as a `File`: they are then
/// streamed (single PUT) or read one part at a time (multipart), never held whole in memory.
#[derive(Debug, Clone)]
pub enum BlobBody {
    /// Bytes already in memory.
    Bytes(Vec<u8>),
    /// A file to stream from. It must not change during the upload.
    File(PathBuf),
}

impl BlobBody {
    /// The body's size in bytes.
    pub async fn len(&self) -> StoreResult<u64> {
        match self {
            BlobBody::Bytes(bytes) => Ok(bytes.len() as u64),
            BlobBody::File(path) => tokio::fs::metadata(path)
                .await
                .map(|meta| meta.len())
                .map_err(|err| StoreError::io(path, err)),
        }
    }
}

impl From<Vec<u8>> for BlobBody {
    fn from(bytes: Vec<u8>) -> Self {
        BlobBody::Bytes(bytes)
    }
}

/// What `put_if_absent` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// The object was uploaded.
    Created,
    /// An object already existed at the key; nothing was uploaded.
    AlreadyExists,
}

/// Upload counters, so tests and benchmarks can assert "0 PUTs on a re-run".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlobStats {
    /// Objects uploaded (a multipart upload counts once).
    pub puts: u64,
    /// `put_if_absent` calls that found the object already stored.
    pub skips: u64,
    /// Of `puts`, those that used multipart upload.
    pub multipart_uploads: u64,
    /// Parts uploaded by multipart uploads.
    pub parts: u64,
}

/// Thread-safe counters behind [`BlobStats`].
#[derive(Debug, Default)]
pub(crate) struct BlobCounters {
    puts: AtomicU64,
    skips: AtomicU64,
    multipart_uploads: AtomicU64,
    parts: AtomicU64,
}

impl BlobCounters {
    pub(crate) fn record(&self, outcome: PutOutcome) {
        let counter = match outcome {
            PutOutcome::Created => &self.puts,
            PutOutcome::AlreadyExists => &self.skips,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_multipart(&self, parts: u64) {
        self.multipart_uploads.fetch_add(1, Ordering::Relaxed);
        self.parts.fetch_add(parts, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> BlobStats {
        BlobStats {
            puts: self.puts.load(Ordering::Relaxed),
            skips: self.skips.load(Ordering::Relaxed),
            multipart_uploads: self.multipart_uploads.load(Ordering::Relaxed),
            parts: self.parts.load(Ordering::Relaxed),
        }
    }
}

/// Tuning of uploads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobOptions {
    /// Bodies larger than this use multipart upload (S3). Default 16 MiB.
    pub multipart_threshold: u64,
    /// Size of each multipart part; S3 requires at least 5 MiB (smaller values are raised to it).
    /// Memory use of an upload is about one part. Default 8 MiB.
    pub part_size: u64,
}

/// S3's minimum part size (every part but the last).
pub const MIN_PART_SIZE: u64 = 5 * 1024 * 1024;

impl Default for BlobOptions {
    fn default() -> Self {
        BlobOptions {
            multipart_threshold: 16 * 1024 * 1024,
            part_size: 8 * 1024 * 1024,
        }
    }
}

/// A content-addressed object store. Dyn-compatible: used as `Arc<dyn BlobStore>`.
///
/// Contract (checked by the contract suite against every implementation):
/// - `put_if_absent` never replaces an existing object and never exposes a partial one;
/// - a `Created` outcome is counted in `stats().puts`, an `AlreadyExists` in `stats().skips`;
/// - `presigned_get_url` returns a URL that downloads the object without further credentials.
pub trait BlobStore: Send + Sync + fmt::Debug {
    /// Uploads `body` at `key` unless an object is already there.
    fn put_if_absent<'a>(
        &'a self,
        key: &'a BlobKey,
        body: BlobBody,
        content_type: &'a str,
    ) -> BoxFuture<'a, StoreResult<PutOutcome>>;

    /// Reads a whole object into memory. Meant for snapshots and tests, not for big archives.
    fn get<'a>(&'a self, key: &'a BlobKey) -> BoxFuture<'a, StoreResult<Vec<u8>>>;

    /// Whether an object exists at `key`.
    fn exists<'a>(&'a self, key: &'a BlobKey) -> BoxFuture<'a, StoreResult<bool>>;

    /// A URL that downloads the object until `expiry` has passed (`file://` for a directory
    /// store, where the expiry does not apply). It is a bearer credential: never log it.
    fn presigned_get_url<'a>(
        &'a self,
        key: &'a BlobKey,
        expiry: Duration,
    ) -> BoxFuture<'a, StoreResult<String>>;

    /// Counters since the store was created.
    fn stats(&self) -> BlobStats;

    /// The store's location as a URL (`file:DIR`, `s3://BUCKET/prefix`), without secrets.
    fn location(&self) -> String;
}

/// Opens a blob store from `file:DIR` or `s3://BUCKET[/prefix]` with default options.
pub async fn blob_store_from_url(url: &str) -> StoreResult<Arc<dyn BlobStore>> {
    blob_store_from_url_with(url, BlobOptions::default()).await
}

/// Opens a blob store from `file:DIR` or `s3://BUCKET[/prefix]`.
pub async fn blob_store_from_url_with(
    url: &str,
    options: BlobOptions,
) -> StoreResult<Arc<dyn BlobStore>> {
    if let Some(dir) = url.strip_prefix("file:") {
        Ok(Arc::new(FsBlobStore::new(dir)?))
    } else if let Some(rest) = url.strip_prefix("s3://") {
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        Ok(Arc::new(
            S3BlobStore::from_env(bucket, prefix, options).await?,
        ))
    } else {
        Err(StoreError::Invalid(format!(
            "blob store URL {url:?}: expected `file:DIR` or `s3://BUCKET[/prefix]`"
        )))
    }
}
