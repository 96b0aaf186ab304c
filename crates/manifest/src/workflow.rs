//! Workflows: `workflows/*.toml` (or the federation file's `workflows`
//! globs), schema `astrolift.workflow/v1` (docs/reference.md, "Workflows").
//!
//! A workflow is a named set of stages; each stage runs one agent of this
//! repository (by name or federation alias) with extra skills and a jq
//! `payload` over `{input, stages}`, after the stages it `needs`. This module
//! reads and checks the files with positions and returns the model; running
//! a workflow is `crates/trigger`'s `workflow` module.
//!
//! Rules, each a diagnostic on the offending key or value:
//! - `schema`, a slug `name` unique in the repository, at least one stage and
//!   at most [`Limits::workflow_stages`];
//! - stage names are slugs, unique in the workflow;
//! - `agent` names an agent (its `name` or federation `alias`) that is
//!   discovered here and enabled;
//! - `skills` are catalogue (`name@1.2.0`) or organization
//!   (`alias/path/to/skill@ref`) references: a local skill belongs in the
//!   agent's own manifest, whose package carries it;
//! - `needs` name stages of the same workflow, and the graph is acyclic (the
//!   diagnostic names the cycle, `a → b → a`);
//! - `payload` compiles as jq (the restricted definitions of [`crate::jq`]);
//! - `timeout` (`30s`…`7d`, default `24h`), `heartbeat` (shorter than the
//!   timeout) and `retries` (0–5, default 0) are valid ([`options`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;

use serde::{Deserialize, Serialize};
use toml::de::{DeTable, DeValue};

use crate::diagnostic::{Code, Diagnostic, Severity};
use crate::files;
use crate::limits::Limits;
use crate::model::AgentManifest;
use crate::paths::{self, SLUG_RULE};
use crate::remote_ref::parse_remote_ref;
use crate::toml_walk::{TomlFile, key_span};
use crate::tree::SourceTree;
use crate::triggers::compiled_jq_field;

pub mod options;

pub use options::{
    DEFAULT_TIMEOUT_SECONDS, INVALID_HEARTBEAT, INVALID_RETRIES, INVALID_TIMEOUT, MAX_RETRIES,
    MAX_TIMEOUT_SECONDS, MIN_TIMEOUT_SECONDS,
};

/// The directory whose `*.toml` files are workflows (without federation globs).
pub const WORKFLOWS_DIR: &str = "workflows";
/// The one `schema` this version reads.
pub const SCHEMA_V1: &str = "astrolift.workflow/v1";

