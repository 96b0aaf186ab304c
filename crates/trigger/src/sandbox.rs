//! The jq sandbox: a trigger program compiled with guards, run on a
//! dedicated worker thread under a time, stack and output budget.
//!
//! # Mechanism
//! jaq cannot be interrupted from outside, and a stack overflow aborts the
//! whole process, so the bounds are enforced *from inside* the evaluation:
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
//!   worker thread and one in the guard — safe Rust, no `unsafe`): past
//!   [`STACK_BUDGET`] it fails with "recursion too deep" long before the
//!   worker's [`WORKER_STACK`] would overflow. Once tripped the budget stays
//!   tripped: every later guard fails too, so `try`/`?` in the program cannot
//!   swallow the error and keep going, and the run is reported as tripped
//!   whatever it output.
//! - **Outputs** are pulled lazily: a filter stops after a second output, a
//!   mapping after its second, and each output is converted to JSON under the
//!   output budget ([`Limits::jq_output`]) and a nesting limit
//!   ([`MAX_OUTPUT_DEPTH`]), so converting cannot recurse without bound either.
//! - **Worker threads** ([`WORKER_STACK`] of reserved, lazily committed
//!   stack) run one request at a time: an idle one is reused, otherwise a new
//!   one starts, so requests never queue behind each other; the caller waits at most the deadline plus
//!   [`GRACE`] and answers 422 even if the worker is stuck inside one long
//!   native operation; the worker then stops at its next guard.
//!
//! # Residual risk (documented, not hidden)
//! A single native operation is not interrupted: a huge string repetition
//! (`"x" * 1e9`) or repeated doubling inside `reduce` allocates before the
//! next guard runs. Time is still bounded by the guards between operations,
//! the request still gets its 422 at the deadline, and on Lambda the
//! function's memory limit confines such a program to one instance.
//! Input nesting is bounded by `serde_json`'s recursion limit (128).

use std::cell::Cell;
use std::sync::{Arc, Mutex, mpsc};
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
/// How deep an output value may nest.
pub const MAX_OUTPUT_DEPTH: usize = 256;
/// How long past the deadline the caller waits for a stuck worker.
pub const GRACE: Duration = Duration::from_millis(50);

const GUARD: &str = "__astrolift_guard";
const MAIN: &str = "__astrolift_main";

