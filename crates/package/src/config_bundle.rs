//! A config manifest's bundle (docs/reference.md §5.3
//! and §13): what a dispatch with an env spec that names the
//! config manifest hands over.
//!
//! The bundle is canonical JSON (the snapshot's writer, [`canonical_json`]):
//! `{"schema": "astrolift.config/v1", "manifest_path", "document", "files"}`,
//! where `document` is the assembled config ([`astrolift_manifest::config`])
//! and `files` lists every file it requests
//! ([`astrolift_manifest::config::requested_files`]) by path, with the
//! sha256 of its bytes, its size and its mode: `0755` for scripts and
//! binaries, `0644` for prompts, files and assets. Each file is stored
//! content-addressed by those bytes (the `store` crate's key
//! `configs/files/sha256/<hex>`); the bundle's own sha256 names it.
//!
//! Invariants: only regular files of the tree are bundled (a symlink or a
//! special file is an error, as in a package); the files' total size is
//! checked against the package size limit before any file is read; no I/O
//! beyond reading the tree.

use astrolift_manifest::config::{RequestedFile, requested_files};
use astrolift_manifest::tree::{EntryKind, SourceTree};
use astrolift_manifest::{Diagnostic, Limits, Span};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::content_hash::file_hash;
use crate::slice::SliceError;
use crate::snapshot::canonical_json;
use crate::source::PayloadTree;

/// The bundle format identifier.
pub const CONFIG_BUNDLE_SCHEMA: &str = "astrolift.config/v1";

/// Mode of a script or binary.
pub const EXECUTABLE_MODE: &str = "0755";
/// Mode of every other file.
pub const FILE_MODE: &str = "0644";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigBundle {
    pub schema: String,
    /// Repo-relative path of the config manifest.
    pub manifest_path: String,
    /// The assembled config document.
    pub document: Value,
    /// Every requested file, sorted by path bytes.
    pub files: Vec<ConfigFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigFile {
    /// Repo-relative path.
    pub path: String,
    /// `sha256:<hex>` of its bytes.
    pub digest: String,
    pub size: u64,
    /// [`EXECUTABLE_MODE`] or [`FILE_MODE`].
    pub mode: &'static str,
}

impl ConfigBundle {
    /// The canonical JSON bytes: what is stored and hashed.
    pub fn canonical_json(&self) -> Vec<u8> {
        // Plain structs, strings and integers always serialize; Null is the
        // (unreachable) fallback rather than a panic.
        canonical_json(&serde_json::to_value(self).unwrap_or(Value::Null))
    }

    /// sha256 (hex) of the canonical JSON.
    pub fn digest(&self) -> String {
        hex::encode(Sha256::digest(self.canonical_json()))
    }
}

/// Bundles the assembled config `document` of `manifest_path`: lists and
/// hashes every file it requests. Every failure is a diagnostic on the
/// config manifest, and there is no bundle then.
pub fn bundle_config(
    tree: &dyn PayloadTree,
    manifest_path: &str,
    document: &Value,
    limits: &Limits,
) -> Result<ConfigBundle, Vec<Diagnostic>> {
    let requested = requested_files(document);
    let failed = |errors: Vec<SliceError>| {
        errors
            .iter()
            .map(|e| config_diagnostic(manifest_path, e))
            .collect::<Vec<_>>()
    };
    let sizes = checked_sizes(tree, &requested, limits.package_size).map_err(failed)?;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut files = Vec::with_capacity(requested.len());
    for (file, size) in requested.iter().zip(sizes) {
        let hash = file_hash(tree, &file.path, &mut buffer).map_err(|e| {
            vec![Diagnostic::new(
                e.code(),
                manifest_path,
                Span::FILE,
                format!("config manifest `{manifest_path}` cannot be bundled: {e}"),
            )]
        })?;
        files.push(ConfigFile {
            path: file.path.clone(),
            digest: format!("sha256:{}", hex::encode(hash)),
            size,
            mode: if file.executable {
                EXECUTABLE_MODE
            } else {
                FILE_MODE
            },
        });
    }
    Ok(ConfigBundle {
        schema: CONFIG_BUNDLE_SCHEMA.to_owned(),
        manifest_path: manifest_path.to_owned(),
        document: document.clone(),
        files,
    })
}

/// Each requested file's listed size, or every reason the files cannot be
/// bundled: not a regular file of the tree, or more bytes than `limit`.
fn checked_sizes(
    tree: &dyn SourceTree,
    requested: &[RequestedFile],
    limit: u64,
) -> Result<Vec<u64>, Vec<SliceError>> {
    let mut errors = Vec::new();
    let mut sizes = Vec::with_capacity(requested.len());
    for file in requested {
        let entry = tree.entry(&file.path);
        match entry.map(|e| (e.kind, e.size)) {
            Some((EntryKind::File, size)) => sizes.push(size),
            Some((EntryKind::Symlink, _)) => errors.push(SliceError::Symlink {
                entry: file.path.clone(),
            }),
            Some(_) => errors.push(SliceError::SpecialFile {
                entry: file.path.clone(),
            }),
            None => errors.push(SliceError::MissingSource {
                path: file.path.clone(),
                what: "a file the config requests",
            }),
        }
    }
    let total = sizes
        .iter()
        .fold(0u64, |sum, size| sum.saturating_add(*size));
    if total > limit {
        errors.push(SliceError::TooLarge { size: total, limit });
    }
    if errors.is_empty() {
        Ok(sizes)
    } else {
        Err(errors)
    }
}

fn config_diagnostic(manifest_path: &str, error: &SliceError) -> Diagnostic {
    Diagnostic::new(
        error.code(),
        manifest_path,
        Span::FILE,
        format!("config manifest `{manifest_path}` cannot be bundled: {error}"),
    )
}
