//! The sync function against the fake GitHub and SQLite stores, fed with
//! batches shaped like `events/sync-batch.json`, and report jobs relayed
//! through a moto SQS queue.

mod batches;
mod dependents;
mod reconcile;
mod reports;
mod support;
