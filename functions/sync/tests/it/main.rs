//! The sync function against the fake GitHub and SQLite stores, fed with
//! batches shaped like `events/sync-batch.json`.

mod batches;
mod support;
