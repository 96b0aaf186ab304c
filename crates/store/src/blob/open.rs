//! Opening a blob store from its URL; which backend a URL means is
//! [`BlobLocation::parse`]'s decision.

use std::sync::Arc;

use super::fs::FsBlobStore;
use super::s3::S3BlobStore;
use super::store::{BlobOptions, BlobStore};
use crate::StoreResult;
use crate::location::BlobLocation;

/// Opens a blob store from `file:DIR` or `s3://BUCKET[/prefix]` with default options.
pub async fn blob_store_from_url(url: &str) -> StoreResult<Arc<dyn BlobStore>> {
    blob_store_from_url_with(url, BlobOptions::default()).await
}

/// Opens a blob store from `file:DIR` or `s3://BUCKET[/prefix]`.
pub async fn blob_store_from_url_with(
    url: &str,
    options: BlobOptions,
) -> StoreResult<Arc<dyn BlobStore>> {
    open_blob_store(&BlobLocation::parse(url)?, options).await
}

/// Opens the blob store at a parsed `location`.
pub async fn open_blob_store(
    location: &BlobLocation,
    options: BlobOptions,
) -> StoreResult<Arc<dyn BlobStore>> {
    match location {
        BlobLocation::Dir(dir) => Ok(Arc::new(FsBlobStore::new(dir)?)),
        BlobLocation::S3 { bucket, prefix } => Ok(Arc::new(
            S3BlobStore::from_env(bucket, prefix, options).await?,
        )),
    }
}

impl dyn BlobStore {
    /// Opens `file:DIR` or `s3://BUCKET[/prefix]`; see [`blob_store_from_url`].
    pub async fn from_url(url: &str) -> StoreResult<Arc<dyn BlobStore>> {
        blob_store_from_url(url).await
    }
}
