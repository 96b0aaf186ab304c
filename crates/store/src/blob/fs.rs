//! `file:DIR`: the embedded blob store, one file per object under a root directory.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{BlobBody, BlobCounters, BlobKey, BlobStats, BlobStore, PutOutcome};
use crate::location::check_blob_dir;
use crate::{BoxFuture, StoreError, StoreResult};

/// A directory of objects, `<root>/<key>`.
///
/// Writes go to a temporary file in the target's directory, are flushed to disk, and are then
/// renamed into place without replacing anything (`persist_noclobber`). A crash therefore
/// never leaves a partial object at a key, and two concurrent writers of one key store it once.
#[derive(Debug)]
pub struct FsBlobStore {
    root: PathBuf,
    counters: BlobCounters,
}

impl FsBlobStore {
    /// A store rooted at `root` (created on first write). A relative root is resolved against
    /// the current directory now, so later `chdir`s do not move the store.
    pub fn new(root: impl AsRef<Path>) -> StoreResult<Self> {
        let root = root.as_ref();
        check_blob_dir(root)?;
        let root = std::path::absolute(root).map_err(|err| StoreError::io(root, err))?;
        Ok(FsBlobStore {
            root,
            counters: BlobCounters::default(),
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, key: &BlobKey) -> PathBuf {
        // BlobKey guarantees relative, `..`-free segments, so this stays under the root.
        self.root.join(key.as_str())
    }
}

/// Writes `body` to a temporary file next to `target`, then links it into place unless
/// `target` exists.
fn write_no_clobber(target: &Path, body: BlobBody) -> StoreResult<PutOutcome> {
    if target.exists() {
        return Ok(PutOutcome::AlreadyExists);
    }
    let dir = target
        .parent()
        .ok_or_else(|| StoreError::Invalid(format!("{} has no parent", target.display())))?;
    std::fs::create_dir_all(dir).map_err(|err| StoreError::io(dir, err))?;
    let mut temp = tempfile::Builder::new()
        .prefix(".incoming-")
        .tempfile_in(dir)
        .map_err(|err| StoreError::io(dir, err))?;
    match &body {
        BlobBody::Bytes(bytes) => temp
            .write_all(bytes)
            .map_err(|err| StoreError::io(temp.path(), err))?,
        BlobBody::File(source) => {
            let mut reader =
                std::fs::File::open(source).map_err(|err| StoreError::io(source, err))?;
            io::copy(&mut reader, &mut temp).map_err(|err| StoreError::io(source, err))?;
        }
    }
    temp.as_file()
        .sync_all()
        .map_err(|err| StoreError::io(temp.path(), err))?;
    set_readable(temp.as_file()).map_err(|err| StoreError::io(temp.path(), err))?;
    match temp.persist_noclobber(target) {
        Ok(_) => Ok(PutOutcome::Created),
        Err(err) if err.error.kind() == io::ErrorKind::AlreadyExists => {
            Ok(PutOutcome::AlreadyExists)
        }
        Err(err) => Err(StoreError::io(target, err.error)),
    }
}

/// Temporary files are created 0600; stored objects are world-readable like any artifact.
#[cfg(unix)]
fn set_readable(file: &std::fs::File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_readable(_file: &std::fs::File) -> io::Result<()> {
    Ok(())
}

impl BlobStore for FsBlobStore {
    fn put_if_absent<'a>(
        &'a self,
        key: &'a BlobKey,
        body: BlobBody,
        _content_type: &'a str,
    ) -> BoxFuture<'a, StoreResult<PutOutcome>> {
        Box::pin(async move {
            let target = self.path_of(key);
            let outcome = tokio::task::spawn_blocking(move || write_no_clobber(&target, body))
                .await
                .map_err(StoreError::join)??;
            self.counters.record(outcome);
            Ok(outcome)
        })
    }

    fn get<'a>(&'a self, key: &'a BlobKey) -> BoxFuture<'a, StoreResult<Vec<u8>>> {
        Box::pin(async move {
            let path = self.path_of(key);
            tokio::fs::read(&path)
                .await
                .map_err(|err| match err.kind() {
                    io::ErrorKind::NotFound => StoreError::NotFound(format!("blob {key}")),
                    _ => StoreError::io(path, err),
                })
        })
    }

    fn exists<'a>(&'a self, key: &'a BlobKey) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let path = self.path_of(key);
            tokio::fs::try_exists(&path)
                .await
                .map_err(|err| StoreError::io(path, err))
        })
    }

    fn presigned_get_url<'a>(
        &'a self,
        key: &'a BlobKey,
        _expiry: Duration,
    ) -> BoxFuture<'a, StoreResult<String>> {
        Box::pin(async move {
            let path = self.path_of(key);
            url::Url::from_file_path(&path)
                .map(String::from)
                .map_err(|()| {
                    StoreError::Invalid(format!("{} is not an absolute path", path.display()))
                })
        })
    }

    fn stats(&self) -> BlobStats {
        self.counters.snapshot()
    }

    fn location(&self) -> String {
        format!("file:{}", self.root.display())
    }
}
