//! GitHub: everything the bot says to or hears from GitHub.
//!
//! Owns webhook verification (`X-Hub-Signature-256`, HMAC-SHA256 over the raw
//! body, constant-time, current and previous secret), the typed events we
//! handle, and the sync job a webhook becomes. App authentication, tarball
//! download and check runs are added by issue 6.
//!
//! Invariants:
//! - Nothing is parsed before the body's size is checked and its signature
//!   verified: an unsigned body is never deserialised.
//! - Event payloads are read leniently: unknown fields are ignored and every
//!   field we do not strictly need is optional, so a new GitHub field never
//!   turns into a failed delivery. Unknown events and actions are
//!   acknowledged and ignored, never an error.
//! - Secrets are held in `secrecy` types and never appear in `Debug`, logs or
//!   error messages.
//!
//! Deliberately absent: the pipeline (the `sync` crate) and storage (the
//! `store` crate). This crate only translates between HTTP and our types.
#![forbid(unsafe_code)]

pub mod github;
pub mod webhook;
