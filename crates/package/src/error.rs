//! Why packaging one agent failed: the error every step (slice hashing,
//! archive, snapshot, remote skill pins) returns, and its diagnostic.

use std::io;

use astrolift_manifest::tree::ReadError;
use astrolift_manifest::{Code, Diagnostic, Span};

use crate::codes;

/// Why an archive was not written. Except for `Write`, nothing was written
/// when this is returned; after a `Read` or `Write` error the writer holds a
/// partial archive that the caller must discard (write to a temp file and
/// rename on success).
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    #[error("the package is {size} bytes uncompressed, over the {limit}-byte limit")]
    TooLarge { size: u64, limit: u64 },
    #[error("the package would be empty")]
    Empty,
    #[error("{path} is not a regular file of the source tree")]
    NotAFile { path: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: ReadError,
    },
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot write the archive: {0}")]
    Write(#[source] io::Error),
}

impl PackageError {
    pub fn code(&self) -> &'static Code {
        match self {
            PackageError::TooLarge { .. } => &codes::TOO_LARGE,
            PackageError::Empty => &codes::EMPTY,
            PackageError::NotAFile { .. } => &codes::SPECIAL_FILE,
            PackageError::Read { .. } | PackageError::Io { .. } | PackageError::Write(_) => {
                &codes::READ_FAILED
            }
        }
    }

    pub fn to_diagnostic(&self, manifest: &str, agent: &str) -> Diagnostic {
        Diagnostic::new(
            self.code(),
            manifest,
            Span::FILE,
            format!("agent `{agent}` cannot be packaged: {self}"),
        )
    }
}
