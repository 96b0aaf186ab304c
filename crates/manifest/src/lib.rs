//! Agent-manifest formats: discovery, validation, diagnostics.
//!
//! This crate owns the formats of docs/reference.md §2 and §5: the native
//! agent manifest (`astrolift.toml`), the federation file
//! (`astrolift.agents.toml`), local skills (`SKILL.md`) and resolved remote ones
//! ([`remote_skill`]), briefs, workflows
//! (`workflows/*.toml`, [`workflow`]), and the diagnostics every renderer
//! shows.
//!
//! Invariants:
//! - **Pure.** It reads a [`tree::SourceTree`] and nothing else: no network,
//!   no AWS, no clock, no environment variables. The CLI, the tests and the
//!   Lambda functions run the same code on the same input and get the same
//!   output.
//! - **Total.** Validation never stops at the first problem and never
//!   panics: any input yields a (best-effort) model plus diagnostics.
//! - **Positioned.** Every diagnostic has a stable code from [`catalogue`]
//!   and a 1-based span on the offending key or value.
//! - **No secrets echoed.** A plaintext secret value never appears in a
//!   diagnostic.
//! - **Bounded.** Every read is under a [`limits::Limits`] bound.
//! - **Deterministic under parallelism.** A repository of more than 64
//!   agents has its manifests read on one scoped thread per core
//!   ([`parallel::map_in_order`]); the output is in the order of a
//!   sequential read.
//!
//! Deliberately absent: packaging (the `package` crate), state, I/O beyond
//! reading the tree.
#![forbid(unsafe_code)]

pub mod brief;
pub mod config;
pub mod diagnostic;
pub mod discovery;
pub mod drift;
pub mod env_spec;
pub mod federation;
pub mod files;
pub mod fix;
pub mod import_codes;
pub mod limits;
pub mod lock;
pub mod model;
pub mod native;
pub mod parallel;
pub mod paths;
pub mod position;
pub mod remote_ref;
pub mod remote_skill;
pub mod reserved_env;
pub mod resolved;
pub mod samples;
pub mod schema;
pub mod skill;
pub mod toml_walk;
pub mod tree;
pub mod triggers;
pub mod validate;
pub mod workflow;
pub mod workspace;
pub mod yaml;

pub use diagnostic::{Code, Counts, Diagnostic, Edit, Fix, Severity, Span};
pub use limits::Limits;
pub use reserved_env::RESERVED_ENV;
pub use tree::{DirTree, EntryKind, FileEntry, MemTree, ReadError, SourceTree};
pub use validate::{AgentSummary, ValidateOptions, Validation, validate_repository};

/// Every diagnostic code this crate can emit, plus the importers' gap codes
/// ([`import_codes`], emitted by `crates/import`). `docs/diagnostics.md` lists
/// the same codes, each with an example; a test keeps the two in step.
pub fn catalogue() -> Vec<&'static Code> {
    let modules: &[&[&'static Code]] = &[
        toml_walk::CODES,
        files::CODES,
        paths::CODES,
        discovery::CODES,
        federation::CODES,
        brief::CODES,
        native::CODES,
        skill::CODES,
        remote_skill::CODES,
        lock::CODES,
        config::CODES,
        workspace::CODES,
        yaml::CODES,
        triggers::CODES,
        samples::CODES,
        env_spec::CODES,
        workflow::CODES,
        import_codes::CODES,
    ];
    modules
        .iter()
        .flat_map(|codes| codes.iter().copied())
        .collect()
}
