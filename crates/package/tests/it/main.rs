//! Integration tests of astrolift-package: one binary.

mod common;
mod determinism;
mod slice;
mod snapshot;
mod tarball;
