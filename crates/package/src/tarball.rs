//! A GitHub repository tarball, read once as a stream.
//!
//! GitHub serves a commit as a `tar.gz` whose entries all sit under one
//! `owner-repo-sha/` directory. [`SourceTarball::read`] decompresses it as a
//! stream, in one pass:
//! - every entry is checked and indexed (path, size, kind, executable bit);
//! - small text files that validation reads (`.toml`, `.md`, `.yaml`, …, up to
//!   `Limits.manifest_file` each and a memory budget in all) stay in memory;
//! - every other regular file is copied to ONE anonymous temp file (the
//!   spool) at a recorded offset, so slices are written later without reading
//!   the network twice and without holding a payload in memory.
//!
//! The spool is chosen over a second download: GitHub's tarball bytes are not
//! stable across requests, a second pass doubles the transfer, and a temp
//! file keeps memory flat whatever the repository size (Lambda's `/tmp` is
//! sized for it). Files larger than any package may hold
//! (`Limits.package_size`) are listed but not spooled.
//!
//! The whole tarball is rejected, naming the entry, for: `..` components or
//! absolute paths (after GNU long names and PAX `path` records are applied),
//! entries outside the single top directory, more entries than
//! `Limits.tarball_files`, a declared total over the size bound, sparse
//! entries, oversized extension headers, PAX records that change the entry
//! size, non-UTF-8 paths and duplicate paths.
//!
//! Symlinks, hard links, devices and fifos do NOT reject the tarball: they are
//! listed as [`EntryKind::Symlink`] / [`EntryKind::Other`] and never followed
//! or read, and only an agent whose slice contains one fails (with
//! `package/symlink` or `package/special-file`). A symlink somewhere else in a
//! monorepo must not fail every agent.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;

use astrolift_manifest::Limits;
use astrolift_manifest::tree::{EntryKind, FileEntry, ReadError, SourceTree};
use astrolift_manifest::{Code, Diagnostic, Span};
use tar::EntryType;

use crate::codes;
use crate::source::{PayloadTree, regular_file};

/// Bounds on one tarball. [`TarballOptions::from_limits`] derives them from
/// the shared [`Limits`]; every field can be changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TarballOptions {
    /// Entries: files, directories, links, and every extension header (GNU
    /// long-name and long-link, PAX local and global), each one entry.
    pub max_entries: usize,
    /// One path, bytes (after GNU long names and PAX `path` records).
    pub max_path: usize,
    /// Bytes of the in-memory index (paths plus a fixed cost per entry):
    /// bounds the memory of many long paths, whatever the entry count.
    pub max_index_bytes: u64,
    /// Sum of the declared sizes of all entries, bytes.
    pub max_total_bytes: u64,
    /// Larger regular files are listed but not kept: no package can hold them.
    pub max_kept_file: u64,
    /// Text files up to this size may be kept in memory.
    pub memory_file: u64,
    /// Total bytes kept in memory; past it files go to the spool.
    pub memory_budget: u64,
    /// GNU long-name and PAX extension headers, bytes each.
    pub max_extension_header: u64,
    /// Directory for the spool file; `None` is the system temp directory.
    pub spool_dir: Option<PathBuf>,
}

/// Default bound on a tarball's total uncompressed size.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 4 * 1024 * 1024 * 1024;
/// Default memory budget for kept text files.
pub const DEFAULT_MEMORY_BUDGET: u64 = 32 * 1024 * 1024;
/// Default bound on one extension header.
pub const DEFAULT_MAX_EXTENSION_HEADER: u64 = 64 * 1024;
/// Default bound on the in-memory index: 200,000 entries of paths averaging
/// over 250 bytes.
pub const DEFAULT_MAX_INDEX_BYTES: u64 = 64 * 1024 * 1024;
/// What one indexed entry costs besides its path (its `FileEntry` and
/// location, and the path's allocation), counted against `max_index_bytes`.
pub const INDEX_ENTRY_OVERHEAD: u64 = 96;