/// A trigger program compiled with guards. Build once per binding and share.
pub struct SandboxedProgram {
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
        Ok(SandboxedProgram { filter })
    }

    /// Runs the program on `input` in the current thread under `budget`
    /// (which must be [`Budget::enter`]ed on this thread), pulling at most
    /// `max_outputs + 1` outputs.
    fn outputs(&self, input: Val, max_outputs: usize) -> Result<Vec<Val>, SandboxError> {
        let ctx = Ctx::<JqData>::new(&self.filter.lut, Vars::new([]));
        let mut outputs = Vec::new();
        for output in self.filter.id.run((ctx, input)).map(jaq_core::unwrap_valr) {
            tripped()?;
            let output = output.map_err(|e| SandboxError::Failed(e.to_string()))?;
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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

/// One program to run in a worker, and how many outputs it may yield.
#[derive(Debug, Clone)]
pub struct Job {
    pub program: Arc<SandboxedProgram>,
    pub max_outputs: usize,
}

/// The result of one worker run: the body did not parse, or each job's
/// outputs (a job runs only if the previous one's `proceed` said so).
#[derive(Debug)]
pub enum WorkerResult {
    BadJson(String),
    Ran(Vec<Result<Vec<serde_json::Value>, SandboxError>>),
}

/// Parses `body` and runs `filter` then (when `proceed` accepts the filter's
/// outputs) `mapping`, on a fresh worker thread, waiting at most the deadline
/// plus [`GRACE`]. A worker that does not answer in time is left to stop at
/// its next guard; the caller gets [`SandboxError::TimedOut`].
pub async fn run_in_worker(
    body: Vec<u8>,
    jobs: Vec<Job>,
    proceed: fn(&[serde_json::Value]) -> bool,
    limits: &Limits,
) -> WorkerResult {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let time_ms = limits.jq_time_ms;
    let output_limit = limits.jq_output;
    let submitted = submit(Box::new(move || {
        let result = run_jobs(&body, &jobs, proceed, time_ms, output_limit);
        // The caller may have given up at its deadline; nothing to do then.
        let _ = sender.send(result);
    }));
    if let Err(error) = submitted {
        return WorkerResult::Ran(vec![Err(SandboxError::Failed(format!(
            "cannot start the jq worker: {error}"
        )))]);
    }
    let wait = Duration::from_millis(time_ms) + GRACE;
    match tokio::time::timeout(wait, receiver).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => WorkerResult::Ran(vec![Err(SandboxError::Failed(
            "the jq worker stopped unexpectedly".to_owned(),
        ))]),
        Err(_) => WorkerResult::Ran(vec![Err(SandboxError::TimedOut(time_ms))]),
    }
}

/// A unit of work for a worker thread.
type Task = Box<dyn FnOnce() + Send>;

/// Idle workers, each waiting on its own channel. A request takes an idle
/// worker or starts a new one, so concurrent requests never queue behind a
/// runaway; a worker parks itself again after its task, up to [`MAX_IDLE`].
/// Reusing threads saves the thread start (and its stack mapping) per request.
static IDLE: Mutex<Vec<mpsc::Sender<Task>>> = Mutex::new(Vec::new());
/// Idle workers kept; more exit after their task.
pub const MAX_IDLE: usize = 8;

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

fn run_jobs(
    body: &[u8],
    jobs: &[Job],
    proceed: fn(&[serde_json::Value]) -> bool,
    time_ms: u64,
    output_limit: u64,
) -> WorkerResult {
    Budget::enter(time_ms);
    let input: Val = match serde_json::from_slice(body) {
        Ok(input) => input,
        Err(error) => return WorkerResult::BadJson(error.to_string()),
    };
    let mut results = Vec::with_capacity(jobs.len());
    for job in jobs {
        let result = job
            .program
            .outputs(input.clone(), job.max_outputs)
            .and_then(|outputs| to_json_all(&outputs, output_limit));
        let go_on = matches!(&result, Ok(outputs) if proceed(outputs));
        results.push(result);
        if !go_on {
            break;
        }
    }
    WorkerResult::Ran(results)
}

fn to_json_all(outputs: &[Val], limit: u64) -> Result<Vec<serde_json::Value>, SandboxError> {
    let mut budget = limit;
    outputs
        .iter()
        .map(|output| to_json(output, 0, &mut budget, limit))
        .collect()
}

/// Converts a jq value to JSON, charging its compact JSON size to `budget`
/// (strings are charged their raw length plus quotes: escapes are not
/// counted, a small under-estimate) and refusing deep nesting.
fn to_json(
    value: &Val,
    depth: usize,
    budget: &mut u64,
    limit: u64,
) -> Result<serde_json::Value, SandboxError> {
    if depth > MAX_OUTPUT_DEPTH {
        return Err(SandboxError::OutputTooDeep);
    }
    let charge = |budget: &mut u64, bytes: usize| {
        *budget = budget
            .checked_sub(bytes as u64)
            .ok_or(SandboxError::OutputTooLarge(limit))?;
        Ok::<(), SandboxError>(())
    };
    Ok(match value {
        Val::Null => {
            charge(budget, 4)?;
            serde_json::Value::Null
        }
        Val::Bool(b) => {
            charge(budget, 5)?;
            serde_json::Value::Bool(*b)
        }
        Val::Num(_) => {
            let text = value.to_string();
            charge(budget, text.len())?;
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
        }
        Val::TStr(bytes) | Val::BStr(bytes) => {
            charge(budget, bytes.len() + 2)?;
            serde_json::Value::String(String::from_utf8_lossy(bytes).into_owned())
        }
        Val::Arr(items) => {
            charge(budget, 2 + items.len())?;
            let items = items
                .iter()
                .map(|item| to_json(item, depth + 1, budget, limit))
                .collect::<Result<_, _>>()?;
            serde_json::Value::Array(items)
        }
        Val::Obj(entries) => {
            charge(budget, 2 + entries.len() * 2)?;
            let mut map = serde_json::Map::with_capacity(entries.len());
            for (key, value) in entries.iter() {
                let key = match key {
                    Val::TStr(bytes) | Val::BStr(bytes) => {
                        String::from_utf8_lossy(bytes).into_owned()
                    }
                    other => other.to_string(),
                };
                charge(budget, key.len() + 2)?;
                map.insert(key, to_json(value, depth + 1, budget, limit)?);
            }
            serde_json::Value::Object(map)
        }
    })
}
