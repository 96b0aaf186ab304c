//! Why a sync failed as a whole (agent problems are diagnostics, never errors).

use crate::order::OrderError;

/// Why a sync failed as a whole. Agent problems are never errors: they are
/// diagnostics and `failed` plan entries.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Store(#[from] astrolift_store::StoreError),
    #[error("cannot spool an archive to a temp file: {0}")]
    Spool(#[source] std::io::Error),
    #[error("applying needs the ref being synced")]
    NoRef,
    #[error(transparent)]
    Order(#[from] OrderError),
    #[error(transparent)]
    SkillFetch(#[from] SkillFetchError),
}

impl SyncError {
    /// True when running the same request again may succeed (a store was
    /// unreachable, or a concurrent sync won a conditional write).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            SyncError::Store(
                astrolift_store::StoreError::Unavailable(_)
                    | astrolift_store::StoreError::Conflict(_)
            ) | SyncError::Spool(_)
        ) || matches!(self, SyncError::Order(error) if error.retryable)
            || matches!(self, SyncError::SkillFetch(error) if error.retryable)
    }
}

/// Why a skill repository could not be fetched.
#[derive(Debug, thiserror::Error)]
#[error("cannot fetch skill repository {repository} at {git_ref}: {reason}")]
pub struct SkillFetchError {
    pub repository: String,
    pub git_ref: String,
    pub reason: String,
    /// True when asking again may succeed (an outage, a rate limit).
    pub retryable: bool,
}
