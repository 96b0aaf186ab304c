//! Process mode: a pool of warm jq worker processes, and the cap on
//! concurrent evaluations that both modes share.
//!
//! A worker is this same executable started again with [`WORKER_ENV`] set
//! (each binary calls [`super::init`] first thing in `main`, which serves as
//! a worker and exits in that case). It talks to the pool over a Unix socket
//! pair given as its standard input, runs with an empty environment (no
//! secrets, tokens or keys reach it), and limits itself before reading any
//! request (address space, CPU time, no core dumps; see [`super::worker`]).
//! A worker is reused for up to [`MAX_SERVED`] evaluations and compiles each
//! program once. A worker that misses the deadline plus [`GRACE`] is killed
//! (so its CPU stops), one that crashed (stack overflow, allocation failure,
//! a panic, a resource limit) is reaped; either way the request is a 422 and
//! the next request starts a fresh worker.

use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::bounds::GRACE;
use super::error::SandboxError;
use super::evaluation::{Request, WireResult};
use super::protocol::{
    CPU_ENV, MEMORY_ENV, WORKER_ENV, WireJob, WireRequest, read_frame, write_frame,
};
use super::slots::{SLOT_WAIT, Slot, Slots};

/// How a worker process is started: the executable and its arguments (the
/// environment is always cleared and [`WORKER_ENV`] set).
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
}

static COMMAND: OnceLock<WorkerCommand> = OnceLock::new();

/// Makes this process evaluate in worker processes started with `command`.
/// The first call wins; returns whether this one did.
pub fn use_worker_processes(command: WorkerCommand) -> bool {
    COMMAND.set(command).is_ok()
}

impl WorkerCommand {
    /// This test binary running only its `test` test (which must call
    /// [`super::serve_if_requested`]): how a crate's integration tests
    /// evaluate in worker processes, as every shipped binary does.
    pub fn this_test_binary(test: &str) -> std::io::Result<Self> {
        let args = [test, "--exact", "--nocapture", "--test-threads=1", "-q"];
        Ok(Self {
            program: std::env::current_exe()?,
            args: args.map(str::to_owned).to_vec(),
        })
    }
}

/// The worker command, when this process evaluates in worker processes.
pub(super) fn command() -> Option<&'static WorkerCommand> {
    COMMAND.get()
}

/// Variable: the most evaluations that run at once in this process.
pub const WORKERS_ENV: &str = "ASTROLIFT_JQ_WORKERS";
/// Variable: a worker's address-space limit, in MiB.
pub const MEMORY_MIB_ENV: &str = "ASTROLIFT_JQ_MEMORY_MB";
/// A worker's address-space limit without [`MEMORY_MIB_ENV`]: it covers the
/// executable's mappings, the evaluation thread's reserved stack and a
/// 1 MiB body parsed several times over.
pub const DEFAULT_MEMORY_MIB: u64 = 512;
/// How long a worker may take to start and compile a request's programs
/// (its own executable started again; compiling takes about a millisecond).
/// Past it the worker is killed like one that missed its deadline.
pub const STARTUP: Duration = Duration::from_secs(5);
/// Evaluations a worker serves before it is retired (and its CPU limit,
/// which counts its whole life, is sized for that many deadlines).
pub const MAX_SERVED: u32 = 1000;

/// The cap on concurrent evaluations: [`WORKERS_ENV`] when it is a positive
/// number, else twice the available parallelism (an evaluation is short and
/// CPU-bound; the kernel shares the cores between worker processes).
pub fn max_concurrent() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| {
        std::env::var(WORKERS_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
            .unwrap_or_else(|| {
                2 * std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
            })
    })
}

fn memory_limit_bytes() -> u64 {
    std::env::var(MEMORY_MIB_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MEMORY_MIB)
        .saturating_mul(1024 * 1024)
}

/// The process's evaluation slots ([`super::slots`]).
fn slots() -> &'static Slots {
    static SLOTS: OnceLock<Slots> = OnceLock::new();
    SLOTS.get_or_init(|| Slots::new(max_concurrent(), SLOT_WAIT))
}

/// The most evaluations that were in flight at once since the process began.
pub fn peak_in_flight() -> usize {
    slots().peak()
}

/// Evaluations in flight in this process (for tests and metrics).
pub fn in_flight() -> usize {
    slots().in_flight()
}

/// A slot of the process: free now, or within [`SLOT_WAIT`] ([`Slots::take`]).
pub(super) async fn take_slot() -> Option<Slot<'static>> {
    slots().take().await
}

/// Runs `request` on a worker process, on a blocking thread: the exchange
/// finishes (and the worker is parked or killed) even if the caller's future
/// is dropped.
pub(super) async fn run(slot: Slot<'static>, request: Request) -> WireResult {
    let time_ms = request.time_ms;
    let exchange = tokio::task::spawn_blocking(move || {
        let result = run_blocking(&request);
        drop(slot);
        result
    });
    exchange.await.unwrap_or_else(|_| {
        WireResult::failed(SandboxError::Crashed(format!(
            "the jq evaluation failed to complete within {time_ms} ms"
        )))
    })
}

/// Idle workers, most recently used last.
static IDLE: Mutex<Vec<Worker>> = Mutex::new(Vec::new());

/// Workers started since the process began (tests read it).
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// How many worker processes this process has started.
pub fn workers_started() -> usize {
    STARTED.load(Ordering::Acquire)
}

