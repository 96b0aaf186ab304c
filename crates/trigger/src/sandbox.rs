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
//! Evaluation therefore runs in **worker processes** ([`pool`]):
//!
//! - Every binary that evaluates triggers (`astrolift`, the `webhook` and
//!   `trigger` functions) calls [`init`] first thing in `main`. In a worker
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
//! - **The guard** checks the deadline ([`Limits::jq_time_ms`]) and the stack
//!   in use (the distance between the address of a local at the start of the
//!   evaluation and one in the guard — safe Rust, no `unsafe`): past
//!   [`STACK_BUDGET`] it fails with "recursion too deep" long before the
//!   evaluation thread's [`WORKER_STACK`] would overflow. Once tripped the
//!   budget stays tripped: every later guard fails too, so `try`/`?` in the
//!   program cannot swallow the error and keep going.
//! - **Outputs** are pulled lazily: a filter stops after a second output, a
//!   mapping after its second. Each output is serialized (compact JSON, the
//!   bytes that are stored and queued) and its exact size, escapes included,
//!   is charged to [`Limits::jq_output`]; an output nesting deeper than
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

mod pool;
pub mod slots;
mod threads;
mod worker;

pub use pool::{
    DEFAULT_MEMORY_MIB, MAX_SERVED, MEMORY_MIB_ENV, WORKERS_ENV, WorkerCommand, in_flight,
    max_concurrent, peak_in_flight, use_worker_processes, workers_started,
};
pub use worker::{WORKER_ENV, serve_if_requested};

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use astrolift_manifest::jq::{JqData, JqError, JqProgram, REMOVED};
use astrolift_manifest::limits::Limits;
use jaq_core::box_iter::box_once;
use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Def, Pattern, Term};
use jaq_core::load::{Arena, File, Loader};
use jaq_core::native::v;
use jaq_core::path::{Part, Path};
use jaq_core::{Compiler, Ctx, Error, Exn, Native, ValX, Vars};
use jaq_json::Val;

/// Stack reserved for each worker thread (virtual memory, committed as used).
pub const WORKER_STACK: usize = 64 * 1024 * 1024;
/// Stack a program may use before the guard reports "recursion too deep".
pub const STACK_BUDGET: usize = 32 * 1024 * 1024;
/// How deep an output value may nest: levels of arrays and objects, the
/// output itself being level 1. `serde_json`'s parser refuses the 128th
/// level, and the dispatch message that carries a payload adds one, so 126
/// is the deepest payload that always parses back from the queue.
pub const MAX_OUTPUT_DEPTH: usize = 126;
/// How long past the deadline the caller waits for a stuck worker.
pub const GRACE: Duration = Duration::from_millis(50);

const GUARD: &str = "__astrolift_guard";
const MAIN: &str = "__astrolift_main";

/// A trigger program compiled with guards. Build once per binding and share.
pub struct SandboxedProgram {
    text: String,
    filter: jaq_core::Filter<JqData>,
}

impl std::fmt::Debug for SandboxedProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SandboxedProgram")
    }
}

impl SandboxedProgram {
    /// Compiles `text`. Errors are those of validation ([`JqProgram::compile`]),
    /// so a program that validated always compiles here.
    pub fn compile(text: &str) -> Result<SandboxedProgram, JqError> {
        JqProgram::compile(text)?;
        let unsupported = || JqError {
            offset: 0,
            len: 0,
            kind: astrolift_manifest::jq::JqErrorKind::Syntax,
            message: "jq program cannot be sandboxed".to_owned(),
            help: None,
        };
        let main = jaq_core::load::parse(text, |p| p.term()).ok_or_else(unsupported)?;
        let prelude = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs())
            .filter(|def| !REMOVED.contains(&def.name))
            .map(|def| guard_def(shorten(def)))
            .chain([guard_def(Def {
                name: MAIN,
                args: Vec::new(),
                body: main,
            })]);
        let funs = jaq_core::funs::<JqData>()
            .chain(jaq_std::funs::<JqData>())
            .chain(jaq_json::funs::<JqData>())
            .filter(|(name, _, _)| !REMOVED.contains(name) && *name != "range")
            .chain(guarded_natives());
        let arena = Arena::default();
        let modules = Loader::new(prelude)
            .load(
                &arena,
                File {
                    code: MAIN,
                    path: (),
                },
            )
            .map_err(|_| unsupported())?;
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|_| unsupported())?;
        Ok(SandboxedProgram {
            text: text.to_owned(),
            filter,
        })
    }

    /// The program's source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Runs the program on `input` in the current thread under `budget`
    /// (which must be [`Budget::enter`]ed on this thread), pulling at most
    /// `max_outputs + 1` outputs.
    fn outputs(&self, input: Val, max_outputs: usize) -> Result<Vec<Val>, SandboxError> {
        let ctx = Ctx::<JqData>::new(&self.filter.lut, Vars::new([]));
        let mut outputs = Vec::new();
        for output in self.filter.id.run((ctx, input)).map(jaq_core::unwrap_valr) {
            tripped()?;
            let output =
                output.map_err(|e| SandboxError::Failed(bounded_message(&e.to_string())))?;
            if outputs.len() == max_outputs {
                return Err(SandboxError::TooManyOutputs(max_outputs));
            }
            outputs.push(output);
        }
        tripped()?;
        Ok(outputs)
    }
}

