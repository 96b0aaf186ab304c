//! jq programs of trigger bindings (`filter`, `payload`) and workflow stages
//! (`payload`): compiling them, the limits of one evaluation, and the
//! evaluation sandbox.
//!
//! See ARCHITECTURE.md (`crates/jq`) and docs/reference.md §5.5 and §14.
//!
//! - [`program`]: [`JqProgram::compile`], what validation uses (a syntax
//!   error becomes a diagnostic at its exact position), with the definitions
//!   that read the environment, read further input, log or halt removed.
//! - [`limits`]: [`JqLimits`], the time and output budget of one evaluation.
//! - `sandbox` (feature `sandbox`): a program compiled with guards and run in
//!   a worker process of a warm pool under a time, stack, memory and output
//!   budget.
//!
//! # Invariants
//! - A program that compiles for validation compiles for the sandbox, with
//!   the same errors: the sandbox compiles through [`JqProgram::compile`] first.
//! - Without the `sandbox` feature the crate does no I/O and starts nothing,
//!   so `manifest` stays pure.
//! - A tenant's program never runs in the process that serves requests when
//!   the binary called `sandbox::init`.

pub mod limits;
pub mod program;
#[cfg(feature = "sandbox")]
pub mod sandbox;

pub use limits::JqLimits;
pub use program::{JqData, JqError, JqErrorKind, JqProgram, JqRunError, REMOVED, REMOVED_VARS};