pub const UNSUPPORTED_SCHEMA: Code = Code::new(
    "workflow/unsupported-schema",
    Severity::Error,
    "`schema` is not `astrolift.workflow/v1`.",
);
pub const INVALID_NAME: Code = Code::new(
    "workflow/invalid-name",
    Severity::Error,
    "A workflow or stage `name` is not a slug.",
);
pub const DUPLICATE_NAME: Code = Code::new(
    "workflow/duplicate-name",
    Severity::Error,
    "Two workflows of the repository have the same `name`.",
);
pub const DUPLICATE_STAGE: Code = Code::new(
    "workflow/duplicate-stage",
    Severity::Error,
    "Two stages of one workflow have the same `name`.",
);
pub const NO_STAGES: Code = Code::new(
    "workflow/no-stages",
    Severity::Error,
    "A workflow has no `[[stages]]`.",
);
pub const TOO_MANY_STAGES: Code = Code::new(
    "workflow/too-many-stages",
    Severity::Error,
    "A workflow has more stages than the limit (64 by default).",
);
pub const UNKNOWN_AGENT: Code = Code::new(
    "workflow/unknown-agent",
    Severity::Error,
    "A stage's `agent` is neither the name nor the federation alias of an agent of this repository.",
);
pub const DISABLED_AGENT: Code = Code::new(
    "workflow/disabled-agent",
    Severity::Error,
    "A stage's `agent` is disabled in the federation file, so it is not registered and cannot run.",
);
pub const INVALID_SKILL_REF: Code = Code::new(
    "workflow/invalid-skill-ref",
    Severity::Error,
    "A stage's skill is not a catalogue (`name@1.2.0`) or organization (`alias/path@ref`) reference.",
);
pub const UNKNOWN_NEED: Code = Code::new(
    "workflow/unknown-need",
    Severity::Error,
    "A stage `needs` a stage that the workflow does not have.",
);
pub const CYCLE: Code = Code::new(
    "workflow/cycle",
    Severity::Error,
    "The stages' `needs` form a cycle; the message names it.",
);
pub const JQ_SYNTAX: Code = Code::new(
    "workflow/jq-syntax",
    Severity::Error,
    "A stage's `payload` is not valid jq.",
);
pub const JQ_UNDEFINED: Code = Code::new(
    "workflow/jq-undefined",
    Severity::Error,
    "A stage's `payload` uses an undefined or removed jq function or variable (`env`, `$ENV`, `input`…).",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[
    &UNSUPPORTED_SCHEMA,
    &INVALID_NAME,
    &DUPLICATE_NAME,
    &DUPLICATE_STAGE,
    &NO_STAGES,
    &TOO_MANY_STAGES,
    &UNKNOWN_AGENT,
    &DISABLED_AGENT,
    &INVALID_SKILL_REF,
    &UNKNOWN_NEED,
    &CYCLE,
    &JQ_SYNTAX,
    &JQ_UNDEFINED,
    &INVALID_TIMEOUT,
    &INVALID_HEARTBEAT,
    &INVALID_RETRIES,
];

/// The keys of a workflow file's root table.
pub const ROOT_KEYS: &[&str] = &["schema", "name", "description", "stages"];
/// The keys of a `[[stages]]` entry.
pub const STAGE_KEYS: &[&str] = &[
    "name",
    "agent",
    "skills",
    "needs",
    "payload",
    "env_spec",
    "timeout",
    "heartbeat",
    "retries",
];

/// One workflow file, read as far as it checks out. Its canonical JSON is
/// what the sync hashes and stores, so a comment or a reformatting is not a
/// change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workflow {
    /// Repo-relative path of the file.
    pub path: String,
    /// Empty when the file has no usable name.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// In file order.
    pub stages: Vec<Stage>,
}

/// One `[[stages]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stage {
    pub name: String,
    /// As written: the agent's name or federation alias.
    pub agent: String,
    /// The resolved agent's manifest path (empty when `agent` is unknown).
    pub manifest: String,
    /// Skill references added after the agent's own skills, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// Stage names, de-duplicated, in the order written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
    /// jq over `{input, stages: {NAME: {result}}}`; compiled during validation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_spec: Option<String>,
    /// `timeout` in seconds, from [`MIN_TIMEOUT_SECONDS`] to
    /// [`MAX_TIMEOUT_SECONDS`]. Left out of the canonical JSON at its
    /// default, so a file without stage options hashes as it did before them.
    #[serde(
        default = "default_timeout",
        skip_serializing_if = "is_default_timeout"
    )]
    pub timeout_seconds: u32,
    /// `heartbeat` in seconds: the longest the stage may go without a
    /// `running` callback; shorter than the timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_seconds: Option<u32>,
    /// `retries`: how often a failed or timed-out stage is dispatched again
    /// (0 to [`MAX_RETRIES`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u8,
}

impl Default for Stage {
    /// A stage with no name and agent yet, and the default options.
    fn default() -> Self {
        Self {
            name: String::new(),
            agent: String::new(),
            manifest: String::new(),
            skills: Vec::new(),
            needs: Vec::new(),
            payload: None,
            env_spec: None,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            heartbeat_seconds: None,
            retries: 0,
        }
    }
}

fn default_timeout() -> u32 {
    DEFAULT_TIMEOUT_SECONDS
}

fn is_default_timeout(seconds: &u32) -> bool {
    *seconds == DEFAULT_TIMEOUT_SECONDS
}

fn is_zero(retries: &u8) -> bool {
    *retries == 0
}

impl Workflow {
    /// The stage called `name`.
    pub fn stage(&self, name: &str) -> Option<&Stage> {
        self.stages.iter().find(|s| s.name == name)
    }
}