impl TarballOptions {
    pub fn from_limits(limits: &Limits) -> Self {
        Self {
            max_entries: limits.tarball_files,
            max_path: limits.tarball_path,
            max_index_bytes: DEFAULT_MAX_INDEX_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            max_kept_file: limits.package_size,
            memory_file: limits.manifest_file,
            memory_budget: DEFAULT_MEMORY_BUDGET,
            max_extension_header: DEFAULT_MAX_EXTENSION_HEADER,
            spool_dir: None,
        }
    }
}

/// A skill repository's tarball gets this share of an agent repository's memory, index and
/// size bounds: a sync holds every skill repository it fetched (up to
/// `Limits::skill_repositories`, 32) while it packages, so together they may take at most
/// twice what the agent repository's own tarball may.
pub const SKILL_TARBALL_SHARE: u64 = 16;

impl TarballOptions {
    /// The bounds of one skill repository's tarball ([`SKILL_TARBALL_SHARE`] of an agent
    /// repository's memory budget, index and total size; the same entry and path bounds).
    pub fn for_skill_repository(limits: &Limits) -> Self {
        let agent = Self::from_limits(limits);
        Self {
            max_index_bytes: agent.max_index_bytes / SKILL_TARBALL_SHARE,
            max_total_bytes: agent.max_total_bytes / SKILL_TARBALL_SHARE,
            memory_budget: agent.memory_budget / SKILL_TARBALL_SHARE,
            ..agent
        }
    }
}

impl Default for TarballOptions {
    fn default() -> Self {
        Self::from_limits(&Limits::DEFAULT)
    }
}

/// Why a tarball was rejected. `entry` is the entry's path as written in the
/// tarball, lossily decoded and escaped for display.
#[derive(Debug, thiserror::Error)]
pub enum TarballError {
    #[error("tarball entry {entry}: {reason}")]
    PathEscape { entry: String, reason: &'static str },
    #[error("tarball entry {entry} is outside the single top directory `{top}`")]
    OutsideTopDirectory { entry: String, top: String },
    #[error("the tarball has more than {limit} entries (extension headers count)")]
    TooManyEntries { limit: usize },
    #[error("tarball entry {entry}: the path is longer than {limit} bytes")]
    PathTooLong { entry: String, limit: usize },
    #[error("the tarball's paths take more than {limit} bytes of index")]
    IndexTooLarge { limit: u64 },
    #[error("tarball entry {entry} brings the tarball over {limit} bytes uncompressed")]
    TooLarge { entry: String, limit: u64 },
    #[error("tarball entry {entry}: {reason}")]
    Unsupported { entry: String, reason: &'static str },
    #[error("tarball entry {entry}: the path is not valid UTF-8")]
    NonUtf8Path { entry: String },
    #[error("tarball entry {entry} appears twice")]
    Duplicate { entry: String },
    #[error("the tarball is not a readable tar.gz: {0}")]
    Corrupt(#[source] io::Error),
    #[error("cannot write the spool file: {0}")]
    Spool(#[source] io::Error),
}

impl TarballError {
    pub fn code(&self) -> &'static Code {
        match self {
            TarballError::PathEscape { .. } | TarballError::OutsideTopDirectory { .. } => {
                &codes::PATH_ESCAPE
            }
            TarballError::TooManyEntries { .. } | TarballError::IndexTooLarge { .. } => {
                &codes::TOO_MANY_FILES
            }
            TarballError::PathTooLong { .. } => &codes::BAD_TARBALL,
            TarballError::TooLarge { .. } => &codes::TOO_LARGE,
            TarballError::Unsupported { .. }
            | TarballError::NonUtf8Path { .. }
            | TarballError::Duplicate { .. }
            | TarballError::Corrupt(_)
            | TarballError::Spool(_) => &codes::BAD_TARBALL,
        }
    }

    /// The error as a diagnostic about the repository as a whole (path "").
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::new(self.code(), "", Span::FILE, self.to_string())
    }
}

/// Where a listed regular file's bytes are.
#[derive(Debug)]
enum Location {
    Memory(Box<[u8]>),
    Spool {
        offset: u64,
    },
    /// Larger than any package may hold: listed, never kept.
    NotKept,
    /// Not a regular file.
    None,
}

/// A tarball read into an index, small files in memory and the rest spooled.
#[derive(Debug)]
pub struct TarballTree {
    entries: Vec<FileEntry>,
    locations: Vec<Location>,
    spool: File,
    top: String,
    max_kept_file: u64,
}

/// Entry point for reading a GitHub tarball.
#[derive(Debug, Clone, Copy)]
pub struct SourceTarball;

impl SourceTarball {
    /// Reads a GitHub `tar.gz` stream with the bounds derived from `limits`.
    pub fn read(reader: impl Read, limits: &Limits) -> Result<TarballTree, TarballError> {
        Self::read_with(reader, &TarballOptions::from_limits(limits))
    }

    /// Reads a GitHub `tar.gz` stream with explicit bounds (a skill repository's:
    /// [`TarballOptions::for_skill_repository`]).
    pub fn read_with(
        reader: impl Read,
        options: &TarballOptions,
    ) -> Result<TarballTree, TarballError> {
        let spool = match &options.spool_dir {
            Some(dir) => tempfile::tempfile_in(dir),
            None => tempfile::tempfile(),
        }
        .map_err(TarballError::Spool)?;
        let mut indexer = Indexer::new(options, spool);
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
        // Raw entries: we apply GNU long names and PAX records ourselves, so
        // that their sizes are bounded (the tar crate reads them whole).
        let entries = archive.entries().map_err(TarballError::Corrupt)?.raw(true);
        for entry in entries {
            indexer.add(entry.map_err(TarballError::Corrupt)?)?;
        }
        indexer.finish()
    }
}

impl TarballTree {
    /// The stripped top directory, `owner-repo-sha`.
    pub fn top_directory(&self) -> &str {
        &self.top
    }

    fn location(&self, path: &str) -> Option<&Location> {
        let index = self
            .entries
            .binary_search_by(|e| e.path.as_str().cmp(path))
            .ok()?;
        self.locations.get(index)
    }
}

/// Extension-header state waiting for the entry it describes.
#[derive(Debug, Default)]
struct Pending {
    long_name: Option<Vec<u8>>,
    pax: Option<Vec<u8>>,
}

struct Indexer<'o> {
    options: &'o TarballOptions,
    spool: BufWriter<File>,
    spool_len: u64,
    memory_used: u64,
    total_bytes: u64,
    index_bytes: u64,
    count: usize,
    top: Option<String>,
    pending: Pending,
    files: Vec<(FileEntry, Location)>,
}

impl<'o> Indexer<'o> {
    fn new(options: &'o TarballOptions, spool: File) -> Self {
        Self {
            options,
            spool: BufWriter::with_capacity(256 * 1024, spool),
            spool_len: 0,
            memory_used: 0,
            total_bytes: 0,
            index_bytes: 0,
            count: 0,
            top: None,
            pending: Pending::default(),
            files: Vec::new(),
        }
    }