fn run_blocking(request: &Request) -> WireResult {
    // Start-up and compilation have their own bound; the program's deadline
    // starts when the worker says it starts evaluating.
    let started_by = Instant::now() + STARTUP;
    let (header, body) = match encode(request) {
        Ok(frames) => frames,
        Err(error) => return WireResult::failed(SandboxError::Failed(error.to_string())),
    };
    // An idle worker may have died since it was parked (its CPU limit, the
    // kernel's OOM killer): a request it never read is tried once more on a
    // fresh worker.
    let mut fresh_tried = false;
    loop {
        let (mut worker, fresh) = match take_idle() {
            Some(worker) => (worker, false),
            None => match Worker::spawn(request.time_ms) {
                Ok(worker) => (worker, true),
                Err(error) => {
                    tracing::error!(%error, "cannot start a jq worker process");
                    return WireResult::failed(SandboxError::Failed(format!(
                        "cannot start the jq worker: {error}"
                    )));
                }
            },
        };
        if let Err(error) = worker.send(&header, body, started_by) {
            if fresh || fresh_tried {
                return worker.fault(request.time_ms, &error);
            }
            fresh_tried = true;
            continue;
        }
        let limit = 2 * request.output_limit + 1024 * 1024;
        let answer = worker.started(started_by).and_then(|()| {
            let deadline = Instant::now() + Duration::from_millis(request.time_ms) + GRACE;
            worker.receive(deadline, limit)
        });
        return match answer {
            Ok(result) => {
                worker.served += 1;
                park(worker);
                result
            }
            Err(error) => worker.fault(request.time_ms, &error),
        };
    }
}

fn encode(request: &Request) -> serde_json::Result<(Vec<u8>, &[u8])> {
    let header = WireRequest {
        jobs: request
            .jobs
            .iter()
            .map(|job| WireJob {
                program: job.program.text().to_owned(),
                max_outputs: job.max_outputs,
                gate: job.gate,
            })
            .collect(),
        time_ms: request.time_ms,
        output_limit: request.output_limit,
    };
    Ok((serde_json::to_vec(&header)?, &request.body))
}

fn take_idle() -> Option<Worker> {
    IDLE.lock().ok().and_then(|mut idle| idle.pop())
}

/// Keeps `worker` for the next request, unless it is due for retirement or
/// enough workers are idle already.
fn park(worker: Worker) {
    if worker.served >= MAX_SERVED {
        return;
    }
    if let Ok(mut idle) = IDLE.lock()
        && idle.len() < max_concurrent()
    {
        idle.push(worker);
    }
}

/// A running worker process; killed and reaped on drop.
#[derive(Debug)]
struct Worker {
    child: Child,
    stream: UnixStream,
    served: u32,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Worker {
    fn spawn(time_ms: u64) -> io::Result<Worker> {
        let command = command().ok_or_else(|| io::Error::other("no worker command"))?;
        let (parent, child_end) = UnixStream::pair()?;
        // The CPU limit counts the worker's whole life: every deadline it may
        // serve, twice over.
        let cpu_seconds = (u64::from(MAX_SERVED) * (time_ms + GRACE.as_millis() as u64) * 2)
            .div_ceil(1000)
            .max(10);
        let child = Command::new(&command.program)
            .args(&command.args)
            .env_clear()
            .env(WORKER_ENV, "1")
            .env(MEMORY_ENV, memory_limit_bytes().to_string())
            .env(CPU_ENV, cpu_seconds.to_string())
            .stdin(Stdio::from(OwnedFd::from(child_end)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        STARTED.fetch_add(1, Ordering::AcqRel);
        Ok(Worker {
            child,
            stream: parent,
            served: 0,
        })
    }

    fn send(&mut self, header: &[u8], body: &[u8], deadline: Instant) -> io::Result<()> {
        self.stream.set_write_timeout(Some(remaining(deadline)?))?;
        write_frame(&mut self.stream, header)?;
        write_frame(&mut self.stream, body)
    }

    /// Waits for the worker's empty "evaluation starts" frame.
    fn started(&mut self, by: Instant) -> io::Result<()> {
        match read_frame_until(&mut self.stream, by, 0)? {
            Some(_) => Ok(()),
            None => Err(io::ErrorKind::UnexpectedEof.into()),
        }
    }

    fn receive(&mut self, deadline: Instant, limit: u64) -> io::Result<WireResult> {
        let frame = read_frame_until(&mut self.stream, deadline, limit)?
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        serde_json::from_slice(&frame).map_err(io::Error::other)
    }

    /// The answer for a worker that failed `error`: a timeout kills it (its
    /// CPU stops now), any other fault reaps it; both are 422s.
    fn fault(mut self, time_ms: u64, error: &io::Error) -> WireResult {
        let timed_out = matches!(
            error.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        );
        let _ = self.child.kill();
        let status = self.child.wait();
        if timed_out {
            tracing::info!(time_ms, "jq worker killed at its deadline");
            return WireResult::failed(SandboxError::TimedOut(time_ms));
        }
        let status = status.map_or_else(|e| e.to_string(), describe);
        tracing::warn!(%status, %error, "jq worker stopped during an evaluation");
        WireResult::failed(SandboxError::Crashed(status))
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.signal(), status.code()) {
        (Some(signal), _) => format!("signal {signal}"),
        (None, Some(code)) => format!("exit code {code}"),
        (None, None) => "unknown status".to_owned(),
    }
}

fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    Ok(left)
}

/// [`read_frame`] on a socket, giving up at `deadline`.
fn read_frame_until(
    stream: &mut UnixStream,
    deadline: Instant,
    limit: u64,
) -> io::Result<Option<Vec<u8>>> {
    let mut reader = DeadlineReader { stream, deadline };
    read_frame(&mut reader, limit)
}

/// Each read waits at most until the deadline.
struct DeadlineReader<'a> {
    stream: &'a mut UnixStream,
    deadline: Instant,
}

impl Read for DeadlineReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream
            .set_read_timeout(Some(remaining(self.deadline)?))?;
        self.stream.read(buf)
    }
}
