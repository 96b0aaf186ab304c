//! The slice of one agent: which files of the tree its package holds, under
//! which package-relative destination, with which mode (docs/reference.md §6).
//!
//! Rules, in order:
//! 1. When the manifest declares `[package]`: every entry under `root` whose
//!    root-relative path matches `include` and no `exclude` glob. Without a
//!    `[package]` table (the seed: declaring it "opts into runtime files")
//!    this step adds nothing.
//! 2. Each `[[package.shared]]` mount: a repo-root file lands at `mount`; a
//!    directory's files land under `mount`, less those whose destination
//!    matches an `exclude` glob.
//! 3. Each local skill: its `SKILL.md` and the files under `scripts/`,
//!    `references/` and `assets/` (less `exclude`), at their root-relative
//!    path. Files under `scripts/` are executable.
//! 4. The brief and its context files, at their root-relative path.
//!
//! Globs use `*`/`?` that stop at `/` and `**` that crosses directories.
//! `executables` globs are matched against every destination: a match is mode
//! 0755, anything else 0644, whatever the source's own permission bits (so a
//! checkout's umask never changes the archive).
//!
//! A file outside `root` that steps 3–4 name is accepted only when a shared
//! mount already brought it into the package. The same source reaching the
//! same destination twice is one file (executable if any rule says so); two
//! different sources for one destination, or a destination that is both a
//! file and a directory, is an error. Any error fails the whole slice.

use std::collections::BTreeMap;

use astrolift_manifest::model::{AgentManifest, SkillRef};
use astrolift_manifest::tree::{EntryKind, FileEntry, SourceTree};
use astrolift_manifest::{Code, Diagnostic, Limits, Span};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::codes;
use crate::remote::{MountedTree, RemoteSkillTree, mount_path};

/// The directories of a local skill that are packaged with it.
pub use astrolift_manifest::skill::SKILL_DIRS;

/// One file of a package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceFile {
    /// Package-relative destination, POSIX.
    pub dest: String,
    /// Repo-relative source path in the tree.
    pub source: String,
    pub size: u64,
    /// Mode 0755 when true, else 0644.
    pub executable: bool,
}

/// The packaged files of one local skill, for the snapshot's content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFiles {
    pub local_name: String,
    /// Repo-relative skill directory.
    pub dir: String,
    /// Repo-relative source paths, sorted by bytes.
    pub files: Vec<String>,
}

/// An agent's slice: what its archive will hold. Files are sorted by
/// destination bytes, the archive's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    pub agent: String,
    /// Repo-relative path of the agent's manifest.
    pub manifest: String,
    pub files: Vec<SliceFile>,
    /// Sum of the files' sizes.
    pub uncompressed_size: u64,
    /// The limit the slice was checked against; the archive writer checks it again.
    pub size_limit: u64,
    /// Local skills in manifest order.
    pub skills: Vec<SkillFiles>,
    /// The package ships inline: the manifest declares no `[package]` and
    /// neither its brief nor a local skill brings a file, so there is no
    /// archive (`files` is empty). docs/reference.md §6: declaring `[package]` is what
    /// opts into runtime files.
    pub inline: bool,
}

/// Why a slice could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SliceError {
    #[error("{entry} is a symlink; packages hold regular files only")]
    Symlink { entry: String },
    #[error("{entry} is a hard link, device, fifo or socket; packages hold regular files only")]
    SpecialFile { entry: String },
    #[error("{path} ({what}) {reason}")]
    PathEscape {
        path: String,
        what: &'static str,
        reason: &'static str,
    },
    #[error("two sources for the package file {dest}: {first} and {second}")]
    DuplicateDestination {
        dest: String,
        first: String,
        second: String,
    },
    #[error("{dest} is both a file and a directory in the package")]
    FileAndDirectory { dest: String },
    #[error("the package is {size} bytes uncompressed, over the {limit}-byte limit")]
    TooLarge { size: u64, limit: u64 },
    #[error("the package would be empty")]
    Empty,
    #[error("{path} ({what}) is not in the repository")]
    MissingSource { path: String, what: &'static str },
    #[error("the {field} glob {glob} does not compile: {error}")]
    InvalidGlob {
        field: &'static str,
        glob: String,
        error: String,
    },
}

