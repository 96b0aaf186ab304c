//! Integration tests of astrolift-package: one binary.

mod abuse;
mod bounds;
mod catalogue;
mod common;
mod dependencies;
mod determinism;
mod fingerprint;
mod golden;
mod inline;
mod remote;
mod slice;
mod snapshot;
mod tarball;
