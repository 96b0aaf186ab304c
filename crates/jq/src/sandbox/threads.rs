//! Thread mode: evaluations on reused worker threads of this process, for
//! binaries that never called [`super::init`] (the test harnesses of library
//! crates). Runaway jq is bounded by the guards; a fault inside a native
//! operation is not contained here (that is what worker processes are for).

use std::sync::{Mutex, mpsc};
use std::time::Duration;

use super::bounds::{GRACE, WORKER_STACK};
use super::error::SandboxError;
use super::evaluation::{Request, WireResult, run_jobs};
use super::slots::Slot;

/// Runs `request` on a worker thread, waiting at most the deadline plus
/// [`GRACE`]; a worker that does not answer in time is left to stop at its
/// next guard (its slot is released when it does).
pub(super) async fn run(slot: Slot<'static>, request: Request) -> WireResult {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let time_ms = request.time_ms;
    let submitted = submit(Box::new(move || {
        let jobs: Vec<_> = request
            .jobs
            .iter()
            .map(|job| (job.program.clone(), job.max_outputs, job.gate))
            .collect();
        let result = run_jobs(&request.body, &jobs, request.time_ms, request.output_limit);
        drop(slot);
        // The caller may have given up at its deadline; nothing to do then.
        let _ = sender.send(result);
    }));
    if let Err(error) = submitted {
        return WireResult::failed(SandboxError::Failed(format!(
            "cannot start the jq worker: {error}"
        )));
    }
    let wait = Duration::from_millis(time_ms) + GRACE;
    match tokio::time::timeout(wait, receiver).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => WireResult::failed(SandboxError::Crashed(
            "the jq worker thread stopped unexpectedly".to_owned(),
        )),
        Err(_) => WireResult::failed(SandboxError::TimedOut(time_ms)),
    }
}

/// A unit of work for a worker thread.
type Task = Box<dyn FnOnce() + Send>;

/// Idle workers, each waiting on its own channel. A request takes an idle
/// worker or starts a new one; a worker parks itself again after its task,
/// up to [`MAX_IDLE`]. Reusing threads saves the thread start per request.
static IDLE: Mutex<Vec<mpsc::Sender<Task>>> = Mutex::new(Vec::new());
/// Idle worker threads kept; more exit after their task.
const MAX_IDLE: usize = 8;

fn submit(task: Task) -> std::io::Result<()> {
    let idle = IDLE.lock().ok().and_then(|mut idle| idle.pop());
    let task = match idle {
        Some(worker) => match worker.send(task) {
            Ok(()) => return Ok(()),
            Err(mpsc::SendError(task)) => task,
        },
        None => task,
    };
    let (sender, receiver) = mpsc::channel::<Task>();
    std::thread::Builder::new()
        .name("astrolift-jq".to_owned())
        .stack_size(WORKER_STACK)
        .spawn(move || {
            let mut next = Some(task);
            while let Some(task) = next.take() {
                task();
                let parked = IDLE
                    .lock()
                    .map(|mut idle| {
                        let room = idle.len() < MAX_IDLE;
                        if room {
                            idle.push(sender.clone());
                        }
                        room
                    })
                    .unwrap_or(false);
                if parked {
                    next = receiver.recv().ok();
                }
            }
        })?;
    Ok(())
}
