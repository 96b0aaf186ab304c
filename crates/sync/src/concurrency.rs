//! How many blob-store requests a sync has in flight at once: each is a round trip
//! (5–30 ms on S3), so a push of many agents runs them side by side, never one after
//! another (docs/reference.md §6). One bound for every kind, so that a sync's fan-out is
//! one number.

/// Blob-store requests (fingerprint lookups, archive, snapshot and fingerprint puts) a sync
/// has in flight at once.
pub(crate) const BLOB_CONCURRENCY: usize = 32;
