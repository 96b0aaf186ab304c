//! The sha256 of each file of a slice, read (streamed) once: what the slice
//! fingerprint covers, what a checked archive compares its files against and
//! what the snapshot lists.

use std::collections::BTreeMap;
use std::io::Read;

use sha2::{Digest, Sha256};

use crate::error::PackageError;
use crate::slice::Slice;
use crate::source::{PayloadTree, open_source};

/// sha256 of each slice file's content, by source path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContentHashes(BTreeMap<String, [u8; 32]>);

impl ContentHashes {
    /// Hashes (streams) every file of `slice` once.
    pub fn of_slice(slice: &Slice, tree: &dyn PayloadTree) -> Result<Self, PackageError> {
        let mut buffer = vec![0u8; 64 * 1024];
        let mut hashes = BTreeMap::new();
        for file in &slice.files {
            if hashes.contains_key(&file.source) {
                continue;
            }
            let hash = file_hash(tree, &file.source, &mut buffer)?;
            hashes.insert(file.source.clone(), hash);
        }
        Ok(Self(hashes))
    }

    /// The hash of a source path, when it is a file of the slice.
    pub fn get(&self, source: &str) -> Option<&[u8; 32]> {
        self.0.get(source)
    }

    /// The hex hash of a source path, when it is a file of the slice.
    pub fn hex(&self, source: &str) -> Option<String> {
        self.get(source).map(hex::encode)
    }
}

/// sha256 of one file of the tree, streamed through `buffer`.
pub(crate) fn file_hash(
    tree: &dyn PayloadTree,
    path: &str,
    buffer: &mut [u8],
) -> Result<[u8; 32], PackageError> {
    let mut reader = open_source(tree, path)?;
    let mut hasher = Sha256::new();
    loop {
        let n = reader.read(buffer).map_err(|source| PackageError::Io {
            path: path.to_owned(),
            source,
        })?;
        if n == 0 {
            return Ok(hasher.finalize().into());
        }
        hasher.update(&buffer[..n]);
    }
}
