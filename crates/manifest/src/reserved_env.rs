//! The runtime variables the dispatcher owns, which no manifest may set:
//! shared by the native manifest, config manifests and workspaces.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_env_has_the_seed_table() {
        assert_eq!(RESERVED_ENV.len(), 16);
    }
}
