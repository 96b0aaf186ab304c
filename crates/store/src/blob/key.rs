//! Blob keys: validated, relative object names ([`BlobKey`]).

use std::fmt;

use crate::{StoreError, StoreResult};

/// Longest key we accept (S3 allows 1,024 bytes, and a prefix comes on top).
const MAX_KEY_LEN: usize = 512;

/// A validated object key: relative, `/`-separated, made of `[A-Za-z0-9._-]` segments,
/// none of them empty, `.` or `..`. So a key can never escape a directory store's root.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobKey(String);

impl BlobKey {
    /// Validates a key.
    pub fn parse(key: &str) -> StoreResult<Self> {
        let invalid = |why: &str| StoreError::Invalid(format!("blob key {key:?}: {why}"));
        if key.is_empty() || key.len() > MAX_KEY_LEN {
            return Err(invalid("must be 1 to 512 bytes"));
        }
        for segment in key.split('/') {
            if segment.is_empty() || segment == "." || segment == ".." {
                return Err(invalid("has an empty, `.` or `..` segment"));
            }
            if !segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            {
                return Err(invalid(
                    "may only contain A-Z, a-z, 0-9, `.`, `_`, `-` and `/`",
                ));
            }
        }
        Ok(BlobKey(key.to_owned()))
    }

    /// `packages/sha256/<hex>.tar.gz`, the key of a package archive.
    pub fn package(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "packages/sha256/{}.tar.gz",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// `packages/fingerprints/<hex>.json`, the record of what archive a slice
    /// fingerprint produced (a cache: written after the archive, never needed
    /// for correctness; delete it together with `packages/`).
    pub fn package_fingerprint(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "packages/fingerprints/{}.json",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// `snapshots/sha256/<hex>.json`, the key of an agent package snapshot.
    pub fn snapshot(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "snapshots/sha256/{}.json",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// `configs/sha256/<hex>.json`, the key of a config manifest's bundle (its assembled
    /// document and the list of its files).
    pub fn config_bundle(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "configs/sha256/{}.json",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// `configs/files/sha256/<hex>`, the key of one file a config manifest requests
    /// (a prompt, a file, a script, a binary or an asset), by its bytes.
    pub fn config_file(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "configs/files/sha256/{}",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// `layers/sha256/<hex>.tar.gz`, the key of a dependency layer the packager agent
    /// built (docs/reference.md "Dependency layers"), by the digest it returned.
    pub fn layer(sha256_hex: &str) -> StoreResult<Self> {
        Ok(BlobKey(format!(
            "layers/sha256/{}.tar.gz",
            checked_sha256_hex(sha256_hex)?
        )))
    }

    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BlobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Accepts 64 lowercase hex digits, optionally prefixed with `sha256:`.
fn checked_sha256_hex(digest: &str) -> StoreResult<&str> {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(hex)
    } else {
        Err(StoreError::Invalid(format!(
            "{digest:?} is not a sha256 digest (64 lowercase hex digits)"
        )))
    }
}