    fn add<R: Read>(&mut self, mut entry: tar::Entry<'_, R>) -> Result<(), TarballError> {
        let kind = entry.header().entry_type();
        let raw_name = entry.path_bytes().into_owned();
        if kind.is_gnu_longname()
            || kind.is_gnu_longlink()
            || kind.is_pax_local_extensions()
            || kind.is_pax_global_extensions()
        {
            // Each extension header is an entry: a stream of them with no
            // file is bounded like a stream of files.
            self.count_one()?;
        }
        match kind {
            EntryType::GNULongName | EntryType::XHeader
                if self.pending.long_name.is_some() || self.pending.pax.is_some() =>
            {
                return Err(unsupported(
                    &raw_name,
                    "two extension headers describe one entry",
                ));
            }
            EntryType::GNULongName => {
                let mut name = self.read_extension(&mut entry, &raw_name)?;
                while name.last() == Some(&0) {
                    name.pop();
                }
                self.check_path_length(&name)?;
                self.pending.long_name = Some(name);
                return Ok(());
            }
            // Link targets are never followed, so their long names are dropped.
            EntryType::GNULongLink => {
                self.read_extension(&mut entry, &raw_name)?;
                return Ok(());
            }
            EntryType::XHeader => {
                let records = self.read_extension(&mut entry, &raw_name)?;
                if let Some(path) = pax_value(&records, "path") {
                    self.check_path_length(path)?;
                }
                self.pending.pax = Some(records);
                return Ok(());
            }
            EntryType::XGlobalHeader => {
                let records = self.read_extension(&mut entry, &raw_name)?;
                if pax_value(&records, "path").is_some() || pax_value(&records, "size").is_some() {
                    return Err(unsupported(
                        &raw_name,
                        "a global PAX header sets path or size",
                    ));
                }
                return Ok(());
            }
            _ => {}
        }
        let pending = std::mem::take(&mut self.pending);
        let name = self.entry_name(&entry, &pending)?;
        self.check_path_length(&name)?;
        self.count_entry(&name, entry.size())?;
        let Some(path) = self.repo_path(&name, kind.is_dir())? else {
            return Ok(());
        };
        self.index(&mut entry, kind, path, &name)
    }