/// Why a sandboxed run failed. Every variant is a 422 for the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum SandboxError {
    #[error("jq error: {0}")]
    Failed(String),
    #[error("the jq program ran longer than {0} ms and was stopped")]
    TimedOut(u64),
    #[error("the jq program recursed too deeply and was stopped")]
    TooDeep,
    #[error("the jq program's output is larger than {0} bytes")]
    OutputTooLarge(u64),
    #[error("the jq program's output nests deeper than {MAX_OUTPUT_DEPTH} levels")]
    OutputTooDeep,
    #[error("the jq program yields more than {0} value(s)")]
    TooManyOutputs(usize),
    /// The worker died during the run (stack overflow, memory, a panic or a
    /// resource limit inside a builtin); the text is its exit status.
    #[error(
        "the jq program was stopped: it failed inside its evaluation worker ({0}), for example by exhausting its stack or memory"
    )]
    Crashed(String),
}

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

/// What bounds one run; lives in a thread-local of the worker.
#[derive(Debug, Clone, Copy)]
struct Budget {
    deadline: Instant,
    time_ms: u64,
    stack_base: usize,
}

thread_local! {
    static BUDGET: Cell<Option<Budget>> = const { Cell::new(None) };
    static TRIPPED: Cell<Option<SandboxError>> = const { Cell::new(None) };
    static CALLS: Cell<u32> = const { Cell::new(0) };
}

/// The address of a local of the calling frame: a stack position. Taking an
/// address is safe; nothing is ever read through it.
#[inline(never)]
fn stack_position() -> usize {
    let marker = 0u8;
    std::hint::black_box(std::ptr::addr_of!(marker)) as usize
}

impl Budget {
    fn enter(time_ms: u64) {
        let budget = Budget {
            deadline: Instant::now() + Duration::from_millis(time_ms),
            time_ms,
            stack_base: stack_position(),
        };
        BUDGET.with(|b| b.set(Some(budget)));
        TRIPPED.with(|t| t.set(None));
    }
}

fn tripped() -> Result<(), SandboxError> {
    match TRIPPED.with(|t| t.take()) {
        Some(error) => {
            TRIPPED.with(|t| t.set(Some(error.clone())));
            Err(error)
        }
        None => Ok(()),
    }
}

/// The guard's check: `Ok` while the run is within its budget.
fn check_budget() -> Result<(), SandboxError> {
    tripped()?;
    let Some(budget) = BUDGET.with(Cell::get) else {
        return Ok(());
    };
    let used = budget.stack_base.abs_diff(stack_position());
    // Reading the clock costs more than the rest of the guard: read it on
    // every 32nd call (a few microseconds of jq at most between reads).
    let calls = CALLS.with(|c| {
        let n = c.get().wrapping_add(1);
        c.set(n);
        n
    });
    let error = if used > STACK_BUDGET {
        SandboxError::TooDeep
    } else if calls.is_multiple_of(32) && Instant::now() >= budget.deadline {
        SandboxError::TimedOut(budget.time_ms)
    } else {
        return Ok(());
    };
    TRIPPED.with(|t| t.set(Some(error.clone())));
    Err(error)
}

fn guard_exn<'a>(error: SandboxError) -> Exn<'a, Val> {
    Exn::from(Error::str(error))
}

