//! The worker process side: [`serve_if_requested`] and the wire types.
//!
//! A worker limits itself before it reads any request: address space
//! (`RLIMIT_AS`, from [`MEMORY_ENV`]), CPU seconds over its life
//! (`RLIMIT_CPU`, from [`CPU_ENV`]) and no core dumps (`RLIMIT_CORE` 0, so a
//! crash leaves no copy of a tenant's body on disk). It then serves requests
//! from its socket on one evaluation thread of [`WORKER_STACK`] bytes, one at
//! a time, compiling each program text once. It exits when the pool closes
//! the socket or its parent process is gone, and dies on any fault it cannot report (stack overflow,
//! allocation failure, panic, a limit): containing that is the pool's job.

use std::collections::HashMap;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use super::bounds::WORKER_STACK;
use super::error::{SandboxError, bounded_message};
use super::evaluation::{WireResult, run_jobs};
use super::guarded::SandboxedProgram;
use super::protocol::{CPU_ENV, MEMORY_ENV, WORKER_ENV, WireRequest, read_frame, write_frame};

/// Programs compiled in one worker; past this many, the cache starts over.
const MAX_CACHED_PROGRAMS: usize = 256;
/// The largest request header (program texts) a worker reads.
const MAX_HEADER: u64 = 16 * 1024 * 1024;
/// The largest body a worker reads (far above any trigger body limit).
const MAX_BODY: u64 = 256 * 1024 * 1024;

/// In a worker process (its environment has [`WORKER_ENV`]): serves the pool
/// and exits the process. Otherwise returns at once.
pub fn serve_if_requested() {
    if std::env::var_os(WORKER_ENV).is_none() {
        return;
    }
    let code = match serve() {
        Ok(()) => 0,
        Err(_) => 1,
    };
    std::process::exit(code);
}

fn serve() -> io::Result<()> {
    apply_limits()?;
    // The pool hands the worker one end of a socket pair as standard input.
    let stream = UnixStream::from(io::stdin().as_fd().try_clone_to_owned()?);
    let parent = std::os::unix::process::parent_id();
    let evaluation = std::thread::Builder::new()
        .name("astrolift-jq-worker".to_owned())
        .stack_size(WORKER_STACK)
        .spawn(move || serve_on(stream))?;
    // A worker whose pool died (its process killed) must not go on burning
    // CPU in a long builtin: the main thread watches for a new parent.
    while !evaluation.is_finished() {
        if std::os::unix::process::parent_id() != parent {
            return Err(io::Error::other("the pool's process is gone"));
        }
        std::thread::sleep(ORPHAN_CHECK);
    }
    evaluation
        .join()
        .map_err(|_| io::Error::other("the evaluation thread panicked"))?
}

/// How often a worker checks that its pool's process is still its parent.
const ORPHAN_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

fn limit_of(variable: &str) -> io::Result<u64> {
    std::env::var(variable)
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| io::Error::other(format!("{variable} is not set")))
}

fn apply_limits() -> io::Result<()> {
    let memory = limit_of(MEMORY_ENV)?;
    let cpu = limit_of(CPU_ENV)?;
    rlimit::setrlimit(rlimit::Resource::CORE, 0, 0)?;
    rlimit::setrlimit(rlimit::Resource::AS, memory, memory)?;
    // The soft limit sends SIGXCPU (which ends the process); the hard one
    // a second later, SIGKILL.
    rlimit::setrlimit(rlimit::Resource::CPU, cpu, cpu + 1)
}

fn serve_on(mut stream: UnixStream) -> io::Result<()> {
    let mut programs: HashMap<String, Arc<SandboxedProgram>> = HashMap::new();
    while let Some(header) = read_frame(&mut stream, MAX_HEADER)? {
        let body = read_frame(&mut stream, MAX_BODY)?
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        let request: WireRequest = serde_json::from_slice(&header).map_err(io::Error::other)?;
        let jobs = compile_jobs(&request, &mut programs);
        // The deadline starts now, after start-up and compilation: an
        // empty frame tells the pool so.
        write_frame(&mut stream, &[])?;
        let result = match jobs {
            Ok(jobs) => run_jobs(&body, &jobs, request.time_ms, request.output_limit),
            Err(error) => WireResult::failed(error),
        };
        let answer = serde_json::to_vec(&result).map_err(io::Error::other)?;
        write_frame(&mut stream, &answer)?;
    }
    Ok(())
}

/// The request's programs, compiled (from the cache when seen before).
#[allow(clippy::type_complexity)]
fn compile_jobs(
    request: &WireRequest,
    programs: &mut HashMap<String, Arc<SandboxedProgram>>,
) -> Result<Vec<(Arc<SandboxedProgram>, usize, bool)>, SandboxError> {
    request
        .jobs
        .iter()
        .map(|job| Ok((compiled(programs, &job.program)?, job.max_outputs, job.gate)))
        .collect()
}

/// `text` compiled, from the cache when this worker has seen it.
fn compiled(
    programs: &mut HashMap<String, Arc<SandboxedProgram>>,
    text: &str,
) -> Result<Arc<SandboxedProgram>, SandboxError> {
    if let Some(program) = programs.get(text) {
        return Ok(program.clone());
    }
    let program = SandboxedProgram::compile(text)
        .map(Arc::new)
        .map_err(|error| SandboxError::Failed(bounded_message(&error.message)))?;
    if programs.len() >= MAX_CACHED_PROGRAMS {
        programs.clear();
    }
    programs.insert(text.to_owned(), program.clone());
    Ok(program)
}
