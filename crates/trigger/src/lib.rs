//! Trigger bindings at run time (docs/reference.md §5.5, §10–§14).
//!
//! # What this crate owns
//! - [`evaluate`]: one request against a [`CompiledBinding`] — verification
//!   ([`verify`]: `hmac-sha256`, `github`, `token`, all constant-time), the
//!   body limit, JSON parsing, the filter, the payload mapping — giving an
//!   [`Outcome`] or a [`TriggerError`] whose [`TriggerError::status`] is the
//!   HTTP answer: 401 bad signature, 404 unknown trigger (for callers), 413
//!   too large, 400 bad JSON or idempotency key, 422 filter/mapping failed
//!   (with the jq error, cut to 2 KiB), 500 secret missing or unreadable, 503
//!   secret store unavailable or every evaluation slot taken.
//!   [`evaluate_verified`] skips verification for GitHub events the App's
//!   webhook already verified. HTTP bodies carry
//!   [`TriggerError::public_message`], which names no header, reference or
//!   variable.
//! - Evaluation runs in `astrolift_jq::sandbox` (crates/jq): each binary
//!   calls `astrolift_jq::sandbox::init` first thing in `main`.
//! - [`secrets`]: `secret://` resolution for a project,
//!   `ASTROLIFT_SECRETS=env|aws` (`aws`: `${ASTROLIFT_SECRET_PREFIX}<project>/<name>`).
//! - [`trust`]: the trust policy of GitHub-sourced bindings (fork pull
//!   requests, `author_association`).
//! - [`dispatch`]: idempotency keys, the conditional dispatch record through
//!   `StateStore::record_dispatch`, the queue message (format in its docs),
//!   an SQS and an in-memory (tests only) [`dispatch::DispatchQueue`].
//! - [`message`]: the dispatch message v1 and the one function that builds
//!   it and composes the prompts; [`content`]: what a dispatch carries, read
//!   from the blob store (snapshot, prompt texts, presigned package URL).
//! - [`outbox`]: the durable, bounded local outbox used when no dispatch
//!   queue is configured, drained to SQS when one is.
//! - [`env`]: `render_runtime_env`, the runtime environment table of docs/reference.md §11;
//!   [`render`]: `render_dispatch`, a recorded dispatch rendered into it (a cluster key
//!   minted per render, its hash kept as the task's latest): what `astrolift render` and a
//!   controller call.
//! - [`callback`]: `POST /callbacks/{task_id}` (Bearer cluster key, constant-time; the
//!   task's `running` and one terminal report; a workflow stage's run advanced), through
//!   [`TriggerService::callback`].
//! - [`config_content`]: a dispatch's `config`, the env spec's packaged config manifest
//!   with a presigned URL per file ([`config_content::env_spec_parts`], the one call every
//!   dispatch path makes); a config that cannot be delivered fails the dispatch.
//! - [`report`]: a `report = "comment" | "check"` binding's target, read from the event at
//!   dispatch, and the first terminal result handed to a [`report::ResultReporter`]
//!   (best effort; the App's reporter lives in `astrolift-bot`).
//! - [`workflow`]: workflow runs: start a run, fold each stage's terminal
//!   report into it with conditional writes (exactly once), and dispatch the
//!   stages whose needs are done with their payloads evaluated in the sandbox.
//! - [`service`]: [`TriggerService`], stored bindings to HTTP-shaped answers:
//!   `handle` for `POST /triggers/{trigger_id}` (every status of docs/reference.md
//!   §10, duplicates, inactive agents) and `fan_out_github` for GitHub events
//!   on repositories with `source = "github"` bindings, with the compiled
//!   programs cached per binding and snapshot.
//!
//! # Semantics a binding author relies on
//! - **The filter** must yield exactly one boolean: `true` dispatches;
//!   `false` or no output at all is "filtered out" (204); anything else is a
//!   422. A binding without a filter always dispatches.
//! - **The mapping** must yield one object, or `null`, `{}` or nothing — the
//!   three forms of the *empty payload*, which sets no
//!   `ASTROLIFT_TRIGGER_PAYLOAD` (never the string `null`). Any other type, or
//!   a second output, is a 422 saying which type it got.
//! - **A missing field is `null`**, as in jq: `.issue.key` on `{}` gives
//!   `null` and the payload carries `"issue": null`. To require a field,
//!   write `.issue.key // error("issue.key is required")` (422 with that
//!   message), or `.issue.key // empty` to drop the request (in a filter:
//!   filtered out; in a mapping: the empty payload).
//! - **Bad JSON is 400** (the request, not the program, is wrong); 422 is kept
//!   for the binding's programs. A body over `Limits::trigger_body` is 413
//!   before any parsing; exactly the limit is accepted. Verification comes
//!   first of all: an unsigned huge body is a 401.
//!
//! # Invariants
//! - Programs are compiled once per binding ([`CompiledBinding`]) with the
//!   same restricted definitions as validation (`astrolift_manifest::jq`: no
//!   `env`, `$ENV`, `input`, `inputs`, `debug`, `stderr`, `halt`, no I/O).
//! - A runaway or faulting program gives a 422 within the time limit plus a
//!   small grace, stops using CPU then, and never takes the process down
//!   (tests: `def f: f; f`, `[range(1e9)]`, `repeat(1)` and friends in
//!   `runaway.rs`; stack overflow, allocation failure, capacity overflow and
//!   slow builtins in `containment.rs`, and on release binaries in the CLI's
//!   and the trigger function's tests).
//! - An accepted payload always reaches the dispatch record and the queue
//!   message intact (size and nesting bounded so that it parses back).
//! - Secret values are `SecretString`s; no error or log names a value, only
//!   its `secret://` reference, and no HTTP body names the reference.
//! - A binding's secrets are those of its registration's project; no
//!   reference reaches another project's secret.
//!
//! # Deliberately absent
//! HTTP routing: `functions/trigger`, `serve` and the webhook function map
//! requests to [`TriggerService`] and its answers back to HTTP. Binding
//! registration on apply lives in `astrolift-sync`; the CLI commands in
//! `astrolift-cli`.
#![forbid(unsafe_code)]

pub mod callback;
pub mod config_content;
pub mod content;
pub mod dispatch;
pub mod env;
mod error;
mod evaluate;
mod kept;
pub mod message;
pub mod outbox;
pub mod prompts;
pub mod render;
pub mod report;
mod response;
pub mod secrets;
pub mod service;
mod source;
pub mod trust;
pub mod verify;
pub mod workflow;

pub use error::{RETRY_AFTER_SECONDS, Stage, TriggerError};
pub use evaluate::{CompiledBinding, Outcome, evaluate, evaluate_verified};
pub use secrets::{AwsSecretResolver, EnvSecretResolver, SecretError, SecretResolver};
pub use service::{FanOutResult, TriggerResponse, TriggerService};
