//! Agent packages: source tree → per-agent slice → deterministic `tar.gz` +
//! sha256 → agent package snapshot (docs/reference.md §6).
//!
//! This crate owns:
//! - reading a source tree for packaging: a local directory
//!   ([`astrolift_manifest::DirTree`]) or a GitHub tarball streamed once
//!   ([`SourceTarball::read`] → [`TarballTree`], small text files in memory,
//!   the rest spooled to one anonymous temp file);
//! - the slice of each agent ([`slice`] / [`Slice::build`]): `root`,
//!   `include`/`exclude`, `executables`, `[[package.shared]]`, local skills,
//!   brief and context files;
//! - the archive format ([`write_archive`], gzip in [`gzip`]) and its digest;
//! - the snapshot format ([`snapshot`], [`Snapshot::canonical_json`],
//!   [`Snapshot::digest`], the agent's version);
//! - a config manifest's bundle ([`config_bundle`]): its assembled document
//!   and every file it requests, hashed, with modes;
//! - the slice fingerprint ([`fingerprint`], [`prepare_agent`]): what an
//!   archive will be, known before building it, so a caller that stored
//!   the [`FingerprintRecord`] of an earlier build can skip tar + gzip.
//!
//! Invariants:
//! - **No I/O beyond reading a source tree and writing the archive to the
//!   writer it is given** (plus the tarball's own anonymous spool file). No
//!   network, no AWS, no clock, no environment variables. Storage is the
//!   `store` crate's. Compression may use a few worker threads; they never
//!   change a byte of the output.
//! - **Deterministic.** The same files (paths, bytes, `executables` matches)
//!   give the same archive bytes and digest on any machine, in any walk
//!   order, with any timestamps, owners or umask. Source permission bits are
//!   ignored: modes come from `executables` only.
//! - **All or nothing.** A slice either passes every rule or fails with every
//!   reason (typed [`SliceError`]s, shown as [`astrolift_manifest::Diagnostic`]s
//!   with the `package/*` codes of [`codes::CODES`]); the size limit is
//!   checked before the first archive byte is written.
//! - **Bounded.** A hostile tarball is rejected by declared sizes before its
//!   data is read; memory stays flat whatever the repository size; no file is
//!   ever read whole unless validation asked for it under a limit.
//! - **Nothing followed.** Symlinks, hard links and special files are listed,
//!   never followed or read; only an agent whose slice holds one fails.
//!
//! Typical use:
//! ```no_run
//! # use astrolift_manifest::{Limits, model::AgentManifest};
//! # use astrolift_package::*;
//! # fn demo(bytes: &[u8], agent: &AgentManifest) -> Result<(), Box<dyn std::error::Error>> {
//! let limits = Limits::DEFAULT;
//! let tree = SourceTarball::read(bytes, &limits)?;
//! // … validate with astrolift_manifest, then for each agent:
//! let slice = slice(agent, &tree, &limits).map_err(|d| format!("{d:?}"))?;
//! let mut archive = Vec::new();
//! let output = write_archive(&slice, &tree, &mut archive)?;
//! let snapshot = snapshot(agent, &slice, &tree, &output)?;
//! let version = snapshot.digest();
//! # let _ = version; Ok(()) }
//! ```
#![forbid(unsafe_code)]

pub mod archive;
pub mod codes;
pub mod config_bundle;
pub mod content_hash;
pub mod dependencies;
pub mod error;
pub mod fingerprint;
pub mod gzip;
pub mod remote;
pub mod slice;
pub mod snapshot;
pub mod source;
pub mod tarball;

pub use archive::{
    COMPRESSION_LEVEL, PackageOutput, write_archive, write_archive_checked,
    write_archive_with_threads,
};
pub use config_bundle::{ConfigBundle, ConfigFile, bundle_config};
pub use content_hash::ContentHashes;
pub use dependencies::{DependencyFile, LayerNeed, preflight};
pub use error::PackageError;
pub use fingerprint::{FINGERPRINT_FORMAT, FingerprintRecord, slice_fingerprint};
pub use remote::{MountedTree, RemoteSkillTree};
pub use slice::{Slice, SliceError, SliceFile, slice, slice_with_remote};
pub use snapshot::{
    SkillPin, SkillPins, Snapshot, remote_pins, skill_dir_sha256, snapshot, snapshot_pinned,
    snapshot_with_hashes,
};
pub use source::PayloadTree;
pub use tarball::{SourceTarball, TarballError, TarballOptions, TarballTree};

/// One agent, packaged: its archive's output and its snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packaged {
    pub slice: Slice,
    pub output: PackageOutput,
    pub snapshot: Snapshot,
}

/// Slices, archives (to `writer`) and snapshots one agent; every failure is
/// a diagnostic on its manifest. On an error after the first byte (a read or
/// write failure) the writer holds a partial archive: write to a temp file
/// and keep it only on `Ok`.
pub fn package_agent<W: std::io::Write>(
    manifest: &astrolift_manifest::model::AgentManifest,
    tree: &dyn PayloadTree,
    limits: &astrolift_manifest::Limits,
    writer: W,
) -> Result<Packaged, Vec<astrolift_manifest::Diagnostic>> {
    let slice = slice(manifest, tree, limits)?;
    package_slice(manifest, slice, tree, &SkillPins::new(), writer)
}

/// [`package_agent`] for an agent whose resolved remote skills are mounted in `tree`: their
/// files are packaged at their package directories and the snapshot pins each one (its
/// commit and content hash).
pub fn package_agent_with_remote<W: std::io::Write>(
    manifest: &astrolift_manifest::model::AgentManifest,
    tree: &MountedTree<'_>,
    limits: &astrolift_manifest::Limits,
    writer: W,
) -> Result<Packaged, Vec<astrolift_manifest::Diagnostic>> {
    let slice = slice_with_remote(manifest, tree, limits)?;
    let pins = remote_pins(tree.remote())
        .map_err(|e| vec![e.to_diagnostic(&manifest.manifest, &manifest.name)])?;
    package_slice(manifest, slice, tree, &pins, writer)
}

