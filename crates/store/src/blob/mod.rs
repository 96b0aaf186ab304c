//! Content-addressed blob storage: package archives and snapshots.

mod fs;
mod key;
mod open;
mod s3;
mod store;

pub use fs::FsBlobStore;
pub use key::BlobKey;
pub use open::{blob_store_from_url, blob_store_from_url_with, open_blob_store};
pub use s3::S3BlobStore;
pub(crate) use store::BlobCounters;
pub use store::{
    BlobBody, BlobOptions, BlobStats, BlobStore, CONTENT_TYPE_JSON, CONTENT_TYPE_TAR_GZ,
    MIN_PART_SIZE, PutOutcome,
};