/// The workflow files of `tree`: the federation file's `workflows` globs
/// when it has them, else `workflows/*.toml` (direct children only), in
/// path order.
pub fn workflow_files(tree: &dyn SourceTree, globs: Option<&globset::GlobSet>) -> Vec<String> {
    tree.entries()
        .iter()
        .map(|e| e.path.as_str())
        .filter(|path| match globs {
            Some(globs) => globs.is_match(path),
            None => paths::parent(path) == WORKFLOWS_DIR && path.ends_with(".toml"),
        })
        .map(str::to_owned)
        .collect()
}

/// Reads and checks every workflow file of `files` against the repository's
/// `agents`. A file that cannot be read has no model, only its diagnostic;
/// the second file with a name already used gets `workflow/duplicate-name`.
pub fn validate_workflows(
    tree: &dyn SourceTree,
    limits: &Limits,
    files: &[String],
    agents: &[AgentManifest],
) -> (Vec<Workflow>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut workflows = Vec::with_capacity(files.len());
    let mut names: HashMap<String, String> = HashMap::new();
    for path in files {
        let Some(text) = files::read_text(tree, path, limits.manifest_file, &mut diagnostics)
        else {
            continue;
        };
        let (mut file, root) = TomlFile::parse(path.as_str(), &text);
        let workflow = read_workflow(&mut file, root.get_ref(), limits, agents, &mut names);
        diagnostics.append(&mut file.diagnostics);
        workflows.push(workflow);
    }
    (workflows, diagnostics)
}

fn read_workflow<'i>(
    file: &mut TomlFile<'i>,
    root: &DeTable<'i>,
    limits: &Limits,
    agents: &[AgentManifest],
    names: &mut HashMap<String, String>,
) -> Workflow {
    file.check_keys(root, ROOT_KEYS, "a workflow");
    check_schema(file, root);
    let name = workflow_name(file, root, names);
    let description = file.str(root, "description").map(|(d, _)| d.to_owned());
    let stages = read_stages(file, root, limits, agents);
    Workflow {
        path: file.path.clone(),
        name,
        description,
        stages,
    }
}

fn check_schema<'i>(file: &mut TomlFile<'i>, root: &DeTable<'i>) {
    match file.str(root, "schema") {
        Some((SCHEMA_V1, _)) => {}
        Some((other, range)) => {
            let message = format!("unsupported workflow schema `{other}`");
            file.report(&UNSUPPORTED_SCHEMA, range, message).help =
                Some(format!("write `schema = \"{SCHEMA_V1}\"`"));
        }
        None if root.get("schema").is_none() => file.missing(0..0, "schema", "a workflow"),
        None => {}
    }
}

fn workflow_name<'i>(
    file: &mut TomlFile<'i>,
    root: &DeTable<'i>,
    names: &mut HashMap<String, String>,
) -> String {
    if root.get("name").is_none() {
        file.missing(0..0, "name", "a workflow");
        return String::new();
    }
    let Some((name, range)) = file.str(root, "name") else {
        return String::new();
    };
    if !paths::is_slug(name) {
        file.report(
            &INVALID_NAME,
            range,
            format!("workflow name `{name}` is not a slug"),
        )
        .help = Some(SLUG_RULE.to_owned());
        return String::new();
    }
    if let Some(first) = names.get(name) {
        let message = format!("workflow name `{name}` is already used by `{first}`");
        file.report(&DUPLICATE_NAME, range, message).help =
            Some("workflow names are unique within a repository; rename one of them".to_owned());
    } else {
        names.insert(name.to_owned(), file.path.clone());
    }
    name.to_owned()
}

/// One stage as read, with the spans the graph checks need.
struct ReadStage {
    stage: Stage,
    name_range: Option<Range<usize>>,
    /// Each need as written, with its span (duplicates removed).
    needs: Vec<(String, Range<usize>)>,
}

