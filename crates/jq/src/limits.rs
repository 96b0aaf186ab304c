//! What bounds one evaluation: its time and the size of its output.

/// The limits of one jq evaluation (docs/reference.md, "Limits").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JqLimits {
    /// Evaluation time, milliseconds.
    pub time_ms: u64,
    /// Output size as serialized, escapes counted, bytes; also bounds the
    /// size of `error` messages.
    pub output: u64,
}

impl JqLimits {
    /// The documented defaults: 100 ms and 256 KiB.
    pub const DEFAULT: JqLimits = JqLimits {
        time_ms: 100,
        output: 256 * 1024,
    };
}

impl Default for JqLimits {
    fn default() -> Self {
        JqLimits::DEFAULT
    }
}
