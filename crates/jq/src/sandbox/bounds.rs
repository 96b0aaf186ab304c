//! The sandbox's fixed bounds: stacks, output nesting, error size, grace.

use std::time::Duration;

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

/// How much of an error message a 422 body and its log line carry.
pub const MAX_ERROR_MESSAGE: usize = 2048;