    /// The entry's final name: GNU long name, else PAX `path`, else the header.
    fn entry_name<R: Read>(
        &self,
        entry: &tar::Entry<'_, R>,
        pending: &Pending,
    ) -> Result<Vec<u8>, TarballError> {
        let header_name = entry.header().path_bytes().into_owned();
        if let Some(pax) = &pending.pax {
            if pax_value(pax, "GNU.sparse.name").is_some()
                || pax_value(pax, "GNU.sparse.major").is_some()
            {
                return Err(unsupported(
                    &header_name,
                    "sparse entries are not supported",
                ));
            }
            if let Some(size) = pax_value(pax, "size")
                && std::str::from_utf8(size)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
                    != Some(entry.size())
            {
                return Err(unsupported(
                    &header_name,
                    "a PAX size record disagrees with the header",
                ));
            }
        }
        if let Some(name) = &pending.long_name {
            return Ok(name.clone());
        }
        if let Some(path) = pending.pax.as_deref().and_then(|p| pax_value(p, "path")) {
            return Ok(path.to_vec());
        }
        Ok(header_name)
    }

    fn count_one(&mut self) -> Result<(), TarballError> {
        self.count += 1;
        if self.count > self.options.max_entries {
            return Err(TarballError::TooManyEntries {
                limit: self.options.max_entries,
            });
        }
        Ok(())
    }

    fn check_path_length(&self, name: &[u8]) -> Result<(), TarballError> {
        if name.len() > self.options.max_path {
            return Err(TarballError::PathTooLong {
                entry: display_name(name),
                limit: self.options.max_path,
            });
        }
        Ok(())
    }

    fn count_entry(&mut self, name: &[u8], size: u64) -> Result<(), TarballError> {
        self.count_one()?;
        self.total_bytes = self.total_bytes.saturating_add(size);
        if self.total_bytes > self.options.max_total_bytes {
            return Err(TarballError::TooLarge {
                entry: display_name(name),
                limit: self.options.max_total_bytes,
            });
        }
        Ok(())
    }

    /// Checks a name and strips the top directory. `None` for the top
    /// directory itself.
    fn repo_path(&mut self, name: &[u8], is_dir: bool) -> Result<Option<String>, TarballError> {
        let text = std::str::from_utf8(name).map_err(|_| TarballError::NonUtf8Path {
            entry: display_name(name),
        })?;
        let components = checked_components(text).map_err(|reason| TarballError::PathEscape {
            entry: display_name(name),
            reason,
        })?;
        let Some((first, rest)) = components.split_first() else {
            return Err(self.outside(name));
        };
        match &self.top {
            None => self.top = Some((*first).to_owned()),
            Some(top) if top == first => {}
            Some(_) => return Err(self.outside(name)),
        }
        if rest.is_empty() {
            return if is_dir {
                Ok(None)
            } else {
                Err(self.outside(name))
            };
        }
        Ok(Some(rest.join("/")))
    }

    fn outside(&self, name: &[u8]) -> TarballError {
        TarballError::OutsideTopDirectory {
            entry: display_name(name),
            top: self.top.clone().unwrap_or_default(),
        }
    }

