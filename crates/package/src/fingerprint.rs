//! The slice fingerprint: a cheap identity of an archive *before* it is built.
//!
//! Building an archive means reading every file and deflating it; the digest
//! is only known at the end. A re-sync of an unchanged repository would
//! rebuild every archive just to learn digests it already stored. The
//! fingerprint is the sha256 of everything the archive bytes depend on:
//!
//! - [`FINGERPRINT_FORMAT`], which names the archive format (tar layout,
//!   gzip framing, [`COMPRESSION_LEVEL`], chunking); bump it with any change
//!   to `archive.rs` or `gzip.rs` that changes bytes;
//! - for every slice file, in archive order: its destination bytes, its mode
//!   (0644/0755), its size and the sha256 of its content.
//!
//! Each field is length-prefixed, so no two slices share an encoding. Package
//! rules (`include`, `exclude`, `executables`, shared mounts) are covered by
//! what they produce: a rule change that changes a destination or a mode
//! changes the fingerprint, one that changes nothing packaged does not need to.
//!
//! A [`FingerprintRecord`] stores what one fingerprint's archive turned out
//! to be (the [`PackageOutput`], its `content_digest` included: a record without one is
//! of an older format, under another key, and never read); the sync pipeline keeps it as a
//! content-addressed blob and, on a later run with the same fingerprint,
//! reuses the output instead of building the archive again. The record is
//! only written after the archive was built from exactly the hashed bytes
//! ([`crate::package_prepared`] checks them while archiving).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::archive::{COMPRESSION_LEVEL, PackageOutput};
use crate::slice::Slice;

// Defined in its own module (archives and snapshots use it too); re-exported
// so `fingerprint::ContentHashes` keeps working.
pub use crate::content_hash::ContentHashes;

/// Names the archive format the fingerprint stands for. Part of every
/// fingerprint: changing it invalidates every stored record.
pub const FINGERPRINT_FORMAT: &str = "astrolift.slice-fingerprint/v2 tar=gnu gzip=chunked-1MiB";

/// The fingerprint of a slice whose contents hash to `hashes`, as 64 hex
/// digits. `None` when a file of the slice has no hash (not hashed from this
/// slice).
pub fn slice_fingerprint(slice: &Slice, hashes: &ContentHashes) -> Option<String> {
    let mut hasher = Sha256::new();
    put_bytes(&mut hasher, FINGERPRINT_FORMAT.as_bytes());
    hasher.update(u64::from(COMPRESSION_LEVEL).to_le_bytes());
    hasher.update((slice.files.len() as u64).to_le_bytes());
    for file in &slice.files {
        put_bytes(&mut hasher, file.dest.as_bytes());
        let mode: u32 = if file.executable { 0o755 } else { 0o644 };
        hasher.update(mode.to_le_bytes());
        hasher.update(file.size.to_le_bytes());
        hasher.update(hashes.get(&file.source)?);
    }
    Some(hex::encode(hasher.finalize()))
}

fn put_bytes(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

/// What the archive of one fingerprint turned out to be: stored as JSON
/// next to the archives, read back on later runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FingerprintRecord {
    pub format: String,
    pub digest: String,
    pub content_digest: String,
    pub size: u64,
    pub files: u64,
    pub uncompressed_size: u64,
}

impl FingerprintRecord {
    pub fn new(output: &PackageOutput) -> Self {
        Self {
            format: FINGERPRINT_FORMAT.to_owned(),
            digest: output.digest.clone(),
            content_digest: output.content_digest.clone(),
            size: output.size,
            files: output.files,
            uncompressed_size: output.uncompressed_size,
        }
    }

    pub fn to_json(&self) -> Vec<u8> {
        // A struct of strings and integers always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The output a stored record describes for `slice`, or `None` when the
    /// record does not parse or does not fit the slice (see [`FingerprintRecord::fits`]):
    /// the archive is then built.
    pub fn output_for(bytes: &[u8], slice: &Slice) -> Option<PackageOutput> {
        if slice.inline {
            return Some(PackageOutput::inline());
        }
        serde_json::from_slice::<FingerprintRecord>(bytes)
            .ok()?
            .fits(slice)
    }

    /// The output this record describes for `slice`, or `None` when it does not fit the
    /// slice (another format, another file count or size, a malformed digest).
    pub fn fits(self, slice: &Slice) -> Option<PackageOutput> {
        if slice.inline {
            return Some(PackageOutput::inline());
        }
        let fits = self.format == FINGERPRINT_FORMAT
            && is_sha256_digest(&self.digest)
            && is_sha256_digest(&self.content_digest)
            && self.files == slice.files.len() as u64
            && self.uncompressed_size == slice.uncompressed_size
            && self.size > 0;
        fits.then_some(PackageOutput {
            digest: self.digest,
            content_digest: self.content_digest,
            size: self.size,
            files: self.files,
            uncompressed_size: self.uncompressed_size,
            inline: false,
        })
    }
}

/// `sha256:` and 64 lowercase hex digits.
fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}