/// The guard native and the guarded `range/3`.
fn guarded_natives() -> impl Iterator<Item = jaq_core::native::Filter<Native<JqData>>> {
    [
        (
            GUARD,
            v(0),
            Native::new(|cv| match check_budget() {
                Ok(()) => box_once(Ok(cv.1)),
                Err(error) => box_once(Err(guard_exn(error))),
            }),
        ),
        (
            "range",
            v(3),
            Native::new(|mut cv| {
                let by = cv.0.pop_var();
                let to = cv.0.pop_var();
                let from = cv.0.pop_var();
                Box::new(guarded_range(Ok(from), to, by))
            }),
        ),
    ]
    .into_iter()
}

/// jaq-core's native `range/3` (MIT), with the budget checked before each output.
fn guarded_range<'a>(
    mut from: ValX<'a, Val>,
    to: Val,
    by: Val,
) -> impl Iterator<Item = ValX<'a, Val>> {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let cmp = by.partial_cmp(&Val::from(0isize)).unwrap_or(Equal);
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        if let Err(error) = check_budget() {
            done = true;
            return Some(Err(guard_exn(error)));
        }
        match from.clone() {
            Ok(x) => {
                let more = match cmp {
                    Greater => x < to,
                    Less => x > to,
                    Equal => x != to,
                };
                more.then(|| std::mem::replace(&mut from, (x + by.clone()).map_err(Exn::from)))
            }
            error @ Err(_) => {
                done = true;
                Some(error)
            }
        }
    })
}

/// A standard definition, seen with the program's (shorter) lifetime.
fn shorten<'a>(def: Def<&'static str>) -> Def<&'a str> {
    def
}

fn guard_def(def: Def<&str>) -> Def<&str> {
    Def {
        name: def.name,
        args: def.args,
        body: guarded(def.body),
    }
}

/// `__astrolift_guard | body`, with every nested definition guarded too.
fn guarded(body: Term<&str>) -> Term<&str> {
    Term::BinOp(
        Box::new(Term::Call(GUARD, Vec::new())),
        BinaryOp::Pipe(None),
        Box::new(guard_nested(body)),
    )
}

/// Guards every definition inside `term`. The match is exhaustive on
/// purpose: a new kind of term in jaq must be looked at here.
fn guard_nested(term: Term<&str>) -> Term<&str> {
    match term {
        Term::Id | Term::Recurse | Term::Num(_) | Term::Var(_) | Term::Break(_) => term,
        Term::Str(format, parts) => Term::Str(
            format,
            parts
                .into_iter()
                .map(|part| match part {
                    StrPart::Term(t) => StrPart::Term(guard_nested(t)),
                    other => other,
                })
                .collect(),
        ),
        Term::Arr(inner) => Term::Arr(inner.map(nested)),
        Term::Obj(entries) => Term::Obj(
            entries
                .into_iter()
                .map(|(k, v)| (guard_nested(k), v.map(guard_nested)))
                .collect(),
        ),
        Term::Neg(t) => Term::Neg(nested(t)),
        Term::BinOp(l, op, r) => {
            let op = match op {
                BinaryOp::Pipe(Some(pattern)) => BinaryOp::Pipe(Some(guard_pattern(pattern))),
                other => other,
            };
            Term::BinOp(nested(l), op, nested(r))
        }
        Term::Label(name, t) => Term::Label(name, nested(t)),
        Term::Fold(name, xs, pattern, args) => Term::Fold(
            name,
            nested(xs),
            guard_pattern(pattern),
            args.into_iter().map(guard_nested).collect(),
        ),
        Term::TryCatch(t, catch) => Term::TryCatch(nested(t), catch.map(nested)),
        Term::IfThenElse(branches, otherwise) => Term::IfThenElse(
            branches
                .into_iter()
                .map(|(c, t)| (guard_nested(c), guard_nested(t)))
                .collect(),
            otherwise.map(nested),
        ),
        Term::Def(defs, rest) => Term::Def(defs.into_iter().map(guard_def).collect(), nested(rest)),
        Term::Call(name, args) => Term::Call(name, args.into_iter().map(guard_nested).collect()),
        Term::Path(t, path) => Term::Path(nested(t), guard_path(path)),
    }
}

