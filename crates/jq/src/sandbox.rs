//! The jq sandbox: a trigger program compiled with guards, run in a worker
//! process of a warm pool (or, in library test harnesses, on a worker
//! thread) under a time, stack, memory and output budget.
//!
//! # Containment: worker processes
//! A tenant's jq program can fault inside one native operation where no
//! guard runs: a parser or serializer that recurses over a deeply nested
//! value (`fromjson` on 200,000 `[`, `tojson` of a value built by `reduce`),
//! a repetition that allocates gigabytes or overflows a capacity, a slow
//! builtin (`indices` on large arrays). Stack overflow and allocation failure
//! abort a Rust process whatever its panic strategy, and a value nested
//! deeply enough overflows even in `drop`, so no in-process wrapper
//! (`catch_unwind`, bounded replacements of natives) can contain them all.
//! Evaluation therefore runs in **worker processes** (`pool`):
//!
//! - Every binary that evaluates triggers (`astrolift`, and the `webhook`,
//!   `trigger` and `sync` functions: the sync function replays triggers and
//!   evaluates samples on a check) calls [`init`] first thing in `main`. In a worker
//!   (started by the pool with `ASTROLIFT_JQ_WORKER=1`) it serves and exits;
//!   otherwise it makes the process evaluate in workers of its own executable.
//! - A worker runs with an empty environment, an address-space limit
//!   (`ASTROLIFT_JQ_MEMORY_MB`, default 512), a CPU-time limit over its life
//!   and no core dumps, compiles each program once, and serves up to
//!   [`pool::MAX_SERVED`] evaluations.
//! - The pool sends the body and the program texts over a Unix socket and
//!   waits at most the deadline plus [`GRACE`]. A worker that misses it is
//!   killed (its CPU stops) and the request is a 422 "ran longer than"; a
//!   worker that dies (any fault above) is reaped and the request is a 422
//!   "stopped: it failed inside its evaluation worker". The next request gets
//!   a fresh worker: the process always answers it.
//! - At most [`max_concurrent`] evaluations run at once per process
//!   (`ASTROLIFT_JQ_WORKERS`, default twice the available parallelism). A
//!   request that finds every slot taken waits for one up to
//!   [`slots::SLOT_WAIT`] (250 ms), with at most [`slots::WAITERS_PER_SLOT`]
//!   waiting per slot; past that it is [`WorkerResult::Busy`], a 503 with
//!   `Retry-After` ([`slots`]).
//!
//! # Guards (inside every evaluation)
//! Runaway jq that loops or recurses through definitions is stopped from
//! inside, so such a worker is reused rather than killed:
//!
//! - **Guards.** The program is parsed with jaq's public parser and every
//!   definition body — the user's own `def`s and those of the standard
//!   library (`repeat`, `recurse`, `while`, `until`, `limit`…) — becomes
//!   `__astrolift_guard | body`. jq can only loop or recurse through a
//!   definition (tail calls included: jaq re-runs the body, guard first), so
//!   every loop iteration and every recursion level passes a guard. The one
//!   native generator that can yield without bound, `range/3`, is replaced by
//!   a copy that checks the guard before each output.
//! - **The guard** checks the deadline ([`JqLimits::time_ms`](crate::JqLimits::time_ms)) and the stack
//!   in use (the distance between the address of a local at the start of the
//!   evaluation and one in the guard — safe Rust, no `unsafe`): past
//!   [`STACK_BUDGET`] it fails with "recursion too deep" long before the
//!   evaluation thread's [`WORKER_STACK`] would overflow. Once tripped the
//!   budget stays tripped: every later guard fails too, so `try`/`?` in the
//!   program cannot swallow the error and keep going.
//! - **Outputs** are pulled lazily: a filter stops after a second output, a
//!   mapping after its second. Each output is serialized (compact JSON, the
//!   bytes that are stored and queued) and its exact size, escapes included,
//!   is charged to [`JqLimits::output`](crate::JqLimits::output); an output nesting deeper than
//!   [`MAX_OUTPUT_DEPTH`] is refused, so every accepted payload parses back
//!   inside the dispatch message. Error messages (`error(...)` values) are
//!   cut to [`MAX_ERROR_MESSAGE`] bytes with a note of their size.
//!
//! # Thread mode
//! A process that never called [`init`] or [`use_worker_processes`] (the
//! test harness of a library crate) evaluates on reused worker threads under
//! the same guards and cap; a fault inside a native operation is not
//! contained there. Every shipped binary calls [`init`], and the
//! release-binary tests prove the containment through `astrolift serve` and
//! the trigger function.

mod bounds;
mod budget;
mod error;
mod evaluation;
mod guarded;
mod pool;
mod protocol;
mod run;
pub mod slots;
mod threads;
mod worker;

pub use bounds::{GRACE, MAX_ERROR_MESSAGE, MAX_OUTPUT_DEPTH, STACK_BUDGET, WORKER_STACK};
pub use error::{SandboxError, bounded_message};
pub use evaluation::{Job, WorkerResult};
pub use guarded::SandboxedProgram;
pub use pool::{
    DEFAULT_MEMORY_MIB, MAX_SERVED, MEMORY_MIB_ENV, WORKERS_ENV, WorkerCommand, in_flight,
    max_concurrent, peak_in_flight, use_worker_processes, workers_started,
};
pub use protocol::WORKER_ENV;
pub use run::{init, run_in_worker};
pub use worker::serve_if_requested;