fn read_stages<'i>(
    file: &mut TomlFile<'i>,
    root: &DeTable<'i>,
    limits: &Limits,
    agents: &[AgentManifest],
) -> Vec<Stage> {
    let entries = file.table_array(root, "stages");
    if entries.is_empty() {
        let absent_or_empty = match root.get("stages").map(|item| item.get_ref()) {
            None => true,
            Some(DeValue::Array(array)) => array.is_empty(),
            Some(_) => false,
        };
        // A file that does not parse has no stages to speak of: its syntax
        // error says enough.
        let unparsed = file
            .diagnostics
            .iter()
            .any(|d| d.code == crate::toml_walk::SYNTAX.id);
        if absent_or_empty && !unparsed {
            let at = key_span(root, "stages").unwrap_or(0..0);
            file.report(&NO_STAGES, at, "the workflow has no stages")
                .help = Some("add a `[[stages]]` entry with `name` and `agent`".to_owned());
        }
        return Vec::new();
    }
    let mut read = Vec::with_capacity(entries.len().min(limits.workflow_stages));
    let mut seen: HashMap<String, u32> = HashMap::new();
    for (index, (entry, entry_range)) in entries.into_iter().enumerate() {
        if index == limits.workflow_stages {
            let limit = limits.workflow_stages;
            file.report(
                &TOO_MANY_STAGES,
                entry_range,
                format!("the workflow has more than {limit} stages; the rest are not read"),
            )
            .help = Some("split the workflow, or merge stages that run the same agent".to_owned());
            break;
        }
        read.push(read_stage(file, entry, entry_range, agents, &mut seen));
    }
    check_needs(file, &read);
    read.into_iter().map(|r| r.stage).collect()
}

fn read_stage<'i>(
    file: &mut TomlFile<'i>,
    entry: &DeTable<'i>,
    entry_range: Range<usize>,
    agents: &[AgentManifest],
    seen: &mut HashMap<String, u32>,
) -> ReadStage {
    file.check_keys(entry, STAGE_KEYS, "a [[stages]] entry");
    let (name, name_range) = stage_name(file, entry, entry_range.clone(), seen);
    let (agent, manifest) = stage_agent(file, entry, entry_range, agents);
    let skills = stage_skills(file, entry);
    let needs = stage_needs(file, entry);
    let payload = compiled_jq_field(file, entry, "payload", [&JQ_SYNTAX, &JQ_UNDEFINED]);
    let env_spec = file.str(entry, "env_spec").map(|(e, _)| e.to_owned());
    let options = options::stage_options(file, entry);
    ReadStage {
        stage: Stage {
            name,
            agent,
            manifest,
            skills,
            needs: needs.iter().map(|(n, _)| n.clone()).collect(),
            payload,
            env_spec,
            timeout_seconds: options.timeout_seconds,
            heartbeat_seconds: options.heartbeat_seconds,
            retries: options.retries,
        },
        name_range,
        needs,
    }
}

fn stage_name<'i>(
    file: &mut TomlFile<'i>,
    entry: &DeTable<'i>,
    entry_range: Range<usize>,
    seen: &mut HashMap<String, u32>,
) -> (String, Option<Range<usize>>) {
    if entry.get("name").is_none() {
        file.missing(entry_range, "name", "a [[stages]] entry");
        return (String::new(), None);
    }
    let Some((name, range)) = file.str(entry, "name") else {
        return (String::new(), None);
    };
    if !paths::is_slug(name) {
        file.report(
            &INVALID_NAME,
            range.clone(),
            format!("stage name `{name}` is not a slug"),
        )
        .help = Some(SLUG_RULE.to_owned());
    } else if let Some(line) = seen.get(name) {
        let message = format!("stage `{name}` is already defined on line {line}");
        file.report(&DUPLICATE_STAGE, range.clone(), message).help =
            Some("stage names are unique within a workflow".to_owned());
    } else {
        let line = file.span(range.clone()).line;
        seen.insert(name.to_owned(), line);
    }
    (name.to_owned(), Some(range))
}

