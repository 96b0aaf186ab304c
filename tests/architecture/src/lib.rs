//! Tests of the workspace's structure, the rules of ARCHITECTURE.md that no
//! compiler checks.
//!
//! - **No import cycle inside a crate.** A module (one `.rs` file) imports
//!   another when it names an item of it by path (`crate::…`, `super::…`,
//!   `self::…`, or a `use` of a child module); a path through a re-export
//!   counts as an import of the module that defines the item. Within each
//!   crate, these imports must form no cycle, so every module can be read,
//!   tested and moved with the modules below it only. A type or function two
//!   modules share lives in a module of its own.
//! - **Dependencies point downwards only** (ARCHITECTURE.md, "Code map"):
//!   the pure crates (`manifest`, `package`, `jq`) reach no network, AWS,
//!   storage or runtime crate, and depend on no crate above them.
//!
//! This library holds the analysis of the first rule: it reads a crate's
//! module tree from its root file the way the compiler does (following `mod`
//! declarations; `#[cfg(test)]` items are left out), collects the paths each
//! module names ([`references`]), resolves them through re-exports to the
//! module that defines the item ([`graph`]) and finds the strongly connected
//! components of the import graph. The tests are in `tests/it`.
#![forbid(unsafe_code)]

pub mod error;
pub mod graph;
pub mod references;
pub mod tree;
pub mod workspace;

pub use error::AnalysisError;
pub use graph::{Cycle, Edge, cycles};
pub use tree::{ModuleTree, read_module_tree};
pub use workspace::{CrateRoot, Dependency, crate_roots, dependencies};
