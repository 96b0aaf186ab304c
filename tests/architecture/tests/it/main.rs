//! The structure tests of ARCHITECTURE.md: no import cycle inside a crate
//! (`cycles`), dependencies pointing downwards (`dependencies`), comments
//! that cite only the project's docs (`comments`), the code docs/operations.md's
//! compatibility shims name (`shims`), and tests of the analysis itself on
//! small sources (`analysis`).

mod analysis;
mod comments;
mod cycles;
mod dependencies;
mod shims;

use std::path::{Path, PathBuf};

/// The workspace root: two levels above this package (`tests/architecture`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
