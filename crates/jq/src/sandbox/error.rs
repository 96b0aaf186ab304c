//! Why a sandboxed run failed, and how much of a message is kept.

use super::bounds::{MAX_ERROR_MESSAGE, MAX_OUTPUT_DEPTH};

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
