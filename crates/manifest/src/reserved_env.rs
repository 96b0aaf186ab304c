//! The runtime variables the dispatcher owns, which no manifest may set:
//! shared by the native manifest, config manifests and workspaces, with the one
//! refusal of a reserved `[environment]` or `[secrets]` key in a TOML manifest.

use std::ops::Range;

use crate::diagnostic::{Code, Diagnostic};
use crate::toml_walk::TomlFile;

/// The runtime variables the dispatcher owns (docs/reference.md §11).
/// A manifest `[environment]` that sets one is ignored with a warning; the
/// runtime renderer reuses this list.
pub const RESERVED_ENV: &[&str] = &[
    "ASTROLIFT_TRIGGER_PAYLOAD",
    "ASTROLIFT_TASK_ID",
    "ASTROLIFT_CONTROLLER_URL",
    "AGENT_CALLBACK_URL",
    "ASTROLIFT_CLUSTER_KEY",
    "ASTROLIFT_BRIEF_ID",
    "ASTROLIFT_BRIEF_HASH",
    "ASTROLIFT_PAYLOAD_URL",
    "ASTROLIFT_PAYLOAD_HASH",
    "AGENT_SYSTEM",
    "AGENT_PROMPT",
    "ASTROLIFT_WORKSPACE",
    "ASTROLIFT_SNAPSHOT_URL",
    "ASTROLIFT_SNAPSHOT_INTERVAL",
    "ASTROLIFT_SNAPSHOT_LOCAL_PATH",
    "ASTROLIFT_TMUX_SESSION",
];

/// When `name`, the key of `section` at `key` (its entry ending at `entry_end`), is
/// reserved: reports it as `code` with `message` and a fix that removes the entry's
/// lines when they stand on their own, and returns the diagnostic; the caller drops the
/// entry. `None` for any other name. The one refusal of `[environment]` and `[secrets]`
/// in native and config manifests.
pub(crate) fn refuse_reserved<'d>(
    file: &'d mut TomlFile<'_>,
    code: &Code,
    section: &str,
    name: &str,
    key: Range<usize>,
    entry_end: Option<usize>,
    message: String,
) -> Option<&'d mut Diagnostic> {
    if !RESERVED_ENV.contains(&name) {
        return None;
    }
    let fix = entry_end.and_then(|end| {
        file.remove_lines_fix(key.start..end, format!("remove `{name}` from {section}"))
    });
    let diagnostic = file.report(code, key, message);
    diagnostic.fix = fix;
    Some(diagnostic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_env_has_the_seed_table() {
        assert_eq!(RESERVED_ENV.len(), 16);
    }
}
