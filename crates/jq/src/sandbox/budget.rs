//! The budget of one run (deadline and stack), checked by every guard.

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::bounds::STACK_BUDGET;
use super::error::SandboxError;

/// What bounds one run; lives in a thread-local of the worker.
#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
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
    pub(super) fn enter(time_ms: u64) {
        let budget = Budget {
            deadline: Instant::now() + Duration::from_millis(time_ms),
            time_ms,
            stack_base: stack_position(),
        };
        BUDGET.with(|b| b.set(Some(budget)));
        TRIPPED.with(|t| t.set(None));
    }
}

pub(super) fn tripped() -> Result<(), SandboxError> {
    match TRIPPED.with(|t| t.take()) {
        Some(error) => {
            TRIPPED.with(|t| t.set(Some(error.clone())));
            Err(error)
        }
        None => Ok(()),
    }
}

/// The guard's check: `Ok` while the run is within its budget.
pub(super) fn check_budget() -> Result<(), SandboxError> {
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
