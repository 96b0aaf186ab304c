//! The `astrolift` binary. See README.md for every command.
#![forbid(unsafe_code)]

fn main() {}