    fn index<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        kind: EntryType,
        path: String,
        name: &[u8],
    ) -> Result<(), TarballError> {
        let size = entry.size();
        let mode = entry.header().mode().unwrap_or(0o644);
        let (kind, location) = match kind {
            EntryType::Directory => return Ok(()),
            EntryType::Regular | EntryType::Continuous => {
                (EntryKind::File, self.keep(entry, &path, size, name)?)
            }
            EntryType::Symlink => (EntryKind::Symlink, Location::None),
            EntryType::GNUSparse => {
                return Err(unsupported(name, "sparse entries are not supported"));
            }
            // Hard links, devices, fifos and unknown types: listed, never read.
            _ => (EntryKind::Other, Location::None),
        };
        let size = if kind == EntryKind::File { size } else { 0 };
        self.index_bytes += path.len() as u64 + INDEX_ENTRY_OVERHEAD;
        if self.index_bytes > self.options.max_index_bytes {
            return Err(TarballError::IndexTooLarge {
                limit: self.options.max_index_bytes,
            });
        }
        let entry = FileEntry {
            path,
            size,
            executable: mode & 0o111 != 0,
            kind,
        };
        self.files.push((entry, location));
        Ok(())
    }

    /// Keeps a regular file's bytes: in memory, in the spool, or not at all.
    fn keep<R: Read>(
        &mut self,
        entry: &mut tar::Entry<'_, R>,
        path: &str,
        size: u64,
        name: &[u8],
    ) -> Result<Location, TarballError> {
        if size > self.options.max_kept_file {
            return Ok(Location::NotKept);
        }
        let fits_memory = size <= self.options.memory_file
            && self.memory_used + size <= self.options.memory_budget
            && is_validation_text(path);
        if fits_memory {
            let bytes = read_exactly(entry, size, name)?;
            self.memory_used += size;
            return Ok(Location::Memory(bytes.into_boxed_slice()));
        }
        let offset = self.spool_len;
        let copied = copy_to_spool(&mut entry.take(size), &mut self.spool)?;
        check_length(copied, size, name)?;
        self.spool_len += copied;
        Ok(Location::Spool { offset })
    }

    fn read_extension<R: Read>(
        &self,
        entry: &mut tar::Entry<'_, R>,
        name: &[u8],
    ) -> Result<Vec<u8>, TarballError> {
        let size = entry.size();
        if size > self.options.max_extension_header {
            return Err(unsupported(
                name,
                "an extension header is over the size limit",
            ));
        }
        read_exactly(entry, size, name)
    }

    fn finish(self) -> Result<TarballTree, TarballError> {
        if self.pending.long_name.is_some() || self.pending.pax.is_some() {
            return Err(TarballError::Corrupt(io::Error::other(
                "an extension header describes no entry",
            )));
        }
        let spool = self
            .spool
            .into_inner()
            .map_err(|e| TarballError::Spool(e.into_error()))?;
        let mut files = self.files;
        files.sort_by(|a, b| a.0.path.as_bytes().cmp(b.0.path.as_bytes()));
        if let Some(pair) = files.windows(2).find(|w| w[0].0.path == w[1].0.path) {
            return Err(TarballError::Duplicate {
                entry: display_name(pair[0].0.path.as_bytes()),
            });
        }
        let (entries, locations) = files.into_iter().unzip();
        Ok(TarballTree {
            entries,
            locations,
            spool,
            top: self.top.unwrap_or_default(),
            max_kept_file: self.options.max_kept_file,
        })
    }
}

/// Splits a tarball path into components, dropping empty and `.` ones.
fn checked_components(path: &str) -> Result<Vec<&str>, &'static str> {
    if path.starts_with('/') {
        return Err("the path is absolute");
    }
    let mut components = Vec::new();
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => return Err("the path contains `..`"),
            other => components.push(other),
        }
    }
    Ok(components)
}

/// Files that validation reads: manifests, briefs, skills, configs.
fn is_validation_text(path: &str) -> bool {
    let Some((_, extension)) = path.rsplit_once('.') else {
        return false;
    };
    ["toml", "md", "markdown", "yaml", "yml", "json"]
        .iter()
        .any(|known| extension.eq_ignore_ascii_case(known))
}

fn pax_value<'a>(records: &'a [u8], key: &str) -> Option<&'a [u8]> {
    tar::PaxExtensions::new(records)
        .filter_map(Result::ok)
        .find(|record| record.key_bytes() == key.as_bytes())
        .map(|record| record.value_bytes())
}

