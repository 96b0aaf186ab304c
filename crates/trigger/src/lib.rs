//! Trigger bindings at run time, the request side (docs/reference.md §5.5, §10, §12).
//!
//! # What this crate owns
//! - [`evaluate`]: one request against a [`CompiledBinding`] — the body limit,
//!   verification ([`verify`]: `hmac-sha256`, `github`, `token`, all
//!   constant-time), JSON parsing, the filter, the payload mapping — giving an
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
//!   requests, `author_association`), judged on the delivery's envelope
//!   (`astrolift_forge::webhook::Envelope`, read once by `forge`).
//! - [`idempotency`]: the idempotency key of a verified request.
//! - `keep`: the service keeps each binding's last accepted requests (`202`, `204`) in the
//!   state store for replay; best effort, never logged, never changing the answer.
//! - [`replay`]: a kept request's outcome through the registered and the head's binding,
//!   compared (the class, the counts, and the differing paths by shape, never by value);
//!   [`replayer`] evaluates a changed binding's kept requests through both, in the sandbox,
//!   one at a time, at most 8 bindings a replay.
//! - [`samples`]: a binding's `samples` folder evaluated in the sandbox, one sample at a
//!   time, each compared with its `NAME.expected.json` (`trigger/sample-mismatch`) or
//!   reported unpinned (`trigger/sample-unpinned`): what `validate`, `check` and the
//!   check run show.
//! - Everything after the record is `astrolift-dispatch`'s (crates/dispatch):
//!   the dispatch record and queue, the message and its content, prompts, the
//!   runtime environment, the outbox, callbacks, reports and workflow runs.
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
//!   before anything else, signed or not (`serve` stops reading it at the
//!   limit, so every host answers the same); exactly the limit is accepted.
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

mod error;
mod evaluate;
pub mod idempotency;
mod keep;
pub mod replay;
pub mod replayer;
pub mod samples;
pub mod secrets;
pub mod service;
pub mod trust;
pub mod verify;

pub use error::{Stage, TriggerError};
pub use evaluate::{CompiledBinding, Outcome, evaluate, evaluate_verified};
pub use secrets::{AwsSecretResolver, EnvSecretResolver, SecretError, SecretResolver};
pub use service::{FanOutResult, GithubDelivery, TriggerService};
