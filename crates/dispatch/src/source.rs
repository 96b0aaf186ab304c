//! Where a dispatch's content comes from ([`ContentSource`]), how its package
//! URLs are issued ([`UrlOptions`]) and why it could not be read
//! ([`ContentError`]): what `content` and its `config` submodule share.

use std::time::Duration;

use astrolift_store::BoxFuture;
use astrolift_store::StoreError;
use astrolift_store::state::{Agent, EnvSpec, StateStore, UnixSeconds};
use serde_json::Value;

use crate::message::DispatchContent;

/// Largest package archive (compressed bytes) whose prompt texts are read.
pub const MAX_ARCHIVE_BYTES: u64 = 64 * 1024 * 1024;
/// Default lifetime of a presigned package URL (`ASTROLIFT_PACKAGE_URL_EXPIRY_SECONDS`).
pub const DEFAULT_URL_EXPIRY: Duration = Duration::from_secs(3600);
/// Longest lifetime S3 accepts for a presigned URL (7 days).
pub const MAX_URL_EXPIRY: Duration = Duration::from_secs(7 * 24 * 3600);

/// Why a dispatch's content could not be read; the dispatch is not recorded.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    #[error("the agent's snapshot {0} is not in the blob store")]
    MissingSnapshot(String),
    #[error("the agent's snapshot does not read: {0}")]
    Snapshot(String),
    #[error("the agent's package {0} is not in the blob store")]
    MissingPackage(String),
    #[error(
        "the package archive ({size} bytes) is over the {MAX_ARCHIVE_BYTES}-byte limit for reading its prompts"
    )]
    ArchiveTooLarge { size: u64 },
    #[error("the package archive does not read: {0}")]
    Archive(String),
    #[error("the agent has a package but no blob store can deliver it")]
    NoBlobStore,
    #[error(
        "env spec {env_spec} names the config manifest {repository}:{manifest_path}, which is not packaged: \
         register {repository} (covering {manifest_path}) under the env spec's project and sync it"
    )]
    ConfigNotPackaged {
        env_spec: String,
        repository: String,
        manifest_path: String,
    },
    #[error("the config bundle {0} is not in the blob store")]
    MissingConfig(String),
    #[error("the config bundle does not read: {0}")]
    Config(String),
    #[error("env spec {env_spec} names a config manifest, whose files no blob store can deliver")]
    ConfigNoBlobStore { env_spec: String },
    #[error(
        "{agent} is layers-pending: {}, or dispatch with --allow-pending-layers to send it without them",
        waiting_for(.dispatch_id.as_deref())
    )]
    LayersPending {
        agent: String,
        /// The packager dispatch the layers wait for; `None`: none was sent.
        dispatch_id: Option<String>,
    },
    #[error(
        "{agent} is layers-failed: the packager agent could not build its dependency layers ({error}); \
         sync its repository again to retry, or dispatch with --allow-pending-layers to send it without them"
    )]
    LayersFailed { agent: String, error: String },
    #[error("blob store: {0}")]
    Store(#[from] StoreError),
}

/// What a layers-pending agent waits for, and what to do meanwhile.
fn waiting_for(dispatch_id: Option<&str>) -> String {
    match dispatch_id {
        Some(id) => format!(
            "it waits for the packager dispatch {id} to return its dependency layers; \
             wait for it (`astrolift dispatch show {id}`)"
        ),
        None => format!(
            "no packager dispatch builds its dependency layers yet; set {} and sync its \
             repository again",
            crate::message::PACKAGER_AGENT_ENV
        ),
    }
}

impl ContentError {
    /// Whether retrying may help (the store was unreachable).
    pub fn is_transient(&self) -> bool {
        matches!(self, ContentError::Store(StoreError::Unavailable(_)))
    }
}

/// How package URLs are issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlOptions {
    /// Lifetime of a presigned URL.
    pub expiry: Duration,
}

impl Default for UrlOptions {
    fn default() -> Self {
        UrlOptions {
            expiry: DEFAULT_URL_EXPIRY,
        }
    }
}

impl UrlOptions {
    /// `ASTROLIFT_PACKAGE_URL_EXPIRY_SECONDS` (1 to 604,800; default 3,600).
    pub fn from_env() -> Result<Self, String> {
        match std::env::var("ASTROLIFT_PACKAGE_URL_EXPIRY_SECONDS") {
            Err(_) => Ok(Self::default()),
            Ok(text) if text.trim().is_empty() => Ok(Self::default()),
            Ok(text) => {
                let seconds: u64 = text.trim().parse().map_err(|_| {
                    format!(
                        "ASTROLIFT_PACKAGE_URL_EXPIRY_SECONDS={text:?} is not a number of seconds"
                    )
                })?;
                let expiry = Duration::from_secs(seconds);
                if seconds == 0 || expiry > MAX_URL_EXPIRY {
                    return Err(format!(
                        "ASTROLIFT_PACKAGE_URL_EXPIRY_SECONDS={seconds} is outside 1..={}",
                        MAX_URL_EXPIRY.as_secs()
                    ));
                }
                Ok(UrlOptions { expiry })
            }
        }
    }
}

/// Where a dispatch's content comes from.
pub trait ContentSource: Send + Sync + std::fmt::Debug {
    /// The content of a dispatch of `agent` at its registered snapshot.
    fn content<'a>(
        &'a self,
        agent: &'a Agent,
        now: UnixSeconds,
    ) -> BoxFuture<'a, Result<DispatchContent, ContentError>>;

    /// A URL for the dependency layer `digest` (`sha256:<hex>`), presigned now, and its
    /// expiry; `None` when no blob store can deliver it (the layer goes without a URL).
    fn layer_url<'a>(
        &'a self,
        digest: &'a str,
        now: UnixSeconds,
    ) -> BoxFuture<'a, Result<Option<(String, UnixSeconds)>, ContentError>> {
        let _ = (digest, now);
        Box::pin(async { Ok(None) })
    }

    /// The `config` of a dispatch with `spec` (see `content::config`).
    fn config<'a>(
        &'a self,
        state: &'a dyn StateStore,
        spec: &'a EnvSpec,
        now: UnixSeconds,
    ) -> BoxFuture<'a, Result<Option<Value>, ContentError>>;
}