impl SliceError {
    pub fn code(&self) -> &'static Code {
        match self {
            SliceError::Symlink { .. } => &codes::SYMLINK,
            SliceError::SpecialFile { .. } => &codes::SPECIAL_FILE,
            SliceError::PathEscape { .. } => &codes::PATH_ESCAPE,
            SliceError::DuplicateDestination { .. } | SliceError::FileAndDirectory { .. } => {
                &codes::DUPLICATE_DESTINATION
            }
            SliceError::TooLarge { .. } => &codes::TOO_LARGE,
            SliceError::Empty => &codes::EMPTY,
            SliceError::MissingSource { .. } => &codes::MISSING_SOURCE,
            SliceError::InvalidGlob { .. } => &codes::INVALID_GLOB,
        }
    }

    /// The error as a diagnostic on the agent's manifest, as a whole file.
    pub fn to_diagnostic(&self, manifest: &str, agent: &str) -> Diagnostic {
        let diagnostic = Diagnostic::new(
            self.code(),
            manifest,
            Span::FILE,
            format!("agent `{agent}` cannot be packaged: {self}"),
        );
        match self.help() {
            Some(help) => diagnostic.with_help(help),
            None => diagnostic,
        }
    }

    fn help(&self) -> Option<&'static str> {
        match self {
            SliceError::Symlink { .. } => {
                Some("replace the symlink with the file, or exclude it in [package] exclude")
            }
            SliceError::PathEscape { what, .. } if what.contains("outside") => {
                Some("move the file inside [package] root, or mount it with [[package.shared]]")
            }
            SliceError::TooLarge { .. } => {
                Some("exclude large files in [package] exclude, or raise the package size limit")
            }
            SliceError::Empty => Some("check [package] root and include"),
            _ => None,
        }
    }
}

/// Computes an agent's slice, or every reason it has none, as diagnostics on
/// its manifest.
pub fn slice(
    manifest: &AgentManifest,
    tree: &dyn SourceTree,
    limits: &Limits,
) -> Result<Slice, Vec<Diagnostic>> {
    Slice::build(manifest, tree, limits).map_err(|errors| {
        errors
            .iter()
            .map(|e| e.to_diagnostic(&manifest.manifest, &manifest.name))
            .collect()
    })
}

/// [`slice`] of an agent whose resolved remote skills are mounted in `tree`: their files are
/// packaged at their package directories (`scripts/` executable), after the agent's own.
/// A local file at the same destination is a duplicate destination, as for any two sources.
pub fn slice_with_remote(
    manifest: &AgentManifest,
    tree: &MountedTree<'_>,
    limits: &Limits,
) -> Result<Slice, Vec<Diagnostic>> {
    Slice::build_with_remote(manifest, tree, tree.remote(), limits).map_err(|errors| {
        errors
            .iter()
            .map(|e| e.to_diagnostic(&manifest.manifest, &manifest.name))
            .collect()
    })
}

impl Slice {
    /// Computes an agent's slice, or every reason it has none.
    pub fn build(
        manifest: &AgentManifest,
        tree: &dyn SourceTree,
        limits: &Limits,
    ) -> Result<Slice, Vec<SliceError>> {
        Self::build_with_remote(manifest, tree, &[], limits)
    }

    fn build_with_remote(
        manifest: &AgentManifest,
        tree: &dyn SourceTree,
        remote: &[RemoteSkillTree<'_>],
        limits: &Limits,
    ) -> Result<Slice, Vec<SliceError>> {
        let mut collector = Collector::new(manifest, tree)?;
        collector.add_root();
        collector.add_shared();
        let skills = collector.add_skills();
        collector.add_remote_skills(remote);
        collector.add_brief();
        collector.finish(manifest, skills, limits.package_size)
    }
}

struct Destination {
    source: String,
    size: u64,
    executable: bool,
}

struct Collector<'a> {
    manifest: &'a AgentManifest,
    tree: &'a dyn SourceTree,
    root: String,
    include: GlobSet,
    exclude: GlobSet,
    executables: GlobSet,
    dests: BTreeMap<String, Destination>,
    errors: Vec<SliceError>,
}

impl<'a> Collector<'a> {
    fn new(manifest: &'a AgentManifest, tree: &'a dyn SourceTree) -> Result<Self, Vec<SliceError>> {
        let spec = &manifest.package;
        let mut errors = Vec::new();
        let include = glob_set("include", &spec.include, &mut errors);
        let exclude = glob_set("exclude", &spec.exclude, &mut errors);
        let executables = glob_set("executables", &spec.executables, &mut errors);
        let root = match relative_path(&spec.root) {
            Ok(root) => root,
            Err(reason) => {
                errors.push(SliceError::PathEscape {
                    path: spec.root.clone(),
                    what: "[package] root",
                    reason,
                });
                String::new()
            }
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Self {
            manifest,
            tree,
            root,
            include,
            exclude,
            executables,
            dests: BTreeMap::new(),
            errors,
        })
    }

