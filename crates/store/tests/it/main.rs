#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

//! The store contract suite: every test is written once, generic over the trait, and run
//! against each implementation (directory + S3 for blobs, SQLite + DynamoDB for state).
//!
//! The AWS runs need `moto_server`: `eval "$(scripts/moto.sh start)"`. Without
//! `AWS_ENDPOINT_URL` they are skipped with a note, or fail when `ASTROLIFT_REQUIRE_AWS=1`.

mod aws_errors;
mod blob_contract;
mod fs_blob;
mod state_backends;
mod state_contract;
mod support;
mod template_shape;
mod timing;
mod workflow_contract;
