//! Placeholder: see ARCHITECTURE.md for what this crate will own.
#![forbid(unsafe_code)]
