//! Streaming reads of a source tree's files.
//!
//! [`SourceTree::read`] returns a whole file, which is right for manifests but
//! not for a 200 MiB payload file: packaging must stream. [`PayloadTree`]
//! adds one method, `open_file`, that yields exactly the listed bytes of a
//! regular file. It is implemented here for the manifest crate's
//! [`DirTree`] and [`MemTree`] and for the spooled
//! [`crate::tarball::TarballTree`].

use std::io::{self, Read};

use astrolift_manifest::tree::{DirTree, EntryKind, MemTree, ReadError, SourceTree};

use crate::error::PackageError;

/// A source tree whose regular files can be read as a stream.
pub trait PayloadTree: SourceTree {
    /// A reader over the file's bytes. The reader yields exactly the size
    /// listed in [`SourceTree::entries`] or fails with an I/O error (a local
    /// file that changed since it was listed).
    fn open_file(&self, path: &str) -> Result<Box<dyn Read + '_>, ReadError>;
}

/// Opens a file of the tree for packaging; failing is a read error of it.
pub(crate) fn open_source<'t>(
    tree: &'t dyn PayloadTree,
    path: &str,
) -> Result<Box<dyn Read + 't>, PackageError> {
    tree.open_file(path).map_err(|source| PackageError::Read {
        path: path.to_owned(),
        source,
    })
}

/// The listed entry of a regular file, or why there is none.
pub(crate) fn regular_file<'t>(
    tree: &'t (impl SourceTree + ?Sized),
    path: &str,
) -> Result<&'t astrolift_manifest::FileEntry, ReadError> {
    let entry = tree.entry(path).ok_or(ReadError::NotFound)?;
    if entry.kind != EntryKind::File {
        return Err(ReadError::NotAFile);
    }
    Ok(entry)
}

impl PayloadTree for DirTree {
    fn open_file(&self, path: &str) -> Result<Box<dyn Read + '_>, ReadError> {
        let entry = regular_file(self, path)?;
        let file = std::fs::File::open(self.root().join(path))
            .map_err(|e| ReadError::Io(e.to_string()))?;
        Ok(Box::new(ExactReader::new(file, entry.size)))
    }
}

impl PayloadTree for MemTree {
    fn open_file(&self, path: &str) -> Result<Box<dyn Read + '_>, ReadError> {
        let entry = regular_file(self, path)?;
        let bytes = self.read(path, entry.size)?;
        Ok(Box::new(io::Cursor::new(bytes)))
    }
}

/// Yields exactly `size` bytes of `inner`: fails if the source ends early or
/// still has bytes after `size` (a file that changed after it was listed), so
/// a tar header's size always matches the data written after it.
#[derive(Debug)]
pub struct ExactReader<R> {
    inner: R,
    remaining: u64,
    checked_end: bool,
}

impl<R: Read> ExactReader<R> {
    pub fn new(inner: R, size: u64) -> Self {
        Self {
            inner,
            remaining: size,
            checked_end: false,
        }
    }
}

impl<R: Read> Read for ExactReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            if !self.checked_end {
                self.checked_end = true;
                let mut probe = [0u8; 1];
                if self.inner.read(&mut probe)? != 0 {
                    return Err(io::Error::other("the file grew after it was listed"));
                }
            }
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 && want > 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file shrank after it was listed",
            ));
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}
