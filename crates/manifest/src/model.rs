//! The validated model of an agent: what the rest of the system consumes.
//!
//! Every path here is repo-relative and POSIX unless the field says otherwise.
//! A model is produced even when the manifest has errors (with best-effort
//! values), but callers must not package or register an agent whose
//! manifest produced an error diagnostic.

use std::collections::BTreeMap;

use serde::Serialize;

/// One discovered and validated agent manifest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentManifest {
    /// Repo-relative path of the `astrolift.toml`.
    pub manifest: String,
    /// Repo-relative directory of the manifest ("" for the root).
    pub dir: String,
    pub name: String,
    /// From the federation file.
    pub alias: Option<String>,
    /// False when the federation file says `enabled = false`.
    pub enabled: bool,
    pub brief: Option<Brief>,
    /// In the order the manifest lists them.
    pub skills: Vec<SkillRef>,
    pub workload: Option<Workload>,
    /// `[environment]`, less the reserved runtime variables.
    pub environment: BTreeMap<String, String>,
    /// `[secrets]`: name to `secret://` reference. Never a plaintext value.
    pub secrets: BTreeMap<String, String>,
    pub package: PackageSpec,
    /// `[[triggers]]`: the bindings complete enough to register.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<crate::triggers::TriggerSpec>,
    /// Where each catalogue or organization reference is written in the manifest, by
    /// [`SkillRef::remote_reference`]: the line resolution reports its failures on.
    #[serde(skip)]
    pub reference_spans: BTreeMap<String, crate::diagnostic::Span>,
    /// Where each binding of [`Self::triggers`] is written, by name: the span of its
    /// `name` value, the line a finding about the binding (a check-run warning) is on.
    #[serde(skip)]
    pub trigger_spans: BTreeMap<String, crate::diagnostic::Span>,
}

/// The agent's brief and the context files its relative links name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Brief {
    /// Repo-relative path of the Markdown file.
    pub path: String,
    /// Repo-relative paths of sibling files inside the brief's directory, in link order, de-duplicated.
    pub context_files: Vec<String>,
}

/// A skill reference in one of the seed's three forms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkillRef {
    /// `{ local_name = "skills/path" }` or `"./skills/path"`.
    Local {
        local_name: String,
        /// Repo-relative directory holding `SKILL.md`.
        dir: String,
        /// The frontmatter, when it parsed.
        skill: Option<LocalSkill>,
    },
    /// `"name@version"`: the built-in catalogue.
    Catalogue { name: String, version: String },
    /// `"repo-alias/path/to/skill@ref"`: a registered organization skill repo.
    Org {
        repo_alias: String,
        path: String,
        git_ref: String,
    },
}

impl SkillRef {
    /// A catalogue or organization reference as the manifest writes it (`name@version`,
    /// `alias/path/to/skill@ref`); `None` for a local skill. What resolution is keyed by
    /// and what its diagnostics name.
    pub fn remote_reference(&self) -> Option<String> {
        match self {
            SkillRef::Local { .. } => None,
            SkillRef::Catalogue { name, version } => Some(format!("{name}@{version}")),
            SkillRef::Org {
                repo_alias,
                path,
                git_ref,
            } => Some(format!("{repo_alias}/{path}@{git_ref}")),
        }
    }
}

/// A local skill's `SKILL.md` frontmatter and body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocalSkill {
    pub name: String,
    pub description: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub allowed_tools: Vec<String>,
    /// The Markdown body after the frontmatter: the skill's instructions.
    pub instructions: String,
}

/// The one `kind = "agent"` workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workload {
    pub name: String,
    pub run_family: Option<String>,
    pub max_retries: Option<u32>,
    pub tool_timeout_seconds: Option<u64>,
    pub result_ttl_hours: Option<u64>,
    pub containers: Vec<Container>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Container {
    pub name: String,
    pub is_primary: bool,
    pub image_ref: String,
}

/// `[package]`: which files of the repository make the agent's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackageSpec {
    /// True when the manifest has a `[package]` table.
    pub declared: bool,
    /// Repo-relative directory that is the package's virtual chroot
    /// (the manifest directory joined with `root`).
    pub root: String,
    /// Globs relative to `root`.
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub executables: Vec<String>,
    pub shared: Vec<SharedMount>,
}

/// `[[package.shared]]`: a repo-root path mounted inside the package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedMount {
    /// Repo-root relative file or directory.
    pub source: String,
    /// Package-relative destination.
    pub mount: String,
}

/// Default `[package] exclude`: VCS, cache and dependency paths.
pub const DEFAULT_EXCLUDES: &[&str] = &[
    ".git/**",
    "**/.git/**",
    ".hg/**",
    ".svn/**",
    ".astrolift/**",
    "target/**",
    "**/node_modules/**",
    "**/__pycache__/**",
    "**/*.pyc",
    "**/.DS_Store",
    "**/.venv/**",
    "**/.mypy_cache/**",
    "**/.pytest_cache/**",
    "**/.terraform/**",
];
