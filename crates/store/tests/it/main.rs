#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

//! The store contract suite: every test is written once, generic over the trait, and run
//! against each implementation (directory + S3 for blobs, SQLite + DynamoDB for state).
//!
//! The AWS runs need `moto_server`: `eval "$(scripts/moto.sh start)"`. Without
//! `AWS_ENDPOINT_URL` they are skipped with a note, or fail when `ASTROLIFT_REQUIRE_AWS=1`.

/// Runs each named contract test against SQLite and DynamoDB on a two-thread runtime (the
/// tests that race two writers need one): the workflow and task contracts.
macro_rules! concurrent_contract_tests {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test(crate::state_contract::sqlite_subject().await).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    if let Some(subject) = crate::state_contract::dynamo_subject(stringify!($test)).await {
                        super::$test(subject).await;
                    }
                }
            )*
        }
    };
}

/// Runs each named contract test against SQLite and DynamoDB (the state store contracts).
macro_rules! state_contract_tests {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test(crate::state_contract::sqlite_subject().await).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test]
                async fn $test() {
                    if let Some(subject) = crate::state_contract::dynamo_subject(stringify!($test)).await {
                        super::$test(subject).await;
                    }
                }
            )*
        }
    };
}

mod agent_contract;
mod aws_errors;
mod binding_contract;
mod blob_contract;
mod config_contract;
mod delivery_contract;
mod dispatch_contract;
mod env_spec_contract;
mod fs_blob;
mod installation_contract;
mod job_contract;
mod kept_request_contract;
mod layer_contract;
mod locations;
mod outbox_contract;
mod preview_contract;
mod registration_contract;
mod seen_head_contract;
mod skill_contract;
mod state_backends;
mod state_contract;
mod support;
mod task_contract;
mod template_shape;
mod timing;
mod workflow_contract;
mod workspace_contract;