fn guard_path(path: Path<Term<&str>>) -> Path<Term<&str>> {
    Path(
        path.0
            .into_iter()
            .map(|(part, opt)| {
                let part = match part {
                    Part::Index(i) => Part::Index(guard_nested(i)),
                    Part::Range(from, upto) => {
                        Part::Range(from.map(guard_nested), upto.map(guard_nested))
                    }
                };
                (part, opt)
            })
            .collect(),
    )
}

/// Guards a boxed term in place (the box is reused).
fn nested(mut term: Box<Term<&str>>) -> Box<Term<&str>> {
    *term = guard_nested(std::mem::take(&mut *term));
    term
}

fn guard_pattern(pattern: Pattern<&str>) -> Pattern<&str> {
    match pattern {
        Pattern::Var(_) => pattern,
        Pattern::Arr(items) => Pattern::Arr(items.into_iter().map(guard_pattern).collect()),
        Pattern::Obj(entries) => Pattern::Obj(
            entries
                .into_iter()
                .map(|(k, p)| (guard_nested(k), guard_pattern(p)))
                .collect(),
        ),
    }
}

/// One program to run, how many outputs it may yield, and whether it gates
/// the next job (a filter: the next job runs only if this one yields exactly
/// `true`).
#[derive(Debug, Clone)]
pub struct Job {
    pub program: Arc<SandboxedProgram>,
    pub max_outputs: usize,
    pub gate: bool,
}

/// The result of one evaluation.
#[derive(Debug)]
pub enum WorkerResult {
    /// The body is not JSON (400).
    BadJson(String),
    /// Each job's outputs (a job after a gate runs only if the gate passed).
    Ran(Vec<Result<Vec<serde_json::Value>, SandboxError>>),
    /// Every evaluation slot is taken (503 with `Retry-After`).
    Busy,
}

/// Runs `jobs` on `body` under `limits`: in a worker process when this
/// process called [`init`] (or [`use_worker_processes`]), else on a worker
/// thread (see the module docs). At most [`max_concurrent`] evaluations run
/// at once in the process; the excess waits for a slot, boundedly, and is
/// [`WorkerResult::Busy`] past that ([`slots`]).
pub async fn run_in_worker(body: Vec<u8>, jobs: Vec<Job>, limits: &Limits) -> WorkerResult {
    let Some(slot) = pool::take_slot().await else {
        return WorkerResult::Busy;
    };
    let request = Request {
        body,
        jobs,
        time_ms: limits.jq_time_ms,
        output_limit: limits.jq_output,
    };
    let wire = match pool::command() {
        Some(_) => pool::run(slot, request).await,
        None => threads::run(slot, request).await,
    };
    wire.into_result()
}

/// What one evaluation needs, in either mode.
#[derive(Debug)]
pub(crate) struct Request {
    pub body: Vec<u8>,
    pub jobs: Vec<Job>,
    pub time_ms: u64,
    pub output_limit: u64,
}

/// An evaluation's result with each output serialized (the form a worker
/// process sends back; the size check is made on exactly these bytes).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) enum WireResult {
    BadJson(String),
    Ran(Vec<Result<Vec<String>, SandboxError>>),
}

impl WireResult {
    /// Parses the outputs back. They nest at most [`MAX_OUTPUT_DEPTH`] levels,
    /// within `serde_json`'s parser limit, so this cannot fail for a result
    /// that [`run_jobs`] made; if it did, the job fails rather than the output
    /// being dropped.
    fn into_result(self) -> WorkerResult {
        match self {
            WireResult::BadJson(reason) => WorkerResult::BadJson(reason),
            WireResult::Ran(results) => WorkerResult::Ran(
                results
                    .into_iter()
                    .map(|result| {
                        result?
                            .iter()
                            .map(|text| {
                                serde_json::from_str(text).map_err(|error| {
                                    SandboxError::Failed(format!(
                                        "the output does not parse back: {error}"
                                    ))
                                })
                            })
                            .collect()
                    })
                    .collect(),
            ),
        }
    }

    fn failed(error: SandboxError) -> Self {
        WireResult::Ran(vec![Err(error)])
    }
}