    fn add_root(&mut self) {
        if !self.manifest.package.declared {
            return;
        }
        let tree = self.tree;
        for entry in tree.entries_under(&self.root) {
            let rel = strip_dir(&entry.path, &self.root);
            if self.include.is_match(rel) && !self.exclude.is_match(rel) {
                let executable = self.executables.is_match(rel);
                self.add(entry, rel.to_owned(), executable);
            }
        }
    }

    fn add_shared(&mut self) {
        let tree = self.tree;
        for mount in &self.manifest.package.shared {
            let (source, dest_dir) =
                match (relative_path(&mount.source), relative_path(&mount.mount)) {
                    (Ok(source), Ok(dest)) => (source, dest),
                    (Err(reason), _) => {
                        self.escape(&mount.source, "[[package.shared]] source", reason);
                        continue;
                    }
                    (_, Err(reason)) => {
                        self.escape(&mount.mount, "[[package.shared]] mount", reason);
                        continue;
                    }
                };
            if let Some(entry) = tree.entry(&source).filter(|_| !source.is_empty()) {
                if dest_dir.is_empty() {
                    self.escape(&mount.mount, "[[package.shared]] mount", "names no file");
                    continue;
                }
                let executable = self.executables.is_match(&dest_dir);
                self.add(entry, dest_dir, executable);
            } else if tree.is_dir(&source) {
                for entry in tree.entries_under(&source) {
                    let dest = join(&dest_dir, strip_dir(&entry.path, &source));
                    if !self.exclude.is_match(&dest) {
                        let executable = self.executables.is_match(&dest);
                        self.add(entry, dest, executable);
                    }
                }
            } else {
                self.missing(&source, "[[package.shared]] source");
            }
        }
    }

    fn add_skills(&mut self) -> Vec<SkillFiles> {
        let mut skills = Vec::new();
        for skill in &self.manifest.skills {
            let SkillRef::Local {
                local_name, dir, ..
            } = skill
            else {
                continue;
            };
            let files = self.skill_files(dir);
            for entry in &files {
                let executable = is_within(&entry.path, &join(dir, "scripts"))
                    || self
                        .executables
                        .is_match(strip_dir(&entry.path, &self.root));
                self.add_named(entry, "local skill file", executable);
            }
            let mut files: Vec<String> = files.into_iter().map(|e| e.path.clone()).collect();
            files.sort();
            skills.push(SkillFiles {
                local_name: local_name.clone(),
                dir: dir.clone(),
                files,
            });
        }
        skills
    }

    /// Each remote skill's files (mounted in the tree, see [`MountedTree`]) at its package
    /// directory.
    fn add_remote_skills(&mut self, remote: &[RemoteSkillTree<'_>]) {
        let tree = self.tree;
        for (index, remote) in remote.iter().enumerate() {
            let skill = remote.skill;
            for path in &skill.files {
                let mounted = mount_path(index, path);
                let Some(entry) = tree.entry(&mounted) else {
                    self.missing(&mounted, "remote skill file");
                    continue;
                };
                let relative = strip_dir(path, &skill.dir);
                let executable = is_within(relative, "scripts");
                self.add(entry, join(&skill.package_dir, relative), executable);
            }
        }
    }

    /// `SKILL.md` and the files of the skill directories, less excluded ones.
    fn skill_files(&mut self, dir: &str) -> Vec<&'a FileEntry> {
        let tree = self.tree;
        let skill_md = join(dir, "SKILL.md");
        let mut files = Vec::new();
        match tree.entry(&skill_md) {
            Some(entry) => files.push(entry),
            None => self.missing(&skill_md, "local skill"),
        }
        for sub in SKILL_DIRS {
            for entry in tree.entries_under(&join(dir, sub)) {
                let excluded = is_within(&entry.path, &self.root)
                    && self.exclude.is_match(strip_dir(&entry.path, &self.root));
                if !excluded {
                    files.push(entry);
                }
            }
        }
        files
    }

    fn add_brief(&mut self) {
        let Some(brief) = &self.manifest.brief else {
            return;
        };
        let tree = self.tree;
        let named = std::iter::once((&brief.path, "brief")).chain(
            brief
                .context_files
                .iter()
                .map(|p| (p, "brief context file")),
        );
        for (path, what) in named {
            match tree.entry(path) {
                Some(entry) => {
                    let executable = self.executables.is_match(strip_dir(path, &self.root));
                    self.add_named(entry, what, executable);
                }
                None => self.missing(path, what),
            }
        }
    }

    /// Adds a file that a skill or the brief names: at its root-relative path,
    /// or wherever a shared mount already put it.
    fn add_named(&mut self, entry: &FileEntry, what: &'static str, executable: bool) {
        if is_within(&entry.path, &self.root) {
            let dest = strip_dir(&entry.path, &self.root).to_owned();
            self.add(entry, dest, executable);
        } else if !self.dests.values().any(|d| d.source == entry.path) {
            self.escape(&entry.path, what, "is outside [package] root");
        }
    }

