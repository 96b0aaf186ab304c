//! The entry points: [`init`] for binaries and [`run_in_worker`] for callers.

use super::evaluation::{Job, Request, WorkerResult};
use super::pool::{self, WorkerCommand, use_worker_processes};
use super::threads;
use super::worker::serve_if_requested;
use crate::limits::JqLimits;

/// Call first thing in `main` of every binary that evaluates trigger
/// programs. In a worker process (started by the pool) it serves the pool
/// and exits; otherwise it makes this process evaluate in worker processes
/// of its own executable (see the module docs).
pub fn init() {
    serve_if_requested();
    if let Ok(program) = std::env::current_exe() {
        use_worker_processes(WorkerCommand {
            program,
            args: Vec::new(),
        });
    }
}

/// Runs `jobs` on `body` under `limits`: in a worker process when this
/// process called [`init`] (or [`use_worker_processes`]), else on a worker
/// thread (see the module docs). At most [`super::max_concurrent`] evaluations run
/// at once in the process; the excess waits for a slot, boundedly, and is
/// [`WorkerResult::Busy`] past that ([`super::slots`]).
pub async fn run_in_worker(body: Vec<u8>, jobs: Vec<Job>, limits: &JqLimits) -> WorkerResult {
    let Some(slot) = pool::take_slot().await else {
        return WorkerResult::Busy;
    };
    let request = Request {
        body,
        jobs,
        time_ms: limits.time_ms,
        output_limit: limits.output,
    };
    let wire = match pool::command() {
        Some(_) => pool::run(slot, request).await,
        None => threads::run(slot, request).await,
    };
    wire.into_result()
}
