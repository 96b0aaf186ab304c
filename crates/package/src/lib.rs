//! Agent packages: source tree → per-agent slice → deterministic `tar.gz` +
//! sha256 → agent package snapshot (DESIGN.md §6, seed 000 "Package source
//! boundary").
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
//!   [`Snapshot::digest`], the agent's version).
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
pub mod gzip;
pub mod slice;
pub mod snapshot;
pub mod source;
pub mod tarball;

pub use archive::{
    COMPRESSION_LEVEL, PackageError, PackageOutput, write_archive, write_archive_with_threads,
};
pub use slice::{Slice, SliceError, SliceFile, slice};
pub use snapshot::{Snapshot, snapshot};
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
    let failed = |e: PackageError| vec![e.to_diagnostic(&manifest.manifest, &manifest.name)];
    let output = write_archive(&slice, tree, writer).map_err(failed)?;
    let snapshot = snapshot(manifest, &slice, tree, &output).map_err(failed)?;
    Ok(Packaged {
        slice,
        output,
        snapshot,
    })
}
