//! The sync function against the fake GitHub and SQLite stores, fed with
//! batches shaped like `events/sync-batch.json`, and report jobs relayed
//! through a moto SQS queue.

mod batches;
mod dead_letter;
#[path = "../../../../tests/sqs/dead_letter_queues.rs"]
mod dead_letter_queues;
mod dependents;
mod previews;
mod reconcile;
mod reports;
mod support;
mod trigger_replay;
#[path = "../../../../tests/trigger-replay/cases.rs"]
mod trigger_replay_cases;
