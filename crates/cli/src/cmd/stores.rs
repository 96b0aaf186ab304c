//! `--state` / `--blobs`, shared by every command that touches stores.

use std::sync::Arc;

use anyhow::Context;
use astrolift_bot::config::{DEFAULT_BLOBS, DEFAULT_STATE};
use astrolift_store::{
    BlobStore, StateLocation, StateStore, blob_store_from_url, open_state_store,
};
use astrolift_sync::{Stores, SyncConcurrency};

/// Where state and blobs live (docs/reference.md §3): the defaults are the ones the
/// bot's own configuration falls back to (`astrolift_bot::config`).
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// State store: `sqlite:PATH` or `dynamodb:TABLE`.
    #[arg(
        long = "state",
        env = "ASTROLIFT_STATE",
        default_value = DEFAULT_STATE
    )]
    pub state: String,

    /// Blob store: `file:DIR` or `s3://BUCKET[/prefix]`.
    #[arg(
        long = "blobs",
        env = "ASTROLIFT_BLOBS",
        default_value = DEFAULT_BLOBS
    )]
    pub blobs: String,
}

impl StoreArgs {
    pub async fn state(&self) -> anyhow::Result<Arc<dyn StateStore>> {
        let cannot_open = || format!("cannot open the state store {}", self.state);
        // The SQLite store creates its file's directory (the embedded default's
        // `.astrolift/`) when it opens it.
        let location = StateLocation::parse(&self.state).with_context(cannot_open)?;
        open_state_store(&location).await.with_context(cannot_open)
    }

    pub async fn blobs(&self) -> anyhow::Result<Arc<dyn BlobStore>> {
        blob_store_from_url(&self.blobs)
            .await
            .with_context(|| format!("cannot open the blob store {}", self.blobs))
    }

    /// Both stores, at `ASTROLIFT_SYNC_CONCURRENCY` (docs/reference.md §13).
    pub async fn stores(&self) -> anyhow::Result<Stores> {
        Ok(Stores {
            state: self.state().await?,
            blobs: self.blobs().await?,
            concurrency: SyncConcurrency::from_env()?,
        })
    }
}

/// A runtime for one command: the CLI does one thing at a time.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