    fn add(&mut self, entry: &FileEntry, dest: String, executable: bool) {
        match entry.kind {
            EntryKind::File => {}
            EntryKind::Symlink => {
                return self.errors.push(SliceError::Symlink {
                    entry: entry.path.clone(),
                });
            }
            EntryKind::Other => {
                return self.errors.push(SliceError::SpecialFile {
                    entry: entry.path.clone(),
                });
            }
        }
        match self.dests.entry(dest) {
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(Destination {
                    source: entry.path.clone(),
                    size: entry.size,
                    executable,
                });
            }
            std::collections::btree_map::Entry::Occupied(mut slot) => {
                if slot.get().source == entry.path {
                    slot.get_mut().executable |= executable;
                } else {
                    let error = SliceError::DuplicateDestination {
                        dest: slot.key().clone(),
                        first: slot.get().source.clone(),
                        second: entry.path.clone(),
                    };
                    self.errors.push(error);
                }
            }
        }
    }

    fn escape(&mut self, path: &str, what: &'static str, reason: &'static str) {
        self.errors.push(SliceError::PathEscape {
            path: path.to_owned(),
            what,
            reason,
        });
    }

    fn missing(&mut self, path: &str, what: &'static str) {
        self.errors.push(SliceError::MissingSource {
            path: path.to_owned(),
            what,
        });
    }

    fn finish(
        mut self,
        manifest: &AgentManifest,
        skills: Vec<SkillFiles>,
        limit: u64,
    ) -> Result<Slice, Vec<SliceError>> {
        self.check_file_and_directory();
        let uncompressed_size = self
            .dests
            .values()
            .map(|d| d.size)
            .fold(0u64, u64::saturating_add);
        let inline = self.dests.is_empty() && !manifest.package.declared;
        if self.dests.is_empty() && self.errors.is_empty() && !inline {
            self.errors.push(SliceError::Empty);
        } else if uncompressed_size > limit {
            self.errors.push(SliceError::TooLarge {
                size: uncompressed_size,
                limit,
            });
        }
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        let files = self
            .dests
            .into_iter()
            .map(|(dest, d)| SliceFile {
                dest,
                source: d.source,
                size: d.size,
                executable: d.executable,
            })
            .collect();
        Ok(Slice {
            agent: manifest.name.clone(),
            manifest: manifest.manifest.clone(),
            files,
            uncompressed_size,
            size_limit: limit,
            skills,
            inline,
        })
    }

    /// A destination that is a file and also the parent of another one
    /// cannot be extracted.
    fn check_file_and_directory(&mut self) {
        for dest in self.dests.keys() {
            let parents = dest.match_indices('/').map(|(i, _)| &dest[..i]);
            for parent in parents {
                if self.dests.contains_key(parent) {
                    self.errors.push(SliceError::FileAndDirectory {
                        dest: parent.to_owned(),
                    });
                }
            }
        }
    }
}

fn glob_set(field: &'static str, globs: &[String], errors: &mut Vec<SliceError>) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        match GlobBuilder::new(glob).literal_separator(true).build() {
            Ok(compiled) => {
                builder.add(compiled);
            }
            Err(error) => errors.push(SliceError::InvalidGlob {
                field,
                glob: glob.clone(),
                error: error.kind().to_string(),
            }),
        }
    }
    builder.build().unwrap_or_else(|error| {
        errors.push(SliceError::InvalidGlob {
            field,
            glob: globs.join(", "),
            error: error.to_string(),
        });
        GlobSet::empty()
    })
}

/// Normalizes a relative POSIX path: drops `.` and empty components,
/// refuses absolute paths and `..`. `"."` becomes `""`.
pub(crate) fn relative_path(path: &str) -> Result<String, &'static str> {
    if path.starts_with('/') {
        return Err("is absolute");
    }
    if path.contains('\\') {
        return Err("uses `\\`; paths are POSIX");
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("contains `..`"),
            other => parts.push(other),
        }
    }
    Ok(parts.join("/"))
}

/// True when `path` is `dir` or below it ("" is the root, containing everything).
pub(crate) fn is_within(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || (path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/')
}

/// `path` relative to `dir`; `path` must be within `dir`.
fn strip_dir<'p>(path: &'p str, dir: &str) -> &'p str {
    if dir.is_empty() {
        return path;
    }
    path.strip_prefix(dir)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(path)
}

fn join(dir: &str, rel: &str) -> String {
    match (dir.is_empty(), rel.is_empty()) {
        (true, _) => rel.to_owned(),
        (_, true) => dir.to_owned(),
        _ => format!("{dir}/{rel}"),
    }
}
