//! Read-only source trees: the only input `manifest` (and `package`) ever read.
//!
//! A tree is a sorted list of repo-relative POSIX paths plus a way to read a
//! file's bytes under a size limit. A local directory ([`DirTree`]), an
//! in-memory map ([`MemTree`], used by tests and for the small files indexed
//! out of a GitHub tarball) and the package crate's spooled tarball tree all
//! implement [`SourceTree`], so validation never knows where bytes came from.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What kind of entry a path is. Only regular files are ever read; the other
/// kinds exist so that packaging can reject them with a diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    File,
    Symlink,
    /// Devices, fifos, sockets, hard links in tarballs: never packaged.
    Other,
}

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Repo-relative, POSIX separators, no leading `./`, never `..`.
    pub path: String,
    pub size: u64,
    /// The executable bit as stored (tarball mode or local permission).
    pub executable: bool,
    pub kind: EntryKind,
}

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("file not found")]
    NotFound,
    #[error("not a regular file")]
    NotAFile,
    #[error("file is {size} bytes, over the {limit}-byte limit")]
    TooLarge { size: u64, limit: u64 },
    #[error("file is not valid UTF-8")]
    NotUtf8,
    #[error("I/O error: {0}")]
    Io(String),
}

/// A read-only view of a repository at one commit. `Sync`, so that large
/// repositories can be read on several threads ([`crate::parallel`]).
pub trait SourceTree: Sync {
    /// Every entry, sorted by path bytes.
    fn entries(&self) -> &[FileEntry];

    /// The bytes of a regular file, refusing files over `limit` bytes
    /// without reading them.
    fn read(&self, path: &str, limit: u64) -> Result<Cow<'_, [u8]>, ReadError>;

    fn entry(&self, path: &str) -> Option<&FileEntry> {
        let entries = self.entries();
        entries
            .binary_search_by(|e| e.path.as_str().cmp(path))
            .ok()
            .map(|i| &entries[i])
    }

    fn is_file(&self, path: &str) -> bool {
        self.entry(path).is_some_and(|e| e.kind == EntryKind::File)
    }

    /// True when some entry lives below `dir` (`dir` has no trailing slash; "" is the root).
    fn is_dir(&self, dir: &str) -> bool {
        if dir.is_empty() {
            return !self.entries().is_empty();
        }
        let prefix = format!("{dir}/");
        let entries = self.entries();
        let start = entries.partition_point(|e| e.path.as_str() < prefix.as_str());
        entries
            .get(start)
            .is_some_and(|e| e.path.starts_with(&prefix))
    }

    /// Entries below `dir` (recursive), in path order.
    fn entries_under<'a>(&'a self, dir: &str) -> &'a [FileEntry] {
        let entries = self.entries();
        if dir.is_empty() {
            return entries;
        }
        let prefix = format!("{dir}/");
        let start = entries.partition_point(|e| e.path.as_str() < prefix.as_str());
        let len = entries[start..].partition_point(|e| e.path.starts_with(&prefix));
        &entries[start..start + len]
    }

    /// A UTF-8 text file under `limit` bytes.
    fn read_text(&self, path: &str, limit: u64) -> Result<String, ReadError> {
        let bytes = self.read(path, limit)?;
        String::from_utf8(bytes.into_owned()).map_err(|_| ReadError::NotUtf8)
    }
}

/// Top-level directories of a local checkout that are working state, never
/// repository content: GitHub's tarball of the same commit never has them.
pub const LOCAL_ONLY_DIRS: &[&str] = &[".git", ".astrolift"];

/// A local directory, listed once at open time. Symlinks are listed (as
/// [`EntryKind::Symlink`]) but never followed. A file whose path is not valid
/// UTF-8 is left out and kept in [`DirTree::non_utf8_paths`], for its caller to
/// report (`path/not-utf8`): one bad name does not stop the listing. A file whose
/// path holds a control character (a newline, an escape) stays listed and is also kept
/// in [`DirTree::control_character_paths`] (`path/control-character`).
#[derive(Debug)]
pub struct DirTree {
    root: PathBuf,
    entries: Vec<FileEntry>,
    non_utf8: Vec<String>,
    control: Vec<String>,
}

/// Why a directory could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: the path is not valid UTF-8")]
    NonUtf8Path { path: String },
    #[error("the tree has more than {limit} files")]
    TooManyFiles { limit: usize },
}

impl DirTree {
    /// Lists `root`, refusing trees of more than `max_files` entries.
    pub fn open(root: impl AsRef<Path>, max_files: usize) -> Result<Self, OpenError> {
        let root = root.as_ref().to_path_buf();
        let mut entries = Vec::new();
        let mut non_utf8 = Vec::new();
        let mut control = Vec::new();
        let walker = walkdir::WalkDir::new(&root)
            .follow_links(false)
            .min_depth(1)
            .into_iter()
            .filter_entry(|e| !(e.depth() == 1 && is_local_only(e.file_name())));
        for item in walker {
            let item = item.map_err(|e| OpenError::Io {
                path: e
                    .path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                source: e
                    .into_io_error()
                    .unwrap_or_else(|| std::io::Error::other("walk error")),
            })?;
            if item.file_type().is_dir() {
                continue;
            }
            if entries.len() >= max_files {
                return Err(OpenError::TooManyFiles { limit: max_files });
            }
            match dir_entry(&root, &item) {
                Ok(entry) => {
                    if entry.path.chars().any(char::is_control) {
                        control.push(entry.path.clone());
                    }
                    entries.push(entry);
                }
                Err(OpenError::NonUtf8Path { path }) => non_utf8.push(path),
                Err(other) => return Err(other),
            }
        }
        entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        non_utf8.sort();
        control.sort();
        Ok(Self {
            root,
            entries,
            non_utf8,
            control,
        })
    }

