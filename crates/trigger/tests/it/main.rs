//! Integration tests of astrolift-trigger (one binary).

mod aws;
mod callback;
mod containment;
mod dispatch;
mod env_spec;
mod evaluate;
mod github;
mod keep;
mod message;
mod outbox;
mod render;
mod replay;
mod runaway;
mod samples;
mod service;
mod support;
mod tenancy;
mod verify;
mod workflow;
mod workflow_attempts;

/// The jq worker entry of this test binary: the sandbox's pool starts this
/// binary again with `ASTROLIFT_JQ_WORKER` set and `--exact jq_worker` (see
/// `support::limits`), and this test then serves as a worker and exits the
/// process. As an ordinary test it returns at once.
#[test]
fn jq_worker() {
    astrolift_jq::sandbox::serve_if_requested();
}
