//! Why an import produced nothing. Every variant is bad input (the CLI exits
//! 2 and writes nothing); semantic gaps are diagnostics, not errors.

/// A source that cannot be imported at all.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {size} bytes, over the {limit}-byte limit for an import source")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error(
        "{path}: {nodes} nodes and {edges} edges, over the limit of {max_nodes} nodes and {max_edges} edges"
    )]
    TooManyNodes {
        path: String,
        nodes: usize,
        edges: usize,
        max_nodes: usize,
        max_edges: usize,
    },
    #[error(
        "{path}: its values would take over {limit} bytes of memory once parsed (an export this large is refused)"
    )]
    TooComplex { path: String, limit: u64 },
    #[error("{path}: not UTF-8 text")]
    NotUtf8 { path: String },
    #[error("{path}:{line}:{column}: not JSON: {message}")]
    NotJson {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}:{line}:{column}: the JSON ends early (a truncated export?)")]
    Truncated {
        path: String,
        line: usize,
        column: usize,
    },
    #[error("{path}: not a {expected} export: {reason}")]
    WrongFormat {
        path: String,
        expected: &'static str,
        reason: String,
    },
    #[error("{path}: no AGENTS.md file")]
    NoAgentsMd { path: String },
    #[error("{path}: not an Agent Package archive: {reason}")]
    BadArchive { path: String, reason: String },
    #[error(
        "{path}: entry `{entry}` escapes the package (absolute, `..`, or not a plain relative path)"
    )]
    ArchiveEscape { path: String, entry: String },
    #[error("{path}: the snapshot does not match the archive: {reason}")]
    SnapshotMismatch { path: String, reason: String },
    #[error(
        "`{name}` is not a valid agent name: 1-64 of a-z 0-9 `-`, no leading, trailing or double hyphen"
    )]
    InvalidName { name: String },
    #[error("cannot read {path}: {reason}")]
    Read { path: String, reason: String },
}
