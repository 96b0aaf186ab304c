//! Sync scenarios, run on SQLite + a blob directory and on DynamoDB + S3 (moto).
//!
//! The AWS runs need `moto_server` (`eval "$(scripts/moto.sh start)"`); without
//! `AWS_ENDPOINT_URL` they are skipped with a note, or fail when
//! `ASTROLIFT_REQUIRE_AWS=1` (CI sets it).

mod ancestry;
mod faults;
mod harness;
mod many_agents;
mod reuse;
mod scenarios;
mod tenancy;
mod workflows;
