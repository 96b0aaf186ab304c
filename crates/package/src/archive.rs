//! The deterministic archive of a slice.
//!
//! Format (a change here changes every digest; the golden tests catch it):
//! - tar, GNU headers, one regular-file entry per slice file, sorted by
//!   destination bytes; no directory entries (every extractor creates
//!   parents, and a directory entry would add modes and ordering rules for
//!   nothing); paths over 100 bytes use a GNU `././@LongLink` entry;
//! - every header: mtime 0, uid/gid 0, empty user and group names, mode 0644
//!   or 0755;
//! - gzip: raw deflate via `flate2` (zlib-rs backend) at
//!   [`COMPRESSION_LEVEL`], compressed in fixed 1 MiB chunks on several
//!   threads (see [`crate::gzip`]), with a header carrying no file name,
//!   mtime 0 and OS byte 255 ("unknown"), so no host shows through; the
//!   bytes never depend on the thread count;
//! - `content_digest` is sha256 over the tar stream (before gzip) and `digest` sha256
//!   over the `.tar.gz` bytes, both computed while writing. The agent's version is
//!   derived from `content_digest` only ([`crate::snapshot`]), so a change of the
//!   compressor, its version or its level changes `digest` and no version.
//!
//! Any change to these bytes must also bump
//! [`crate::fingerprint::FINGERPRINT_FORMAT`], or stored fingerprint records
//! would keep answering with the old format's digests.
//!
//! zlib-rs picks SIMD routines by CPU, but they compute the same matches: the
//! output depends only on the zlib-rs version pinned in `Cargo.lock`.

use std::io::{self, Read, Write};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::content_hash::ContentHashes;
use crate::gzip::ParallelGzip;
use crate::slice::Slice;
use crate::source::{PayloadTree, open_source};

// Defined in its own module (every step of packaging fails with it);
// re-exported so `archive::PackageError` keeps working.
pub use crate::error::PackageError;

/// The gzip level of every archive. Part of the format: changing it changes
/// every digest.
pub const COMPRESSION_LEVEL: u32 = 6;

/// What `astrolift package` prints, and what the store and snapshot record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackageOutput {
    /// `sha256:<hex>` of the archive bytes: its blob key, and what the runtime checks
    /// after download (`ASTROLIFT_PAYLOAD_HASH`).
    pub digest: String,
    /// `sha256:<hex>` of the uncompressed tar stream: what the agent's version covers.
    /// Empty for an inline package (and then left out of the JSON).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub content_digest: String,
    /// Archive bytes.
    pub size: u64,
    pub files: u64,
    /// Sum of the packaged files' sizes.
    pub uncompressed_size: u64,
    /// No archive: the package ships inline (see [`Slice::inline`]). Left
    /// out of the JSON when false, so the snapshots of packaged agents (and
    /// their hashes) are what they were before inline packages existed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inline: bool,
}

impl PackageOutput {
    /// The output of an inline package: no archive, so no digest and no
    /// bytes.
    pub fn inline() -> Self {
        Self {
            digest: String::new(),
            content_digest: String::new(),
            size: 0,
            files: 0,
            uncompressed_size: 0,
            inline: true,
        }
    }

    /// The hex part of the digest, for content-addressed keys.
    pub fn digest_hex(&self) -> &str {
        self.digest.strip_prefix("sha256:").unwrap_or(&self.digest)
    }
}

/// Writes the slice's archive to `writer`, hashing it on the way.
///
/// Checks, before writing a byte, that every file is still a regular file of
/// `tree` with its listed size and that the total is within the slice's
/// size limit.
pub fn write_archive<W: Write>(
    slice: &Slice,
    tree: &dyn PayloadTree,
    writer: W,
) -> Result<PackageOutput, PackageError> {
    write_archive_with_threads(slice, tree, writer, threads_for(slice))
}

/// One thread for a slice that fits in one compression chunk (most agents):
/// a worker pool would only add thread start-up to every small package.
/// The bytes are the same either way.
fn threads_for(slice: &Slice) -> usize {
    // Tar headers and padding add at most 1.5 KiB per file.
    let tar_size = slice.uncompressed_size + 1536 * slice.files.len() as u64;
    if tar_size <= crate::gzip::CHUNK as u64 {
        1
    } else {
        default_threads()
    }
}

/// Compression threads: the available parallelism, at most 4.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// [`write_archive`] with an explicit number of compression threads (1 =
/// the caller's thread only). The bytes are the same for any number.
pub fn write_archive_with_threads<W: Write>(
    slice: &Slice,
    tree: &dyn PayloadTree,
    writer: W,
    threads: usize,
) -> Result<PackageOutput, PackageError> {
    write_archive_inner(slice, tree, writer, threads, None)
}

