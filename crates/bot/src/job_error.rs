//! Why a job failed, whether running it again may succeed, and what the
//! failed check run says; and the one way a job reads a repository's tree.

use astrolift_forge::github::{GitHubError, Installation, RepoPath};
use astrolift_package::{SourceTarball, TarballError, TarballOptions, TarballTree};
use astrolift_store::StoreError;
use astrolift_sync::SyncError;

use crate::commit_order::is_retryable;
use crate::queue::QueueError;

/// `ENOSPC` on Linux (Lambda and serve's platforms): older kernels' errors
/// may not map to `ErrorKind::StorageFull`.
const ENOSPC: i32 = 28;

/// Why a job failed. [`JobError::is_retryable`] tells the queue whether to
/// deliver it again.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    #[error("the repository tarball was refused: {0}")]
    Tarball(#[from] TarballError),
    #[error(transparent)]
    Sync(#[from] SyncError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the sync was interrupted (the process is stopping)")]
    Interrupted,
    #[error("cannot queue the re-syncs of the dependents: {0}")]
    Queue(#[from] QueueError),
    /// A job that syncs no commit (a pull request's closing, a comment) was given to
    /// [`crate::SyncRunner::run`] instead of [`crate::SyncRunner::perform`].
    #[error("the job syncs no commit")]
    NotASync,
    /// A comment's dispatch could not be recorded or queued now (a store or the dispatch
    /// queue unavailable).
    #[error(transparent)]
    Dispatch(Box<astrolift_dispatch::on_demand::OnDemandError>),
}

impl JobError {
    /// True when running the job again may succeed: GitHub or a store was
    /// unreachable or busy, or a concurrent sync won a conditional write.
    /// A refused tarball or a 4xx from GitHub will fail the same way again.
    pub fn is_retryable(&self) -> bool {
        match self {
            JobError::GitHub(error) => is_retryable(error),
            _ if self.is_out_of_space() => false,
            JobError::Tarball(error) => {
                matches!(error, TarballError::Corrupt(_) | TarballError::Spool(_))
            }
            JobError::Sync(error) => error.is_retryable(),
            JobError::Store(_)
            | JobError::Interrupted
            | JobError::Queue(_)
            | JobError::Dispatch(_) => true,
            JobError::NotASync => false,
        }
    }

    /// True when GitHub refused the installation's token (the installation is deleted,
    /// suspended, or not this App's): nothing can be said on the repository's check runs.
    pub fn is_installation_refused(&self) -> bool {
        matches!(
            self,
            JobError::GitHub(GitHubError::Status { path, status, .. })
                if path.ends_with("/access_tokens") && status.is_client_error()
        )
    }

    /// The wait GitHub asked for before the next try (a rate limit's reset or
    /// `Retry-After` longer than the client's own retry budget), when it named one.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            JobError::GitHub(GitHubError::RateLimited { wait, .. }) => Some(*wait),
            _ => None,
        }
    }

    /// True when the spool (the tarball's files, or archives being built)
    /// ran out of disk: the same commit will not fit the next time either,
    /// so it is a permanent failure, not a retry.
    pub fn is_out_of_space(&self) -> bool {
        let io = match self {
            JobError::Tarball(TarballError::Spool(io)) | JobError::Sync(SyncError::Spool(io)) => io,
            _ => return false,
        };
        io.kind() == std::io::ErrorKind::StorageFull || io.raw_os_error() == Some(ENOSPC)
    }

    /// The explanation written into a failed check run: plain, and free of
    /// secrets (errors never carry tokens or URLs with queries).
    pub(crate) fn explanation(&self) -> String {
        if self.is_out_of_space() {
            return "Astrolift could not finish: the repository's files do not fit the \
                    temporary storage of the sync worker (it ran out of disk space while \
                    unpacking the tarball or building packages).\n\n\
                    Make the repository smaller (or move large files out of it), or ask \
                    the operator to raise the sync function's ephemeral storage; then push again."
                .to_owned();
        }
        let next = if self.is_retryable() {
            "Astrolift will try again; if it keeps failing, re-run this check."
        } else {
            "Fix the cause and push again."
        };
        format!("Astrolift could not finish: {self}.\n\n{next}")
    }
}

/// The tree of `repo` at commit `sha`: its tarball streamed (on a blocking thread) into a
/// bounded tree. Agent repositories and skill repositories ([`crate::skills`]) alike.
pub(crate) async fn fetch_tree(
    installation: &Installation,
    repo: &RepoPath,
    sha: &str,
    options: TarballOptions,
) -> Result<TarballTree, JobError> {
    let download = installation.tarball(repo, sha).await?;
    let tree = download
        .read_blocking(move |reader| SourceTarball::read_with(reader, &options))
        .await??;
    Ok(tree)
}
