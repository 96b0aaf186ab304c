//! Library half of the `astrolift` binary: the renderers of validation
//! results, kept out of `main.rs` so integration tests can drive them with
//! hand-built diagnostics, and the one rule for colour they and the log lines follow.
//!
//! The commands themselves live in the binary (`src/cmd/`), because they
//! use `anyhow` and talk to the terminal.
#![forbid(unsafe_code)]

pub mod colour;
pub mod render;
