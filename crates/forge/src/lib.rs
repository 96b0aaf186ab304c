//! GitHub: everything the bot says to or hears from GitHub.
//!
//! Owns webhook verification (`X-Hub-Signature-256`, HMAC-SHA256 over the raw
//! body, constant-time, current and previous secret), a delivery read once
//! into its envelope and the payload model of its kind ([`webhook`]); and the REST side ([`github`]) on `octocrab`: App
//! JWTs, installation tokens cached until 5 minutes before expiry, the retry
//! policy as a tower layer (`retry-after`, `x-ratelimit-reset`, 5xx with
//! backoff, never other 4xx), streaming tarball downloads through the
//! redirect (bounded in size), check runs with annotations in batches of
//! 50 and outputs trimmed under 65,535 bytes, pull requests (state, head and
//! base; files with patches; `COMMENT` reviews of at most 50 comments), and
//! issue comments with their reactions.
//!
//! Invariants:
//! - Nothing is parsed before the body's size is checked and its signature
//!   verified: an unsigned body is never deserialised.
//! - A delivery's body is read once into its envelope (what ingress, trust
//!   and reporting read) and at most once more into its kind's payload model.
//! - Event payloads are read leniently: unknown fields are ignored and every
//!   field we do not strictly need is optional, so a new GitHub field never
//!   turns into a failed delivery. Unknown events and actions are
//!   acknowledged and ignored, never an error.
//! - Secrets (webhook secrets, the App key, installation tokens) are held in
//!   `secrecy` types and never appear in `Debug`, logs or error messages; a
//!   download URL (its query carries a token) never reaches an error either.
//! - `Authorization` is never sent to a host other than the API's.
//!
//! Deliberately absent: the pipeline (the `sync` crate) and storage (the
//! `store` crate). This crate only translates between HTTP and our types.
#![forbid(unsafe_code)]

pub mod account;
pub mod github;
pub mod webhook;