/// Archives (to `writer`) and snapshots a slice, with `pins` for its remote skills.
fn package_slice<W: std::io::Write>(
    manifest: &astrolift_manifest::model::AgentManifest,
    slice: Slice,
    tree: &dyn PayloadTree,
    pins: &SkillPins,
    writer: W,
) -> Result<Packaged, Vec<astrolift_manifest::Diagnostic>> {
    let failed = |e: PackageError| vec![e.to_diagnostic(&manifest.manifest, &manifest.name)];
    let output = write_archive(&slice, tree, writer).map_err(failed)?;
    let hashes = ContentHashes::default();
    let snapshot =
        snapshot_pinned(manifest, &slice, tree, &output, &hashes, pins).map_err(failed)?;
    Ok(Packaged {
        slice,
        output,
        snapshot,
    })
}

/// One agent sliced and its files hashed once: ready to be archived
/// ([`PreparedAgent::package`]) or, when a stored [`FingerprintRecord`]
/// already says what its archive is, snapshotted without building it
/// ([`PreparedAgent::reuse`]).
///
/// The fingerprint covers the slice's files (a resolved remote skill's
/// included), the pins do not: a skill whose ref moved to a commit with the
/// same files keeps its archive and changes only the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedAgent {
    pub slice: Slice,
    pub hashes: ContentHashes,
    /// [`slice_fingerprint`] of the slice, 64 hex digits.
    pub fingerprint: String,
    /// The snapshot pins of its resolved remote skills (empty without any).
    pub pins: SkillPins,
}

/// Slices one agent and hashes its files; every failure is a diagnostic on
/// its manifest.
pub fn prepare_agent(
    manifest: &astrolift_manifest::model::AgentManifest,
    tree: &dyn PayloadTree,
    limits: &astrolift_manifest::Limits,
) -> Result<PreparedAgent, Vec<astrolift_manifest::Diagnostic>> {
    let slice = slice(manifest, tree, limits)?;
    prepare_slice(manifest, slice, tree, SkillPins::new())
}

/// [`prepare_agent`] for an agent whose resolved remote skills are mounted in `tree` (as
/// [`package_agent_with_remote`] packages it): its slice holds their files and its
/// snapshot will pin each one. The agent must then be packaged or reused with `tree`.
pub fn prepare_agent_with_remote(
    manifest: &astrolift_manifest::model::AgentManifest,
    tree: &MountedTree<'_>,
    limits: &astrolift_manifest::Limits,
) -> Result<PreparedAgent, Vec<astrolift_manifest::Diagnostic>> {
    let slice = slice_with_remote(manifest, tree, limits)?;
    let pins = remote_pins(tree.remote())
        .map_err(|e| vec![e.to_diagnostic(&manifest.manifest, &manifest.name)])?;
    prepare_slice(manifest, slice, tree, pins)
}

fn prepare_slice(
    manifest: &astrolift_manifest::model::AgentManifest,
    slice: Slice,
    tree: &dyn PayloadTree,
    pins: SkillPins,
) -> Result<PreparedAgent, Vec<astrolift_manifest::Diagnostic>> {
    let failed = |e: PackageError| vec![e.to_diagnostic(&manifest.manifest, &manifest.name)];
    let hashes = ContentHashes::of_slice(&slice, tree).map_err(failed)?;
    let fingerprint =
        slice_fingerprint(&slice, &hashes).ok_or_else(|| failed(PackageError::Empty))?;
    Ok(PreparedAgent {
        slice,
        hashes,
        fingerprint,
        pins,
    })
}

impl PreparedAgent {
    /// Archives (to `writer`) and snapshots the agent. Fails if a file's
    /// bytes differ from the ones hashed (so the fingerprint always stands
    /// for the archive built); the writer then holds a partial archive.
    pub fn package<W: std::io::Write>(
        self,
        manifest: &astrolift_manifest::model::AgentManifest,
        tree: &dyn PayloadTree,
        writer: W,
    ) -> Result<Packaged, Vec<astrolift_manifest::Diagnostic>> {
        let failed = |e: PackageError| vec![e.to_diagnostic(&manifest.manifest, &manifest.name)];
        let output =
            write_archive_checked(&self.slice, tree, writer, &self.hashes).map_err(failed)?;
        self.snapshot_of(manifest, tree, output)
    }

    /// Snapshots the agent with the archive `output` a stored record gave
    /// for its fingerprint: no archive is built.
    pub fn reuse(
        self,
        manifest: &astrolift_manifest::model::AgentManifest,
        tree: &dyn PayloadTree,
        output: PackageOutput,
    ) -> Result<Packaged, Vec<astrolift_manifest::Diagnostic>> {
        self.snapshot_of(manifest, tree, output)
    }

    fn snapshot_of(
        self,
        manifest: &astrolift_manifest::model::AgentManifest,
        tree: &dyn PayloadTree,
        output: PackageOutput,
    ) -> Result<Packaged, Vec<astrolift_manifest::Diagnostic>> {
        let snapshot = snapshot_pinned(
            manifest,
            &self.slice,
            tree,
            &output,
            &self.hashes,
            &self.pins,
        )
        .map_err(|e| vec![e.to_diagnostic(&manifest.manifest, &manifest.name)])?;
        Ok(Packaged {
            slice: self.slice,
            output,
            snapshot,
        })
    }
}