/// Parses the body and runs the jobs in the current thread (a worker thread,
/// or a worker process's evaluation thread). Every output is serialized
/// under the output budget.
pub(crate) fn run_jobs(
    body: &[u8],
    jobs: &[(Arc<SandboxedProgram>, usize, bool)],
    time_ms: u64,
    output_limit: u64,
) -> WireResult {
    Budget::enter(time_ms);
    let input: Val = match serde_json::from_slice(body) {
        Ok(input) => input,
        Err(error) => return WireResult::BadJson(bounded_message(&error.to_string())),
    };
    let mut results = Vec::with_capacity(jobs.len());
    for (program, max_outputs, gate) in jobs {
        let result = program
            .outputs(input.clone(), *max_outputs)
            .and_then(|outputs| serialize_all(&outputs, output_limit));
        let passed = matches!(&result, Ok(outputs) if outputs.len() == 1 && outputs[0] == "true");
        results.push(result);
        if *gate && !passed {
            break;
        }
    }
    WireResult::Ran(results)
}

/// How much of an error message a 422 body and its log line carry.
pub const MAX_ERROR_MESSAGE: usize = 2048;

/// `text` cut to [`MAX_ERROR_MESSAGE`] bytes (at a character boundary), with
/// a note of its full size: a program's `error(...)` value may be megabytes.
pub fn bounded_message(text: &str) -> String {
    if text.len() <= MAX_ERROR_MESSAGE {
        return text.to_owned();
    }
    let mut end = MAX_ERROR_MESSAGE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… (truncated: the message is {} bytes)",
        &text[..end],
        text.len()
    )
}

/// Serializes each output (compact JSON, as stored and queued), charging its
/// exact size, escapes included, to one budget of `limit` bytes.
fn serialize_all(outputs: &[Val], limit: u64) -> Result<Vec<String>, SandboxError> {
    let mut budget = limit;
    outputs
        .iter()
        .map(|output| {
            let value = to_json(output, 1, &mut budget.clone(), limit)?;
            let text = serde_json::to_string(&value)
                .map_err(|error| SandboxError::Failed(error.to_string()))?;
            budget = budget
                .checked_sub(text.len() as u64)
                .ok_or(SandboxError::OutputTooLarge(limit))?;
            Ok(text)
        })
        .collect()
}

/// Converts a jq value to JSON, refusing nesting deeper than
/// [`MAX_OUTPUT_DEPTH`] (`depth` is the level of `value`: 1 for a top-level
/// array or object) and stopping early once a lower bound of its serialized
/// size (string bytes, one byte per other value) is over `budget`, so a huge
/// value is never copied. The exact size is charged on the serialized text.
fn to_json(
    value: &Val,
    depth: usize,
    budget: &mut u64,
    limit: u64,
) -> Result<serde_json::Value, SandboxError> {
    let charge = |budget: &mut u64, bytes: usize| {
        *budget = budget
            .checked_sub(bytes as u64)
            .ok_or(SandboxError::OutputTooLarge(limit))?;
        Ok::<(), SandboxError>(())
    };
    let container = matches!(value, Val::Arr(_) | Val::Obj(_));
    if container && depth > MAX_OUTPUT_DEPTH {
        return Err(SandboxError::OutputTooDeep);
    }
    Ok(match value {
        Val::Null => {
            charge(budget, 1)?;
            serde_json::Value::Null
        }
        Val::Bool(b) => {
            charge(budget, 1)?;
            serde_json::Value::Bool(*b)
        }
        Val::Num(_) => {
            let text = value.to_string();
            charge(budget, 1)?;
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
        }
        Val::TStr(bytes) | Val::BStr(bytes) => {
            charge(budget, bytes.len())?;
            serde_json::Value::String(String::from_utf8_lossy(bytes).into_owned())
        }
        Val::Arr(items) => {
            charge(budget, 1)?;
            let items = items
                .iter()
                .map(|item| to_json(item, depth + 1, budget, limit))
                .collect::<Result<_, _>>()?;
            serde_json::Value::Array(items)
        }
        Val::Obj(entries) => {
            charge(budget, 1)?;
            let mut map = serde_json::Map::with_capacity(entries.len());
            for (key, value) in entries.iter() {
                let key = match key {
                    Val::TStr(bytes) | Val::BStr(bytes) => {
                        String::from_utf8_lossy(bytes).into_owned()
                    }
                    other => other.to_string(),
                };
                charge(budget, key.len())?;
                map.insert(key, to_json(value, depth + 1, budget, limit)?);
            }
            serde_json::Value::Object(map)
        }
    })
}