/// The stage's agent as written and the manifest it resolves to. An alias
/// wins over a name (aliases are what federation files give to say which
/// agent is meant).
fn stage_agent<'i>(
    file: &mut TomlFile<'i>,
    entry: &DeTable<'i>,
    entry_range: Range<usize>,
    agents: &[AgentManifest],
) -> (String, String) {
    if entry.get("agent").is_none() {
        file.missing(entry_range, "agent", "a [[stages]] entry");
        return (String::new(), String::new());
    }
    let Some((agent, range)) = file.str(entry, "agent") else {
        return (String::new(), String::new());
    };
    let found = agents
        .iter()
        .find(|a| a.alias.as_deref() == Some(agent))
        .or_else(|| agents.iter().find(|a| a.name == agent));
    match found {
        Some(found) if found.enabled => (agent.to_owned(), found.manifest.clone()),
        Some(found) => {
            let message = format!(
                "agent `{agent}` (`{}`) is disabled, so it is not registered and cannot run",
                found.manifest
            );
            file.report(&DISABLED_AGENT, range, message).help = Some(
                "enable it in astrolift.agents.toml, or run another agent in this stage".to_owned(),
            );
            (agent.to_owned(), found.manifest.clone())
        }
        None => {
            let known: BTreeSet<&str> = agents
                .iter()
                .filter(|a| a.enabled && !a.name.is_empty())
                .map(|a| a.alias.as_deref().unwrap_or(&a.name))
                .collect();
            let help = if known.is_empty() {
                "this repository has no enabled agent".to_owned()
            } else {
                let known: Vec<&str> = known.into_iter().collect();
                format!("agents of this repository: {}", known.join(", "))
            };
            let message = format!("no agent of this repository is named or aliased `{agent}`");
            file.report(&UNKNOWN_AGENT, range, message).help = Some(help);
            (agent.to_owned(), String::new())
        }
    }
}

/// `skills`: catalogue and organization references, in order; a local form
/// or a malformed reference is reported and left out.
fn stage_skills<'i>(file: &mut TomlFile<'i>, entry: &DeTable<'i>) -> Vec<String> {
    let Some((array, _)) = file.array(entry, "skills") else {
        return Vec::new();
    };
    let mut skills = Vec::with_capacity(array.len());
    for item in array.iter() {
        let DeValue::String(text) = item.get_ref() else {
            let message = "a stage skill is a `\"name@version\"` or `\"alias/path@ref\"` string; a local skill table belongs in the agent's manifest";
            file.report(&INVALID_SKILL_REF, item.span(), message);
            continue;
        };
        if text.starts_with("./") {
            let message = format!("`{text}` is a local skill, which a workflow stage cannot add");
            file.report(&INVALID_SKILL_REF, item.span(), message).help = Some(
                "list local skills in the agent's astrolift.toml (its package carries them); a stage adds `\"name@1.2.0\"` or `\"alias/path/to/skill@ref\"`".to_owned(),
            );
            continue;
        }
        match parse_remote_ref(text) {
            Ok(_) => skills.push(text.to_string()),
            Err(reason) => {
                let message = format!("`{text}` is not a skill reference: {reason}");
                file.report(&INVALID_SKILL_REF, item.span(), message).help = Some(
                    "write `\"name@1.2.0\"` (catalogue) or `\"alias/path/to/skill@ref\"` (organization skill repo)".to_owned(),
                );
            }
        }
    }
    skills
}

fn stage_needs<'i>(file: &mut TomlFile<'i>, entry: &DeTable<'i>) -> Vec<(String, Range<usize>)> {
    // A set beside the list: a tenant-sized `needs` is de-duplicated in linear time.
    let mut seen = HashSet::new();
    let mut needs: Vec<(String, Range<usize>)> = Vec::new();
    for (need, range) in file.str_array(entry, "needs").unwrap_or_default() {
        if seen.insert(need.clone()) {
            needs.push((need, range));
        }
    }
    needs
}

/// Every need names a stage of the workflow, and the graph is acyclic.
fn check_needs(file: &mut TomlFile<'_>, stages: &[ReadStage]) {
    let index: HashMap<&str, usize> = stages
        .iter()
        .enumerate()
        .filter(|(_, s)| s.name_range.is_some())
        .map(|(i, s)| (s.stage.name.as_str(), i))
        .rev() // the first of two stages with one name wins
        .collect();
    let mut edges: Vec<Vec<(usize, Range<usize>)>> = vec![Vec::new(); stages.len()];
    // Built once: every unknown need shares the one help text.
    let known = known_stages(&index);
    for (from, stage) in stages.iter().enumerate() {
        for (need, range) in &stage.needs {
            match index.get(need.as_str()) {
                Some(&to) => edges[from].push((to, range.clone())),
                None => {
                    let message = format!(
                        "stage `{}` needs `{need}`, which is not a stage of this workflow",
                        stage.stage.name
                    );
                    file.report(&UNKNOWN_NEED, range.clone(), message).help = Some(known.clone());
                }
            }
        }
    }
    for (cycle, range) in cycles(&edges) {
        let names: Vec<&str> = cycle
            .iter()
            .filter_map(|&i| stages.get(i).map(|s| s.stage.name.as_str()))
            .collect();
        let message = format!("the stages' needs form a cycle: {}", names.join(" → "));
        file.report(&CYCLE, range, message).help =
            Some("a workflow is acyclic: remove one of these `needs`".to_owned());
    }
}

