//! Dispatches, from the record to the runtime (docs/reference.md §5.5, §8, §10–§14).
//!
//! # What this crate owns
//! - [`dispatch`]: the conditional dispatch record through
//!   `StateStore::record_dispatch`, the queue message (format in its docs), an
//!   SQS and an in-memory (tests only) [`dispatch::DispatchQueue`], and
//!   [`dispatch::delivery_key`], a GitHub delivery's idempotency key.
//! - [`message`]: the dispatch message v1 and the one function that builds it;
//!   [`content`]: what a dispatch carries, read from the blob store (snapshot,
//!   prompt texts, presigned package URL) and its `config`, the env spec's
//!   packaged config manifest with a presigned URL per file
//!   ([`content::env_spec_parts`], the one call every dispatch path makes); a
//!   config that cannot be delivered fails the dispatch.
//! - [`prompts`]: prompt composition, in one place: the system prompt and the
//!   kickoff turn that the message, `astrolift trigger test` and the runtime
//!   environment carry.
//! - [`env`]: `render_runtime_env`, the runtime environment table of
//!   docs/reference.md §11; [`render`]: `render_dispatch`, a recorded dispatch
//!   rendered into it (a cluster key minted per render, its hash kept as the
//!   task's latest): what `astrolift render` and a controller call.
//! - [`outbox`]: the durable, bounded local outbox used when no dispatch queue
//!   is configured, drained to SQS when one is.
//! - [`callback`]: `POST /callbacks/{task_id}` (Bearer cluster key,
//!   constant-time; the task's `running` and one terminal report; a workflow
//!   stage's run advanced).
//! - [`report`]: a `report = "comment" | "check"` binding's target, read from
//!   the event at dispatch, and the first terminal result handed to a
//!   [`report::ResultReporter`] (best effort; the App's reporter lives in
//!   `astrolift-bot`).
//! - [`state_machine`]: a workflow compiled to an Amazon States Language
//!   definition (nested `Parallel` states, or one per topological level),
//!   and its state machine's name; pure, no AWS call.
//! - [`on_demand`]: a dispatch a person asks for (`astrolift dispatch`, the pull-request
//!   comment `/astrolift dispatch`), and the preview rules: a preview runs as its record's
//!   agent, with an env spec marked for previews only.
//! - [`engine`]: which engine runs workflow runs (`ASTROLIFT_WORKFLOW_ENGINE`);
//!   [`execution`]: a run's stage messages and callbacks on the Step Functions engine.
//! - [`step_functions`]: the Step Functions engine's calls: state machines, executions
//!   named by run id, task-token results (a stale token changes nothing).
//! - [`workflow`]: workflow runs on the state-store engine: start a run, fold
//!   each stage attempt's terminal report into it with conditional writes
//!   (exactly once), dispatch the stages whose needs are done with their
//!   payloads evaluated in the sandbox, a retry once it is due, and cancel a
//!   run; [`stage_deadlines`]: reconcile's pass that times out the attempts
//!   past their `timeout` or `heartbeat` and dispatches the due retries.
//! - [`Answer`]: the one HTTP-shaped answer (status and JSON body) of the
//!   runtime side: callbacks, the trigger service and the App's webhook
//!   ingress answer with it.
//!
//! # Invariants
//! - An accepted payload always reaches the dispatch record and the queue
//!   message intact (size and nesting bounded so that it parses back).
//! - One dispatch id, one record: a redelivery of an idempotency key finds the
//!   record and publishes nothing new.
//! - A cluster key is minted per render and only its SHA-256 is stored; a
//!   callback is compared against the latest render's hash in constant time.
//!
//! # Deliberately absent
//! The request side (verification, secrets, trust, binding evaluation, the
//! idempotency key of a request and the trigger service) is
//! `astrolift-trigger`'s; HTTP routing is the binaries'. This crate reads no
//! secret and never sees a request's signature.
#![forbid(unsafe_code)]

pub mod answer;
pub mod callback;
pub mod content;
pub mod dispatch;
pub mod engine;
pub mod env;
pub mod execution;
#[cfg(feature = "sqlite")]
pub mod file_outbox;
mod kept;
pub mod layers;
pub mod message;
pub mod on_demand;
pub mod outbox;
pub mod prompts;
pub mod render;
pub mod report;
mod source;
pub mod stage_deadlines;
pub mod state_machine;
pub mod step_functions;
#[cfg(feature = "testing")]
pub mod testing;
pub mod workflow;

pub use answer::{Answer, RETRY_AFTER_SECONDS};
