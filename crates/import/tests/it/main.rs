//! Integration tests of the importers: one binary, one module per concern.

mod bad_input;
mod formats;
mod package;
mod prompts;
mod support;
mod valid;