/// The help of an unknown need: the workflow's stage names, sorted, at most
/// [`KNOWN_STAGES_SHOWN`] of them.
fn known_stages(index: &HashMap<&str, usize>) -> String {
    let mut known: Vec<&str> = index.keys().copied().collect();
    known.sort_unstable();
    let shown = known.len().min(KNOWN_STAGES_SHOWN);
    let mut help = format!("stages of this workflow: {}", known[..shown].join(", "));
    if known.len() > shown {
        help.push_str(&format!(" and {} more", known.len() - shown));
    }
    help
}

/// How many stage names the help of an unknown need lists.
const KNOWN_STAGES_SHOWN: usize = 20;

/// How many cycles a workflow reports: each names its stages, so reporting every back
/// edge of a large graph would print quadratic text.
const CYCLES_REPORTED: usize = 10;

/// Each back edge of a depth-first search over `edges` (stage → the stages
/// it needs), as the cycle it closes (first stage repeated at the end) and
/// the span of the need that closes it. Iterative, so a long chain of needs
/// cannot exhaust the stack.
fn cycles(edges: &[Vec<(usize, Range<usize>)>]) -> Vec<(Vec<usize>, Range<usize>)> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut marks = vec![Mark::New; edges.len()];
    // Where each node on the path sits in it: a back edge finds its cycle's start in O(1).
    let mut depth = vec![0usize; edges.len()];
    let mut found = Vec::new();
    for start in 0..edges.len() {
        if marks[start] != Mark::New {
            continue;
        }
        // The current path: (node, index of its next edge).
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        marks[start] = Mark::OnPath;
        while let Some(top) = path.last_mut() {
            let node = top.0;
            let edge = edges[node].get(top.1);
            top.1 += 1;
            let Some((to, range)) = edge else {
                marks[node] = Mark::Done;
                path.pop();
                continue;
            };
            match marks[*to] {
                Mark::New => {
                    marks[*to] = Mark::OnPath;
                    depth[*to] = path.len();
                    path.push((*to, 0));
                }
                Mark::OnPath if found.len() < CYCLES_REPORTED => {
                    let mut cycle: Vec<usize> =
                        path[depth[*to]..].iter().map(|(n, _)| *n).collect();
                    cycle.push(*to);
                    found.push((cycle, range.clone()));
                }
                Mark::OnPath | Mark::Done => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(list: &[&[usize]]) -> Vec<Vec<(usize, Range<usize>)>> {
        list.iter()
            .map(|to| to.iter().map(|&t| (t, t..t + 1)).collect())
            .collect()
    }

    #[test]
    fn finds_each_cycle_once_with_its_path() {
        let none = cycles(&edges(&[&[], &[0], &[0, 1]]));
        assert!(none.is_empty());
        let two = cycles(&edges(&[&[1], &[0]]));
        assert_eq!(two.len(), 1);
        assert_eq!(two[0].0, [0, 1, 0]);
        let own = cycles(&edges(&[&[0]]));
        assert_eq!(own[0].0, [0, 0]);
        let three = cycles(&edges(&[&[], &[2], &[3], &[1]]));
        assert_eq!(three.len(), 1);
        assert_eq!(three[0].0, [1, 2, 3, 1]);
    }

    #[test]
    fn a_long_chain_does_not_recurse() {
        let chain: Vec<Vec<(usize, Range<usize>)>> = (0..100_000)
            .map(|i| {
                if i == 0 {
                    Vec::new()
                } else {
                    vec![(i - 1, 0..1)]
                }
            })
            .collect();
        assert!(cycles(&chain).is_empty());
    }
}
