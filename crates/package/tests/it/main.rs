//! Integration tests of astrolift-package: one binary.

mod catalogue;
mod common;
mod determinism;
mod golden;
mod fingerprint;
mod slice;
mod snapshot;
mod tarball;
