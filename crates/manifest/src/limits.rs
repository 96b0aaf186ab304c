//! The limits of docs/reference.md §14, in one place. Every limit is configurable;
//! these defaults are what the CLI, `serve` and the Lambda functions use.

/// Bounds on hostile input. Exceeding one gives a diagnostic or a 4xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Webhook request body, bytes.
    pub webhook_body: u64,
    /// Trigger request body, bytes.
    pub trigger_body: u64,
    /// Any manifest, SKILL.md, brief, config or prompt file, bytes.
    pub manifest_file: u64,
    /// Entries in one repository tarball (or local tree).
    pub tarball_files: usize,
    /// Uncompressed size of one agent package, bytes.
    pub package_size: u64,
    /// Levels of config-manifest includes below the main file.
    pub include_depth: usize,
    /// Distinct config files loaded by one assembly, the main file included
    /// (each file is loaded once however often it is included).
    pub config_files: usize,
    /// YAML nesting depth.
    pub yaml_depth: usize,
    /// YAML alias expansions.
    pub yaml_aliases: usize,
    /// jq evaluation time, milliseconds.
    pub jq_time_ms: u64,
    /// jq output size, bytes.
    pub jq_output: u64,
    /// `Idempotency-Key` (or `X-GitHub-Delivery`) of a trigger request, bytes.
    pub idempotency_key: usize,
    /// One path in a repository tarball (after GNU long names and PAX
    /// `path` records are applied), bytes.
    pub tarball_path: usize,
    /// Stages of one workflow (each stage is a dispatch and a slot of the
    /// run's state record).
    pub workflow_stages: usize,
    /// The `result` of a callback (`POST /callbacks/{task_id}`), as serialized, bytes.
    pub callback_result: u64,
    /// Skill repositories one sync fetches, each distinct (repository, ref) once: a
    /// reference past it is `skill/too-many-repositories`.
    pub skill_repositories: usize,
}

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;

impl Limits {
    pub const DEFAULT: Limits = Limits {
        webhook_body: 25 * MIB,
        trigger_body: MIB,
        manifest_file: MIB,
        tarball_files: 200_000,
        package_size: 256 * MIB,
        include_depth: 16,
        config_files: 256,
        yaml_depth: 64,
        yaml_aliases: 10_000,
        jq_time_ms: astrolift_jq::JqLimits::DEFAULT.time_ms,
        jq_output: astrolift_jq::JqLimits::DEFAULT.output,
        idempotency_key: 256,
        tarball_path: 4096,
        workflow_stages: 64,
        callback_result: 256 * KIB,
        skill_repositories: 32,
    };
}

impl Limits {
    /// The limits of one jq evaluation (crates/jq).
    pub fn jq(&self) -> astrolift_jq::JqLimits {
        astrolift_jq::JqLimits {
            time_ms: self.jq_time_ms,
            output: self.jq_output,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