    /// The files left out because their path is not valid UTF-8, each shown with
    /// U+FFFD for the bytes that are not, in order.
    pub fn non_utf8_paths(&self) -> &[String] {
        &self.non_utf8
    }

    /// The listed files whose path holds a control character, in order.
    pub fn control_character_paths(&self) -> &[String] {
        &self.control
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

fn is_local_only(name: &std::ffi::OsStr) -> bool {
    LOCAL_ONLY_DIRS.iter().any(|d| name == *d)
}

fn dir_entry(root: &Path, item: &walkdir::DirEntry) -> Result<FileEntry, OpenError> {
    let rel = item.path().strip_prefix(root).unwrap_or(item.path());
    let path = rel
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| OpenError::NonUtf8Path {
            path: rel.display().to_string(),
        })?
        .join("/");
    let meta = item.metadata().map_err(|e| OpenError::Io {
        path: path.clone(),
        source: e
            .into_io_error()
            .unwrap_or_else(|| std::io::Error::other("metadata error")),
    })?;
    let kind = if item.path_is_symlink() {
        EntryKind::Symlink
    } else if meta.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    };
    Ok(FileEntry {
        path,
        size: meta.len(),
        executable: is_executable(&meta),
        kind,
    })
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}

impl SourceTree for DirTree {
    fn entries(&self) -> &[FileEntry] {
        &self.entries
    }

    fn read(&self, path: &str, limit: u64) -> Result<Cow<'_, [u8]>, ReadError> {
        let entry = self.entry(path).ok_or(ReadError::NotFound)?;
        if entry.kind != EntryKind::File {
            return Err(ReadError::NotAFile);
        }
        let file =
            std::fs::File::open(self.root.join(path)).map_err(|e| ReadError::Io(e.to_string()))?;
        // Read at most limit + 1 bytes: the file may have grown since listing.
        // Sized from the listing (capped by the limit), so a small file is
        // read without the buffer growing and probing.
        let expected = entry.size.min(limit).saturating_add(1);
        let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| ReadError::Io(e.to_string()))?;
        let size = bytes.len() as u64;
        if size > limit {
            return Err(ReadError::TooLarge {
                size: entry.size.max(size),
                limit,
            });
        }
        Ok(Cow::Owned(bytes))
    }
}

/// An in-memory tree: tests, fuzzing, and the small files of a tarball.
#[derive(Debug, Clone, Default)]
pub struct MemTree {
    entries: Vec<FileEntry>,
    contents: BTreeMap<String, Vec<u8>>,
}

impl MemTree {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a tree of regular, non-executable files.
    pub fn from_files<P: Into<String>, B: Into<Vec<u8>>>(
        files: impl IntoIterator<Item = (P, B)>,
    ) -> Self {
        let mut tree = Self::new();
        for (path, bytes) in files {
            tree.insert(path, bytes, false);
        }
        tree
    }

    /// Adds or replaces a regular file.
    pub fn insert(&mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>, executable: bool) {
        let path = path.into();
        let bytes = bytes.into();
        let entry = FileEntry {
            path: path.clone(),
            size: bytes.len() as u64,
            executable,
            kind: EntryKind::File,
        };
        self.put_entry(entry);
        self.contents.insert(path, bytes);
    }

    /// Adds an entry whose content is not kept (listed, but not readable),
    /// such as a symlink or a large file that lives elsewhere.
    pub fn insert_entry(&mut self, entry: FileEntry) {
        self.contents.remove(&entry.path);
        self.put_entry(entry);
    }

    fn put_entry(&mut self, entry: FileEntry) {
        match self
            .entries
            .binary_search_by(|e| e.path.as_bytes().cmp(entry.path.as_bytes()))
        {
            Ok(i) => self.entries[i] = entry,
            Err(i) => self.entries.insert(i, entry),
        }
    }
}

impl SourceTree for MemTree {
    fn entries(&self) -> &[FileEntry] {
        &self.entries
    }

    fn read(&self, path: &str, limit: u64) -> Result<Cow<'_, [u8]>, ReadError> {
        let entry = self.entry(path).ok_or(ReadError::NotFound)?;
        if entry.kind != EntryKind::File {
            return Err(ReadError::NotAFile);
        }
        if entry.size > limit {
            return Err(ReadError::TooLarge {
                size: entry.size,
                limit,
            });
        }
        let bytes = self.contents.get(path).ok_or(ReadError::NotFound)?;
        Ok(Cow::Borrowed(bytes.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_tree_sorts_and_answers_dirs() {
        let tree = MemTree::from_files([("b/x", "1"), ("a/y", "22"), ("a/b/z", "")]);
        let paths: Vec<_> = tree.entries().iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["a/b/z", "a/y", "b/x"]);
        assert!(tree.is_dir("a"));
        assert!(tree.is_dir("a/b"));
        assert!(!tree.is_dir("a/y"));
        assert_eq!(tree.entries_under("a").len(), 2);
        assert_eq!(
            tree.read("a/y", 1),
            Err(ReadError::TooLarge { size: 2, limit: 1 })
        );
        assert_eq!(tree.read_text("a/y", 10).as_deref(), Ok("22"));
    }
}
