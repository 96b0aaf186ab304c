//! Why a crate's sources could not be analysed.

use std::fmt;

/// A module file that could not be found, read or parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnalysisError {
    /// A `mod` declaration with neither `<name>.rs` nor `<name>/mod.rs`, or a
    /// root file that cannot be read.
    Missing { file: String },
    /// A file that does not parse as Rust.
    Parse { file: String, message: String },
}

impl fmt::Display for AnalysisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalysisError::Missing { file } => write!(f, "cannot read module file {file}"),
            AnalysisError::Parse { file, message } => write!(f, "cannot parse {file}: {message}"),
        }
    }
}

impl std::error::Error for AnalysisError {}
