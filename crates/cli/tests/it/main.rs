//! Integration tests of the `astrolift` binary and its renderers: one test
//! binary, one module per concern.

mod abuse;
mod callbacks;
mod capacity;
mod cli;
mod comment_commands;
mod configs;
mod containment;
#[path = "../../../../tests/containment/cases.rs"]
mod containment_cases;
mod dead_letter_queue;
#[path = "../../../../tests/sqs/dead_letter_queues.rs"]
mod dead_letter_queues;
#[path = "../../../../tests/schemas/dispatch.rs"]
mod dispatch_schema;
mod docs;
mod durable_queue;
mod errors;
mod examples;
mod fix;
mod hostile;
mod import;
mod inline;
mod killed;
mod layers;
mod local_skills;
mod lock;
mod pipes;
mod previews;
mod push_bench;
mod reconcile;
mod reference;
mod registry;
mod remote_skills;
mod renderers;
mod samples;
mod sarif_github;
mod sarif_schema;
mod sentinel;
mod serve;
mod serve_process;
mod suggest;
mod suggested_commands;
mod support;
mod trigger_replay;
#[path = "../../../../tests/trigger-replay/cases.rs"]
mod trigger_replay_cases;
mod triggers;
mod workflows;
