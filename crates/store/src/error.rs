//! The one error type of every store operation.
//!
//! Messages name the operation and the key or item, never a credential, a token, a signature
//! or a presigned URL.

use std::path::PathBuf;

/// Result of a store operation.
pub type StoreResult<T> = Result<T, StoreError>;

/// What went wrong in a store operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The object or item does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// A condition failed: a stale `version`, an item that already exists, a synced commit
    /// that moved. Nothing of the failed write (or transaction) was stored.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A registration would cover a manifest that another registration of the repository
    /// covers already (a manifest is covered by at most one). Nothing was written.
    #[error("overlapping registration: {0}")]
    Overlap(String),
    /// The backend could not be reached or asked us to slow down. Retrying may succeed.
    #[error("store unavailable (retryable): {0}")]
    Unavailable(String),
    /// The request is wrong: a bad URL, key, expiry or record. Retrying will not help.
    #[error("invalid store request: {0}")]
    Invalid(String),
    /// The backend refused the request (access denied, missing bucket or table, ...).
    #[error("{operation} failed: {message}")]
    Backend {
        /// The operation, e.g. `PutObject` or `TransactWriteItems`.
        operation: String,
        /// The backend's error code and message.
        message: String,
    },
    /// A local file-system failure.
    #[error("i/o error on {}: {source}", path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl StoreError {
    /// Whether retrying the same call may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Unavailable(_))
    }

    /// Whether this is a failed condition (see [`StoreError::Conflict`]).
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Conflict(_))
    }

    /// Whether this is a missing object or item.
    pub fn is_not_found(&self) -> bool {
        matches!(self, StoreError::NotFound(_))
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }

    /// A blocking task panicked or was cancelled.
    pub(crate) fn join(err: tokio::task::JoinError) -> Self {
        StoreError::Unavailable(format!("store worker task failed: {err}"))
    }
}
