//! The blob store contract ([`BlobStore`]) and what its calls take and report.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::key::BlobKey;
use crate::{BoxFuture, StoreError, StoreResult};

/// Content type of package archives.
pub const CONTENT_TYPE_TAR_GZ: &str = "application/gzip";
/// Content type of snapshots.
pub const CONTENT_TYPE_JSON: &str = "application/json";

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
