//! Storage for Astrolift: blobs (package archives, snapshots) and registration state.
//!
//! # What this crate owns
//! - [`BlobStore`]: content-addressed objects at `packages/sha256/<hex>.tar.gz` and
//!   `snapshots/sha256/<hex>.json` ([`BlobKey`]). Implementations: [`FsBlobStore`]
//!   (`file:DIR`, the embedded default) and [`S3BlobStore`] (`s3://BUCKET[/prefix]`).
//! - [`StateStore`]: the entities of docs/reference.md §7 (registrations per (repository,
//!   manifest path), a manifest covered by at most one, and the synced
//!   commits, installations, agents, audit events, webhook deliveries, env specs, trigger
//!   bindings, dispatches and their tasks: [`state::tasks`], the run of a dispatch as
//!   renders and callbacks move it; registered workspace manifests and drift acceptances:
//!   [`state::workspaces`]; on SQLite, the local dispatch outbox: [`state::outbox`]). Implementations: [`state::SqliteStateStore`] (`sqlite:PATH`, the
//!   embedded default) and [`state::DynamoStateStore`] (`dynamodb:TABLE`), whose single
//!   table's shape is defined once, in [`state::table_definition`]. It is one trait per
//!   concern, each with its contract suite on both backends: `StateStore` is the union of
//!   [`state::RegistrationStore`], [`state::InstallationStore`], [`state::AgentStore`],
//!   [`state::DeliveryStore`], [`state::EnvSpecStore`], [`state::TriggerBindingStore`] and
//!   [`state::DispatchStore`], and reaches the others (tasks, workflows, workspaces,
//!   config packages, skill sources, the outbox, and [`state::jobs`], the jobs of
//!   `serve`'s durable queue and its dead letter) through accessors.
//! - The fault-injecting wrappers of [`testing`] (feature `testing`), for crash tests.
//! - [`load_sdk_config`]: the one AWS SDK configuration every AWS client of the workspace is
//!   made from, on the SDK's own HTTP client.
//!
//! # Invariants
//! - **One HTTP stack.** The SDK's client is hyper 1 over rustls on aws-lc-rs, the stack
//!   the GitHub client (`astrolift_forge`) uses; the SDK's legacy hyper-0.14 client is off.
//! - **Put-if-absent.** An object that exists is never written again (on S3 a conditional
//!   PUT, refused with 412; a multipart upload asks first), and every upload or skip is
//!   counted ([`BlobStats`]), so callers can assert "0 PUTs on a re-run".
//! - **No partial objects.** A directory store writes a temporary file and renames it into
//!   place; S3 makes an object visible only when its PUT or multipart upload completes.
//! - **Conditional state writes.** Agents carry an optimistic `version`; every agent write,
//!   audit event and synced-commit move is conditional, and a failed condition writes nothing
//!   of its batch ([`state::ChangeSet`] documents how a big batch is split). Writes are
//!   counted ([`StateStats`]), so callers can assert "0 writes on a no-op re-run".
//! - **Append-only history.** Audit events are never rewritten or deleted; teardown marks an
//!   agent `torn_down` and keeps it as a tombstone, so versions and history continue.
//! - **One contract.** Each pair of implementations passes the same suite (`tests/it`), the
//!   AWS ones against `moto_server` (`scripts/moto.sh`).
//! - **Answered means committed.** The SQLite store's one connection belongs to a thread
//!   that commits the calls waiting for it together (one `IMMEDIATE` transaction per batch,
//!   a savepoint per call, so a call that fails is rolled back alone); a call is answered
//!   only after its batch's commit.
//! - **No secrets in errors.** [`StoreError`] messages name operations, keys and items, never
//!   credentials, signatures or presigned URLs.
//!
//! # Deliberately absent
//! - No content verification of blobs: keys are trusted to match the bytes; the packager
//!   computes the digests. No blob delete: blobs are immutable and shared between agents and
//!   commits; garbage collection, if ever needed, is a bucket lifecycle rule.
//! - No streaming `get`: consumers of big archives use the presigned URL.
//! - No ordering policy for commits: the store records the synced commit per repository and
//!   ref and moves it conditionally; deciding which commit is newer belongs to `sync`.
//! - No retries of our own: the AWS SDK retries transient failures; [`StoreError::is_retryable`]
//!   tells callers (the SQS consumer) whether redelivery may help.
#![forbid(unsafe_code)]

mod aws;
pub mod blob;
mod error;
mod future;
mod location;
pub mod state;
#[cfg(feature = "testing")]
pub mod testing;

pub use aws::{AwsCause, describe_sdk_error, load_sdk_config};
pub use blob::{
    BlobBody, BlobKey, BlobOptions, BlobStats, BlobStore, FsBlobStore, PutOutcome, S3BlobStore,
    blob_store_from_url, blob_store_from_url_with, open_blob_store,
};
pub use error::{StoreError, StoreResult};
pub use future::BoxFuture;
pub use location::{BlobLocation, StateLocation};
pub use state::{StateStats, StateStore, open_state_store, state_store_from_url};