/// [`write_archive`], checking that every file's bytes are the ones hashed
/// in `expected` (the slice's fingerprint stands for exactly this archive).
/// A file whose content changed since it was hashed fails as a read error.
pub fn write_archive_checked<W: Write>(
    slice: &Slice,
    tree: &dyn PayloadTree,
    writer: W,
    expected: &ContentHashes,
) -> Result<PackageOutput, PackageError> {
    write_archive_inner(slice, tree, writer, threads_for(slice), Some(expected))
}

fn write_archive_inner<W: Write>(
    slice: &Slice,
    tree: &dyn PayloadTree,
    writer: W,
    threads: usize,
    expected: Option<&ContentHashes>,
) -> Result<PackageOutput, PackageError> {
    if slice.inline {
        return Ok(PackageOutput::inline());
    }
    let uncompressed_size = check_slice(slice, tree)?;
    let tee = HashingWriter::new(writer);
    let gzip = ParallelGzip::new(tee, COMPRESSION_LEVEL, threads);
    let mut builder = tar::Builder::new(HashingWriter::new(gzip));
    for file in &slice.files {
        let mut header = file_header(file.size, file.executable);
        let reader = open_source(tree, &file.source)?;
        let mut reader = ErrorPath::new(reader, expected.is_some());
        let appended = builder.append_data(&mut header, &file.dest, &mut reader);
        if let Some(source) = reader.error.take() {
            return Err(PackageError::Io {
                path: file.source.clone(),
                source,
            });
        }
        appended.map_err(PackageError::Write)?;
        if let Some(expected) = expected {
            let read = reader.hasher.map(|h| <[u8; 32]>::from(h.finalize()));
            if read.as_ref() != expected.get(&file.source) {
                return Err(PackageError::Io {
                    path: file.source.clone(),
                    source: io::Error::other("the file changed while it was packaged"),
                });
            }
        }
    }
    let tar = builder.into_inner().map_err(PackageError::Write)?;
    let (gzip, content_digest, _) = tar.into_parts();
    let tee = gzip.finish().map_err(PackageError::Write)?;
    let (_, digest, size) = tee.finish().map_err(PackageError::Write)?;
    Ok(PackageOutput {
        digest: format!("sha256:{digest}"),
        content_digest: format!("sha256:{content_digest}"),
        size,
        files: slice.files.len() as u64,
        uncompressed_size,
        inline: false,
    })
}

/// The total size, once every file is checked against the tree.
fn check_slice(slice: &Slice, tree: &dyn PayloadTree) -> Result<u64, PackageError> {
    if slice.files.is_empty() {
        return Err(PackageError::Empty);
    }
    let mut total = 0u64;
    for file in &slice.files {
        let entry = tree
            .entry(&file.source)
            .filter(|e| e.kind == astrolift_manifest::EntryKind::File && e.size == file.size)
            .ok_or_else(|| PackageError::NotAFile {
                path: file.source.clone(),
            })?;
        total = total.saturating_add(entry.size);
    }
    if total > slice.size_limit {
        return Err(PackageError::TooLarge {
            size: total,
            limit: slice.size_limit,
        });
    }
    Ok(total)
}

fn file_header(size: u64, executable: bool) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(size);
    header.set_mode(if executable { 0o755 } else { 0o644 });
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header
}

/// Remembers a source read error, so it is reported as a read of that file
/// rather than as a failure to write the archive; optionally hashes what it
/// reads.
struct ErrorPath<R> {
    inner: R,
    error: Option<io::Error>,
    hasher: Option<Sha256>,
}

impl<R> ErrorPath<R> {
    fn new(inner: R, hash: bool) -> Self {
        Self {
            inner,
            error: None,
            hasher: hash.then(Sha256::new),
        }
    }
}

impl<R: Read> Read for ErrorPath<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf).map_err(|e| {
            let message = e.to_string();
            self.error = Some(e);
            io::Error::other(message)
        })?;
        if let Some(hasher) = &mut self.hasher {
            hasher.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// A writer that hashes and counts every byte it passes on.
#[derive(Debug)]
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            written: 0,
        }
    }

    /// Flushes, then returns the writer, the hex sha256 and the byte count.
    pub fn finish(mut self) -> io::Result<(W, String, u64)> {
        self.inner.flush()?;
        Ok(self.into_parts())
    }

    /// The writer, the hex sha256 and the byte count, without a flush (a compressor
    /// underneath finishes its stream itself).
    pub fn into_parts(self) -> (W, String, u64) {
        (
            self.inner,
            hex::encode(self.hasher.finalize()),
            self.written,
        )
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