fn copy_to_spool(reader: &mut impl Read, spool: &mut impl Write) -> Result<u64, TarballError> {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut copied = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => return Ok(copied),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(TarballError::Corrupt(e)),
        };
        spool.write_all(&buffer[..n]).map_err(TarballError::Spool)?;
        copied += n as u64;
    }
}

/// Reads an entry's `size` bytes (already bounded by the caller) into memory.
fn read_exactly(entry: &mut impl Read, size: u64, name: &[u8]) -> Result<Vec<u8>, TarballError> {
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    entry
        .take(size)
        .read_to_end(&mut bytes)
        .map_err(TarballError::Corrupt)?;
    check_length(bytes.len() as u64, size, name)?;
    Ok(bytes)
}

fn check_length(actual: u64, declared: u64, name: &[u8]) -> Result<(), TarballError> {
    if actual == declared {
        return Ok(());
    }
    Err(TarballError::Corrupt(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("entry {} is truncated", display_name(name)),
    )))
}

fn unsupported(name: &[u8], reason: &'static str) -> TarballError {
    TarballError::Unsupported {
        entry: display_name(name),
        reason,
    }
}

/// An entry name for messages: lossy UTF-8, control characters escaped.
/// The name for an error message: escaped, and cut after 256 bytes (a
/// refused path may be 64 KiB).
fn display_name(name: &[u8]) -> String {
    const SHOWN: usize = 256;
    let shown = &name[..name.len().min(SHOWN)];
    let more = if name.len() > SHOWN { "…" } else { "" };
    format!("`{}{more}`", String::from_utf8_lossy(shown).escape_debug())
}

impl SourceTree for TarballTree {
    fn entries(&self) -> &[FileEntry] {
        &self.entries
    }

    fn read(&self, path: &str, limit: u64) -> Result<Cow<'_, [u8]>, ReadError> {
        let entry = regular_file(self, path)?;
        if entry.size > limit {
            return Err(ReadError::TooLarge {
                size: entry.size,
                limit,
            });
        }
        if let Some(Location::Memory(bytes)) = self.location(path) {
            return Ok(Cow::Borrowed(bytes));
        }
        let mut reader = self.open_file(path)?;
        let mut bytes = Vec::with_capacity(usize::try_from(entry.size).unwrap_or(0));
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| ReadError::Io(e.to_string()))?;
        Ok(Cow::Owned(bytes))
    }
}

impl PayloadTree for TarballTree {
    fn open_file(&self, path: &str) -> Result<Box<dyn Read + '_>, ReadError> {
        let entry = regular_file(self, path)?;
        match self.location(path) {
            Some(Location::Memory(bytes)) => Ok(Box::new(io::Cursor::new(&bytes[..]))),
            Some(Location::Spool { offset }) => Ok(Box::new(SpoolReader {
                spool: &self.spool,
                offset: *offset,
                remaining: entry.size,
            })),
            Some(Location::NotKept) => Err(ReadError::TooLarge {
                size: entry.size,
                limit: self.max_kept_file,
            }),
            Some(Location::None) | None => Err(ReadError::NotAFile),
        }
    }
}

/// Reads one file's bytes out of the spool with positioned reads, so any
/// number of readers share the spool without seeking each other.
struct SpoolReader<'s> {
    spool: &'s File,
    offset: u64,
    remaining: u64,
}

impl Read for SpoolReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = read_at(self.spool, &mut buf[..want], self.offset)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the spool file is shorter than its index",
            ));
        }
        self.offset += n as u64;
        self.remaining -= n as u64;
        Ok(n)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

#[cfg(test)]
mod skill_bounds {
    use super::*;

    #[test]
    fn every_skill_repository_a_sync_may_hold_fits_twice_an_agent_repositorys_bounds() {
        let limits = Limits::DEFAULT;
        let agent = TarballOptions::from_limits(&limits);
        let skill = TarballOptions::for_skill_repository(&limits);
        let held = limits.skill_repositories as u64;
        assert!(held * skill.memory_budget <= 2 * agent.memory_budget);
        assert!(held * skill.max_index_bytes <= 2 * agent.max_index_bytes);
        assert!(held * skill.max_total_bytes <= 2 * agent.max_total_bytes);
        assert_eq!(
            (skill.max_entries, skill.max_path),
            (agent.max_entries, agent.max_path)
        );
    }
}
