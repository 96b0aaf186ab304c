//! A workflow compiled to an Amazon States Language definition, and the
//! name of its state machine: pure functions of the workflow's content
//! (docs/reference.md §5.6, "Workflows"), so an unchanged workflow compiles
//! to the same bytes and needs no Step Functions call.
//!
//! # Stages
//! Each stage is a `Task` state named as the stage, on [`STAGE_RESOURCE`]:
//! it sends `{"run_id", "stage", "task_token"}` to the stage queue (the
//! `queue_url` of [`compile`]) and waits for the token's answer. Its
//! `TimeoutSeconds` is the stage's `timeout`, its `HeartbeatSeconds` its
//! `heartbeat` when it has one, and a stage with `retries` has one `Retry`
//! on [`RETRIED_ERRORS`]: after [`RETRY_INTERVAL_SECONDS`], the wait
//! multiplied by [`RETRY_BACKOFF_RATE`] each time, at most `retries` times.
//!
//! Every state has `"ResultPath": null`: its output is its input, so every
//! state's input is the execution's input (`{"run_id", "input"}`) and
//! `$.run_id` resolves in each stage, however deep in `Parallel` branches.
//! A stage's result stays in the state store, where the next stage's
//! payload reads it; carrying outputs along (a per-stage path) would make a
//! `Parallel` state's output an array of its branches' inputs, grow with
//! every stage and reach Step Functions' 256 KiB bound on a state's data.
//!
//! # The graph
//! A stage runs once every stage it `needs` (directly or through others)
//! succeeded; the compiled machine never runs a stage earlier.
//! - A **series-parallel** graph ([`Shape::SeriesParallel`]) compiles
//!   exactly: stages that do not depend on one another in either direction,
//!   split into groups with no dependency between groups, become one
//!   `Parallel` state with a branch per group; groups where each stage of one
//!   needs every stage of the other run in sequence. No stage waits for a
//!   stage it does not need.
//! - **Any other graph** ([`Shape::Levels`]; the smallest is the "N": `c`
//!   needs `a` and `b`, `d` needs `b`) cannot be written that way, and
//!   compiles to one state per topological level (a stage's level is one
//!   more than the highest of its needs', 0 without needs): the level's
//!   stage alone, or a `Parallel` state with a branch per stage. A stage
//!   then may wait for a stage of an earlier level it does not need.
//!
//! `Parallel` states are named `Parallel_1`, `Parallel_2`… in the order they
//! are written; a stage name is a slug, so neither can take the other's
//! name. Branches are in the file order of their first stage.
//!
//! # The name
//! [`state_machine_name`]: `<prefix><repository slug>-<workflow>-<8 hex of
//! the content hash>`, at most [`NAME_MAX_CHARS`] characters of letters,
//! digits, `-` and `_` (Step Functions' rule). The repository slug is the
//! repository lower-cased with `/` as `_` (a GitHub owner has no `_`) and
//! every other run of characters outside the rule as `-`. Too long a name
//! cuts the slug and the workflow, never the prefix (the IAM policies are
//! scoped to it) and never the hash.

use std::collections::HashMap;

use astrolift_manifest::paths::is_slug;
use astrolift_manifest::workflow::{Stage, Workflow};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// A stage's `Task` resource: send to SQS, then wait for the task token.
pub const STAGE_RESOURCE: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";
/// The errors a stage with `retries` is retried on: a failure the stage
/// reported (`SendTaskFailure`) and a timeout (its own or its heartbeat's).
pub const RETRIED_ERRORS: [&str; 2] = ["States.TaskFailed", "States.Timeout"];
/// The wait before a stage's first retry.
pub const RETRY_INTERVAL_SECONDS: u32 = 30;
/// How each retry's wait grows from the one before.
pub const RETRY_BACKOFF_RATE: f64 = 2.0;
/// The longest state machine name Step Functions takes.
pub const NAME_MAX_CHARS: usize = 80;
/// The longest definition Step Functions takes, in characters.
pub const DEFINITION_MAX_CHARS: usize = 1_048_576;
/// The hex digits of the content hash a name ends with.
const NAME_HASH_CHARS: usize = 8;

/// How a workflow's graph was compiled; the plan prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// Nested `Parallel` states: no stage waits for one it does not need.
    SeriesParallel,
    /// One state per topological level: a stage may wait for stages of
    /// earlier levels it does not need.
    Levels,
}

impl Shape {
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::SeriesParallel => "series-parallel",
            Shape::Levels => "levels",
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A compiled workflow: its ASL definition and how its graph was compiled.
#[derive(Debug, Clone, PartialEq)]
pub struct StateMachine {
    pub definition: Value,
    pub shape: Shape,
}

/// Why a workflow does not compile. Validation refuses all of these before a
/// workflow is registered but the size; the compiler checks again rather
/// than trust its input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error("the workflow has no stages")]
    NoStages,
    #[error("stage name `{0}` is not a slug")]
    InvalidStageName(String),
    #[error("two stages are named `{0}`")]
    DuplicateStage(String),
    #[error("stage `{stage}` needs `{need}`, which is not a stage of the workflow")]
    UnknownNeed { stage: String, need: String },
    #[error("the stages' needs form a cycle through `{0}`")]
    Cycle(String),
    #[error(
        "the definition would be at least {chars} characters; Step Functions takes at most {max}",
        max = DEFINITION_MAX_CHARS
    )]
    TooLarge { chars: usize },
}

/// Why a state machine cannot be named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error(
        "the state machine prefix `{0}` has a character other than a letter, a digit, `-` or `_`"
    )]
    InvalidPrefix(String),
    #[error(
        "the state machine prefix `{0}` is too long: a name of at most {max} characters needs room for the repository, the workflow and {hash} hex digits",
        max = NAME_MAX_CHARS,
        hash = NAME_HASH_CHARS
    )]
    PrefixTooLong(String),
    #[error("content hash `{0}` does not start with {hash} hex digits", hash = NAME_HASH_CHARS)]
    InvalidHash(String),
}

/// The ASL definition of `workflow`, its stages sending to `queue_url`.
pub fn compile(workflow: &Workflow, queue_url: &str) -> Result<StateMachine, CompileError> {
    check_size_bound(workflow, queue_url)?;
    let graph = Graph::new(&workflow.stages)?;
    let everything: Vec<usize> = (0..workflow.stages.len()).collect();
    let (steps, shape) = match series_parallel(&graph, &everything) {
        Some(steps) => (steps, Shape::SeriesParallel),
        None => (levels(&graph), Shape::Levels),
    };
    let mut writer = Writer {
        stages: &workflow.stages,
        queue_url,
        parallels: 0,
    };
    let mut definition = Map::new();
    let comment = format!("Astrolift workflow `{}` ({shape})", workflow.name);
    definition.insert("Comment".to_owned(), Value::String(comment));
    definition.extend(writer.chain(&steps));
    let definition = Value::Object(definition);
    let chars = definition.to_string().len();
    if chars > DEFINITION_MAX_CHARS {
        return Err(CompileError::TooLarge { chars });
    }
    Ok(StateMachine { definition, shape })
}

/// Refuses, before any graph work, a workflow whose stages alone cannot fit
/// in a definition: each `Task` is at least as long as one of a one-letter
/// stage with a one-digit timeout and no other option.
fn check_size_bound(workflow: &Workflow, queue_url: &str) -> Result<(), CompileError> {
    if workflow.stages.is_empty() {
        return Err(CompileError::NoStages);
    }
    let smallest = Stage {
        name: "a".to_owned(),
        timeout_seconds: 0,
        ..Stage::default()
    };
    let per_stage = task(&smallest, queue_url).to_string().len();
    let chars = per_stage.saturating_mul(workflow.stages.len());
    if chars > DEFINITION_MAX_CHARS {
        return Err(CompileError::TooLarge { chars });
    }
    Ok(())
}

/// The stages' dependency order: `above[a * n + b]` when `a` needs `b`,
/// directly or through other stages.
#[derive(Debug)]
struct Graph {
    count: usize,
    above: Vec<bool>,
    /// Stage indices, each after every stage it needs.
    topological: Vec<usize>,
    needs: Vec<Vec<usize>>,
}

impl Graph {
    fn new(stages: &[Stage]) -> Result<Self, CompileError> {
        let needs = need_indices(stages)?;
        let topological = topological_order(stages, &needs)?;
        let count = stages.len();
        let mut above = vec![false; count * count];
        for &stage in &topological {
            for &need in &needs[stage] {
                above[stage * count + need] = true;
                for other in 0..count {
                    if above[need * count + other] {
                        above[stage * count + other] = true;
                    }
                }
            }
        }
        Ok(Self {
            count,
            above,
            topological,
            needs,
        })
    }

    /// `a` needs `b`, directly or not.
    fn needs(&self, a: usize, b: usize) -> bool {
        self.above[a * self.count + b]
    }

    fn comparable(&self, a: usize, b: usize) -> bool {
        self.needs(a, b) || self.needs(b, a)
    }

    /// How many stages `a` needs, directly or not.
    fn depth(&self, a: usize) -> usize {
        (0..self.count).filter(|&b| self.needs(a, b)).count()
    }
}

/// Each stage's needs as indices, checking names on the way.
fn need_indices(stages: &[Stage]) -> Result<Vec<Vec<usize>>, CompileError> {
    let mut index = HashMap::with_capacity(stages.len());
    for (i, stage) in stages.iter().enumerate() {
        if !is_slug(&stage.name) {
            return Err(CompileError::InvalidStageName(stage.name.clone()));
        }
        if index.insert(stage.name.as_str(), i).is_some() {
            return Err(CompileError::DuplicateStage(stage.name.clone()));
        }
    }
    let resolve = |stage: &Stage, need: &String| {
        index
            .get(need.as_str())
            .copied()
            .ok_or_else(|| CompileError::UnknownNeed {
                stage: stage.name.clone(),
                need: need.clone(),
            })
    };
    stages
        .iter()
        .map(|stage| {
            stage
                .needs
                .iter()
                .map(|need| resolve(stage, need))
                .collect()
        })
        .collect()
}

/// Kahn's order, in file order among the stages ready at once.
fn topological_order(stages: &[Stage], needs: &[Vec<usize>]) -> Result<Vec<usize>, CompileError> {
    let mut waiting: Vec<usize> = needs.iter().map(Vec::len).collect();
    let mut needed_by = vec![Vec::new(); stages.len()];
    for (stage, list) in needs.iter().enumerate() {
        for &need in list {
            needed_by[need].push(stage);
        }
    }
    let mut order: Vec<usize> = (0..stages.len()).filter(|&s| waiting[s] == 0).collect();
    let mut next = 0;
    while let Some(&stage) = order.get(next) {
        next += 1;
        for &later in &needed_by[stage] {
            waiting[later] -= 1;
            if waiting[later] == 0 {
                order.push(later);
            }
        }
    }
    match (0..stages.len()).find(|&s| waiting[s] > 0) {
        Some(stuck) => Err(CompileError::Cycle(stages[stuck].name.clone())),
        None => Ok(order),
    }
}

/// One state of a chain: a stage's `Task`, or a `Parallel` of chains.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Stage(usize),
    Parallel(Vec<Vec<Step>>),
}

/// The chain that runs `set` (stage indices in file order) exactly, or
/// `None` when its order is not series-parallel. A set whose stages fall
/// into groups with no dependency between them is a `Parallel`; else, when
/// it falls into groups that depend on each other completely, the groups
/// run in sequence; a set that does neither holds an "N". At worst a cubic
/// number of comparisons in the stages, whose count the workflow stage
/// limit bounds (docs/reference.md §14).
fn series_parallel(graph: &Graph, set: &[usize]) -> Option<Vec<Step>> {
    if let [stage] = set {
        return Some(vec![Step::Stage(*stage)]);
    }
    let apart = groups(set, |a, b| graph.comparable(a, b));
    if apart.len() > 1 {
        let branches = apart.iter().map(|group| series_parallel(graph, group));
        return Some(vec![Step::Parallel(branches.collect::<Option<_>>()?)]);
    }
    let mut ordered = groups(set, |a, b| !graph.comparable(a, b));
    if ordered.len() == 1 {
        return None;
    }
    // Each stage of a later group needs every stage of an earlier one, so
    // it needs more stages than any of them.
    ordered.sort_by_cached_key(|group| graph.depth(group[0]));
    let mut chain = Vec::new();
    for group in &ordered {
        chain.extend(series_parallel(graph, group)?);
    }
    Some(chain)
}

/// The connected groups of `set` where `linked` joins two stages, each in
/// file order, the groups in the order of their first stage.
fn groups(set: &[usize], linked: impl Fn(usize, usize) -> bool) -> Vec<Vec<usize>> {
    let mut seen = vec![false; set.len()];
    let mut found = Vec::new();
    for start in 0..set.len() {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        let mut group = vec![start];
        let mut next = 0;
        while let Some(&at) = group.get(next) {
            next += 1;
            for other in 0..set.len() {
                if !seen[other] && linked(set[at], set[other]) {
                    seen[other] = true;
                    group.push(other);
                }
            }
        }
        group.sort_unstable();
        found.push(group.into_iter().map(|i| set[i]).collect());
    }
    found
}

/// One step per topological level: its stage, or a `Parallel` of them.
fn levels(graph: &Graph) -> Vec<Step> {
    let mut level = vec![0usize; graph.count];
    for &stage in &graph.topological {
        level[stage] = graph.needs[stage]
            .iter()
            .map(|&need| level[need] + 1)
            .max()
            .unwrap_or(0);
    }
    let deepest = level.iter().copied().max().unwrap_or(0);
    (0..=deepest)
        .map(|depth| {
            let stages: Vec<usize> = (0..graph.count).filter(|&s| level[s] == depth).collect();
            match stages.as_slice() {
                [only] => Step::Stage(*only),
                _ => Step::Parallel(stages.into_iter().map(|s| vec![Step::Stage(s)]).collect()),
            }
        })
        .collect()
}

/// Writes steps as ASL, numbering `Parallel` states in the order written.
struct Writer<'a> {
    stages: &'a [Stage],
    queue_url: &'a str,
    parallels: usize,
}

impl Writer<'_> {
    /// `StartAt` and `States` of `chain`, each state pointing to the next.
    fn chain(&mut self, chain: &[Step]) -> Map<String, Value> {
        let named: Vec<(String, Value)> = chain.iter().map(|step| self.state(step)).collect();
        let start = named
            .first()
            .map(|(name, _)| name.clone())
            .unwrap_or_default();
        let nexts: Vec<Option<String>> = named
            .iter()
            .skip(1)
            .map(|(name, _)| Some(name.clone()))
            .chain([None])
            .collect();
        let mut states = Map::new();
        for ((name, mut state), next) in named.into_iter().zip(nexts) {
            if let Value::Object(fields) = &mut state {
                match next {
                    Some(next) => fields.insert("Next".to_owned(), Value::String(next)),
                    None => fields.insert("End".to_owned(), Value::Bool(true)),
                };
            }
            states.insert(name, state);
        }
        let mut out = Map::new();
        out.insert("StartAt".to_owned(), Value::String(start));
        out.insert("States".to_owned(), Value::Object(states));
        out
    }

    fn state(&mut self, step: &Step) -> (String, Value) {
        match step {
            Step::Stage(index) => {
                let stage = &self.stages[*index];
                (stage.name.clone(), task(stage, self.queue_url))
            }
            Step::Parallel(branches) => {
                self.parallels += 1;
                let name = format!("Parallel_{}", self.parallels);
                let branches: Vec<Value> = branches
                    .iter()
                    .map(|branch| Value::Object(self.chain(branch)))
                    .collect();
                let state = json!({"Type": "Parallel", "Branches": branches, "ResultPath": null});
                (name, state)
            }
        }
    }
}

/// A stage's `Task` state, without `Next` or `End`.
fn task(stage: &Stage, queue_url: &str) -> Value {
    let mut state = json!({
        "Type": "Task",
        "Resource": STAGE_RESOURCE,
        "Parameters": {
            "QueueUrl": queue_url,
            "MessageBody": {
                "run_id.$": "$.run_id",
                "stage": stage.name,
                "task_token.$": "$$.Task.Token",
            },
        },
        "TimeoutSeconds": stage.timeout_seconds,
    });
    if let Value::Object(fields) = &mut state {
        if let Some(heartbeat) = stage.heartbeat_seconds {
            fields.insert("HeartbeatSeconds".to_owned(), json!(heartbeat));
        }
        if stage.retries > 0 {
            let retry = json!([{
                "ErrorEquals": RETRIED_ERRORS,
                "IntervalSeconds": RETRY_INTERVAL_SECONDS,
                "BackoffRate": RETRY_BACKOFF_RATE,
                "MaxAttempts": stage.retries,
            }]);
            fields.insert("Retry".to_owned(), retry);
        }
        fields.insert("ResultPath".to_owned(), Value::Null);
    }
    state
}

/// The state machine of `workflow` of `repository` at `content_hash`
/// (`sha256:<hex>` or bare hex): `<prefix><repository slug>-<workflow>-<8
/// hex>`, the slug and the workflow cut to fit [`NAME_MAX_CHARS`].
pub fn state_machine_name(
    prefix: &str,
    repository: &str,
    workflow: &str,
    content_hash: &str,
) -> Result<String, NameError> {
    check_prefix(prefix)?;
    let hash = name_hash(content_hash)?;
    // Two `-` and the hash are fixed; the slug and the workflow share the rest.
    let room = NAME_MAX_CHARS - prefix.len() - NAME_HASH_CHARS - 2;
    let (slug, workflow) = (name_part(repository), name_part(workflow));
    let (slug_room, workflow_room) = share(room, slug.len(), workflow.len());
    let slug = cut(&slug, slug_room);
    let workflow = cut(&workflow, workflow_room);
    Ok(format!("{prefix}{slug}-{workflow}-{hash}"))
}

/// A prefix of Step Functions' name characters that leaves room for a
/// character of the repository and of the workflow beside the hash.
pub fn check_prefix(prefix: &str) -> Result<(), NameError> {
    if !prefix.bytes().all(is_name_byte) {
        return Err(NameError::InvalidPrefix(prefix.to_owned()));
    }
    if prefix.len() + NAME_HASH_CHARS + 4 > NAME_MAX_CHARS {
        return Err(NameError::PrefixTooLong(prefix.to_owned()));
    }
    Ok(())
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// The first 8 hex digits of a content hash, lower-cased.
fn name_hash(content_hash: &str) -> Result<String, NameError> {
    let hex = content_hash.strip_prefix("sha256:").unwrap_or(content_hash);
    match hex.get(..NAME_HASH_CHARS) {
        Some(digits) if digits.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(digits.to_ascii_lowercase())
        }
        _ => Err(NameError::InvalidHash(content_hash.to_owned())),
    }
}

/// `text` in name characters: lower-cased, `/` as `_`, each other run of
/// characters outside the rule one `-`, no `-` at either end.
fn name_part(text: &str) -> String {
    let mut part = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            'a'..='z' | '0'..='9' | '-' | '_' => part.push(c),
            'A'..='Z' => part.push(c.to_ascii_lowercase()),
            '/' => part.push('_'),
            _ if !part.ends_with('-') => part.push('-'),
            _ => {}
        }
    }
    part.trim_matches('-').to_owned()
}

/// How `room` characters go to two parts of `a` and `b`: each its own
/// length when both fit, else the shorter keeps up to half and the longer
/// takes the rest.
fn share(room: usize, a: usize, b: usize) -> (usize, usize) {
    if a + b <= room {
        return (a, b);
    }
    let half = room / 2;
    if a <= half {
        (a, room - a)
    } else if b <= half {
        (room - b, b)
    } else {
        (room - half, half)
    }
}

/// The first `room` characters of an ASCII `part`, without a trailing `-`
/// or `_` that the cut left.
fn cut(part: &str, room: usize) -> &str {
    let cut = part.get(..room).unwrap_or(part);
    match cut.trim_end_matches(['-', '_']) {
        "" => cut,
        trimmed => trimmed,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const QUEUE: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/stages";

    /// A workflow of `(stage, needs)`, in that order.
    fn workflow(stages: &[(&str, &[&str])]) -> Workflow {
        let stages = stages
            .iter()
            .map(|(name, needs)| Stage {
                name: (*name).to_owned(),
                agent: "solo".to_owned(),
                needs: needs.iter().map(|n| (*n).to_owned()).collect(),
                ..Stage::default()
            })
            .collect();
        Workflow {
            path: "workflows/w.toml".to_owned(),
            name: "w".to_owned(),
            description: None,
            stages,
        }
    }

    fn compiled(stages: &[(&str, &[&str])]) -> StateMachine {
        match compile(&workflow(stages), QUEUE) {
            Ok(machine) => machine,
            Err(error) => panic!("{error}"),
        }
    }

    /// The definition as an outline: a chain `[a, b]`, a `Parallel`
    /// `{x | y}` of its branches, each state's name before its `Next`.
    fn outline(machine: &Map<String, Value>) -> String {
        let states = &machine["States"];
        let mut at = machine["StartAt"].as_str().map(str::to_owned);
        let mut parts = Vec::new();
        while let Some(name) = at {
            let state = &states[&name];
            parts.push(match state["Type"].as_str() {
                Some("Parallel") => {
                    let branches = state["Branches"].as_array().cloned().unwrap_or_default();
                    let inner: Vec<String> = branches
                        .iter()
                        .filter_map(Value::as_object)
                        .map(outline)
                        .collect();
                    format!("{{{}}}", inner.join(" | "))
                }
                _ => name.clone(),
            });
            at = state["Next"].as_str().map(str::to_owned);
        }
        parts.join(", ")
    }

    fn outline_of(machine: &StateMachine) -> String {
        outline(machine.definition.as_object().expect("an object"))
    }

    #[test]
    fn a_chain_is_a_sequence_of_tasks() {
        let machine = compiled(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]);
        assert_eq!(machine.shape, Shape::SeriesParallel);
        assert_eq!(outline_of(&machine), "a, b, c");
        let states = &machine.definition["States"];
        assert_eq!(states["a"]["Next"], "b");
        assert_eq!(states["c"]["End"], true);
        assert!(states["c"].get("Next").is_none());
    }

    #[test]
    fn a_diamond_is_a_parallel_between_two_tasks() {
        let machine = compiled(&[
            ("collect", &[]),
            ("label", &["collect"]),
            ("lint", &["collect"]),
            ("report", &["label", "lint"]),
        ]);
        assert_eq!(machine.shape, Shape::SeriesParallel);
        assert_eq!(outline_of(&machine), "collect, {label | lint}, report");
        assert_eq!(machine.definition["States"]["Parallel_1"]["Next"], "report");
        assert_eq!(
            machine.definition["States"]["Parallel_1"]["ResultPath"],
            Value::Null
        );
    }

    #[test]
    fn a_need_written_twice_or_through_another_stage_changes_nothing() {
        let direct = compiled(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]);
        let transitive = compiled(&[("a", &[]), ("b", &["a", "a"]), ("c", &["b", "a"])]);
        assert_eq!(direct, transitive);
    }

    #[test]
    fn a_wide_fan_out_is_one_parallel() {
        let names: Vec<String> = (0..32).map(|i| format!("s{i}")).collect();
        let mut stages: Vec<(&str, &[&str])> = vec![("start", &[])];
        let start: &[&str] = &["start"];
        stages.extend(names.iter().map(|n| (n.as_str(), start)));
        let machine = compiled(&stages);
        assert_eq!(machine.shape, Shape::SeriesParallel);
        let branches = &machine.definition["States"]["Parallel_1"]["Branches"];
        assert_eq!(branches.as_array().map(Vec::len), Some(32));
        assert_eq!(branches[0]["StartAt"], "s0");
        assert_eq!(branches[31]["StartAt"], "s31");
        assert_eq!(machine.definition["States"]["Parallel_1"]["End"], true);
    }

    #[test]
    fn independent_stages_at_the_top_are_a_parallel() {
        let machine = compiled(&[("a", &[]), ("b", &[])]);
        assert_eq!(outline_of(&machine), "{a | b}");
        let machine = compiled(&[("only", &[])]);
        assert_eq!(outline_of(&machine), "only");
    }

    #[test]
    fn parallels_nest_and_are_numbered_in_the_order_written() {
        // a → {b → {c | d} → e | f} → g
        let machine = compiled(&[
            ("a", &[]),
            ("b", &["a"]),
            ("c", &["b"]),
            ("d", &["b"]),
            ("e", &["c", "d"]),
            ("f", &["a"]),
            ("g", &["e", "f"]),
        ]);
        assert_eq!(machine.shape, Shape::SeriesParallel);
        assert_eq!(outline_of(&machine), "a, {b, {c | d}, e | f}, g");
        let outer = &machine.definition["States"]["Parallel_1"];
        assert_eq!(outer["Branches"][0]["States"]["Parallel_2"]["Next"], "e");
    }

    #[test]
    fn an_n_compiles_by_levels() {
        // c needs a and b, d needs b: no nesting of Parallel states says that.
        let machine = compiled(&[("a", &[]), ("b", &[]), ("c", &["a", "b"]), ("d", &["b"])]);
        assert_eq!(machine.shape, Shape::Levels);
        assert_eq!(outline_of(&machine), "{a | b}, {c | d}");
    }

    #[test]
    fn levels_run_a_lone_stage_without_a_parallel() {
        let machine = compiled(&[
            ("a", &[]),
            ("b", &[]),
            ("c", &["a", "b"]),
            ("d", &["b"]),
            ("e", &["c", "d"]),
        ]);
        assert_eq!(machine.shape, Shape::Levels);
        assert_eq!(outline_of(&machine), "{a | b}, {c | d}, e");
    }

    #[test]
    fn an_n_inside_a_series_parallel_graph_compiles_by_levels() {
        let machine = compiled(&[
            ("start", &[]),
            ("a", &["start"]),
            ("b", &["start"]),
            ("c", &["a", "b"]),
            ("d", &["b"]),
        ]);
        assert_eq!(machine.shape, Shape::Levels);
        assert_eq!(outline_of(&machine), "start, {a | b}, {c | d}");
    }

    #[test]
    fn sixty_four_stages_compile_both_ways() {
        let names: Vec<String> = (0..64).map(|i| format!("s{i}")).collect();
        let needs: Vec<Vec<&str>> = (0..64)
            .map(|i| {
                if i == 0 {
                    vec![]
                } else {
                    vec![names[i - 1].as_str()]
                }
            })
            .collect();
        let chain: Vec<(&str, &[&str])> = names
            .iter()
            .zip(&needs)
            .map(|(n, needs)| (n.as_str(), needs.as_slice()))
            .collect();
        let machine = compiled(&chain);
        assert_eq!(machine.shape, Shape::SeriesParallel);
        assert_eq!(
            machine.definition["States"].as_object().map(Map::len),
            Some(64)
        );

        // Eight levels of eight, each stage needing every stage of the level
        // before but one: not series-parallel.
        let grid: Vec<Vec<&str>> = (0..64)
            .map(|i| {
                let (level, slot) = (i / 8, i % 8);
                if level == 0 {
                    return vec![];
                }
                let before = (level - 1) * 8;
                (0..8)
                    .filter(|&k| k != (slot + 1) % 8)
                    .map(|k| names[before + k].as_str())
                    .collect()
            })
            .collect();
        let stages: Vec<(&str, &[&str])> = names
            .iter()
            .zip(&grid)
            .map(|(n, needs)| (n.as_str(), needs.as_slice()))
            .collect();
        let machine = compiled(&stages);
        assert_eq!(machine.shape, Shape::Levels);
        let states = machine.definition["States"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(states.len(), 8);
        let widths: Vec<usize> = states
            .values()
            .filter_map(|s| s["Branches"].as_array().map(Vec::len))
            .collect();
        assert_eq!(widths, [8; 8]);
    }

    #[test]
    fn the_same_workflow_compiles_to_the_same_bytes() {
        let stages: &[(&str, &[&str])] = &[
            ("a", &[]),
            ("b", &[]),
            ("c", &["a", "b"]),
            ("d", &["b"]),
            ("e", &["c"]),
        ];
        let first = compiled(stages).definition.to_string();
        for _ in 0..8 {
            assert_eq!(compiled(stages).definition.to_string(), first);
        }
        let again = compiled(&[("a", &[]), ("b", &["a"])])
            .definition
            .to_string();
        assert_eq!(
            again,
            compiled(&[("a", &[]), ("b", &["a"])])
                .definition
                .to_string()
        );
    }

    #[test]
    fn a_task_sends_the_run_and_its_token_and_keeps_the_input() {
        let mut flow = workflow(&[("collect", &[])]);
        flow.stages[0].timeout_seconds = 3_600;
        flow.stages[0].heartbeat_seconds = Some(300);
        flow.stages[0].retries = 3;
        let machine = compile(&flow, QUEUE).expect("compiles");
        assert_eq!(
            machine.definition,
            json!({
                "Comment": "Astrolift workflow `w` (series-parallel)",
                "StartAt": "collect",
                "States": {"collect": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                    "Parameters": {
                        "QueueUrl": QUEUE,
                        "MessageBody": {
                            "run_id.$": "$.run_id",
                            "stage": "collect",
                            "task_token.$": "$$.Task.Token"
                        }
                    },
                    "TimeoutSeconds": 3600,
                    "HeartbeatSeconds": 300,
                    "Retry": [{
                        "ErrorEquals": ["States.TaskFailed", "States.Timeout"],
                        "IntervalSeconds": 30,
                        "BackoffRate": 2.0,
                        "MaxAttempts": 3
                    }],
                    "ResultPath": null,
                    "End": true
                }}
            })
        );
    }

    #[test]
    fn a_task_without_options_has_the_default_timeout_and_no_retry() {
        let machine = compiled(&[("collect", &[])]);
        let task = &machine.definition["States"]["collect"];
        assert_eq!(task["TimeoutSeconds"], 86_400);
        assert!(task.get("HeartbeatSeconds").is_none());
        assert!(task.get("Retry").is_none());
    }

    #[test]
    fn a_workflow_that_validation_refuses_does_not_compile() {
        let compile_of = |stages: &[(&str, &[&str])]| compile(&workflow(stages), QUEUE).err();
        assert_eq!(compile_of(&[]), Some(CompileError::NoStages));
        assert_eq!(
            compile_of(&[("a", &[]), ("a", &[])]),
            Some(CompileError::DuplicateStage("a".to_owned()))
        );
        assert_eq!(
            compile_of(&[("Parallel_1", &[])]),
            Some(CompileError::InvalidStageName("Parallel_1".to_owned()))
        );
        assert_eq!(
            compile_of(&[("a", &["z"])]),
            Some(CompileError::UnknownNeed {
                stage: "a".to_owned(),
                need: "z".to_owned()
            })
        );
        assert_eq!(
            compile_of(&[("a", &[]), ("b", &["c"]), ("c", &["b"])]),
            Some(CompileError::Cycle("b".to_owned()))
        );
    }

    #[test]
    fn a_definition_past_the_limit_is_refused_before_the_graph_is_read() {
        let names: Vec<String> = (0..4_000).map(|i| format!("s{i}")).collect();
        let stages: Vec<(&str, &[&str])> = names.iter().map(|n| (n.as_str(), &[][..])).collect();
        let error = compile(&workflow(&stages), QUEUE).err();
        assert!(
            matches!(error, Some(CompileError::TooLarge { .. })),
            "{error:?}"
        );
    }

    #[test]
    fn shapes_print_as_the_plan_says_them() {
        assert_eq!(Shape::SeriesParallel.to_string(), "series-parallel");
        assert_eq!(json!(Shape::Levels), json!("levels"));
    }

    /// Every (earlier, later) pair of stages the machine runs in that
    /// order: of two states of one chain, each stage in the first before
    /// each stage in the second. Also every stage, in the order written.
    fn runs_before(
        chain: &Map<String, Value>,
        order: &mut BTreeSet<(String, String)>,
    ) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        let mut at = chain["StartAt"].as_str().map(str::to_owned);
        while let Some(name) = at {
            let state = &chain["States"][&name];
            let inside = match state["Branches"].as_array() {
                Some(branches) => branches
                    .iter()
                    .filter_map(Value::as_object)
                    .flat_map(|branch| runs_before(branch, order))
                    .collect(),
                None => vec![name.clone()],
            };
            for earlier in &seen {
                order.extend(inside.iter().map(|later| (earlier.clone(), later.clone())));
            }
            seen.extend(inside);
            at = state["Next"].as_str().map(str::to_owned);
        }
        seen
    }

    /// Four stages whose order is exactly a < c, b < c, b < d.
    fn has_n(closure: &BTreeSet<(String, String)>, names: &[String]) -> bool {
        let lt = |x: &String, y: &String| closure.contains(&(x.clone(), y.clone()));
        let apart = |x: &String, y: &String| !lt(x, y) && !lt(y, x);
        let quads = names.iter().flat_map(|a| {
            names.iter().flat_map(move |b| {
                names
                    .iter()
                    .flat_map(move |c| names.iter().map(move |d| (a, b, c, d)))
            })
        });
        quads.into_iter().any(|(a, b, c, d)| {
            lt(a, c) && lt(b, c) && lt(b, d) && apart(a, d) && apart(a, b) && apart(c, d)
        })
    }

    proptest::proptest! {
        #[test]
        fn no_stage_runs_before_its_needs_and_series_parallel_adds_no_wait(
            edges in proptest::collection::vec(proptest::bool::weighted(0.35), 28),
            count in 1usize..=8,
        ) {
            let names: Vec<String> = (0..count).map(|i| format!("s{i}")).collect();
            // Stage i may need any stage before it: edge (i, j) for j < i.
            let needs: Vec<Vec<&str>> = (0..count)
                .map(|i| (0..i).filter(|j| edges[i * (i - 1) / 2 + j]).map(|j| names[j].as_str()).collect())
                .collect();
            let stages: Vec<(&str, &[&str])> =
                names.iter().zip(&needs).map(|(n, needs)| (n.as_str(), needs.as_slice())).collect();
            let machine = compiled(&stages);
            let mut closure = BTreeSet::new();
            for (i, list) in needs.iter().enumerate() {
                for need in list {
                    closure.insert(((*need).to_owned(), names[i].clone()));
                }
            }
            for _ in 0..count {
                let pairs: Vec<(String, String)> = closure.iter().cloned().collect();
                for (a, b) in &pairs {
                    for (c, d) in &pairs {
                        if b == c {
                            closure.insert((a.clone(), d.clone()));
                        }
                    }
                }
            }
            let mut order = BTreeSet::new();
            let definition = machine.definition.as_object().cloned().unwrap_or_default();
            let mut ran = runs_before(&definition, &mut order);
            ran.sort();
            let mut all = names.clone();
            all.sort();
            proptest::prop_assert_eq!(ran, all);
            proptest::prop_assert!(closure.is_subset(&order));
            proptest::prop_assert_eq!(machine.shape == Shape::Levels, has_n(&closure, &names));
            if machine.shape == Shape::SeriesParallel {
                proptest::prop_assert_eq!(order, closure);
            }
        }
    }

    const HASH: &str = "sha256:1A2b3c4d5e6f";

    fn name(prefix: &str, repository: &str, workflow: &str) -> String {
        state_machine_name(prefix, repository, workflow, HASH).expect("a name")
    }

    #[test]
    fn a_name_is_prefix_repository_workflow_and_hash() {
        assert_eq!(
            name("astrolift-", "Acme/ops.tools", "triage"),
            "astrolift-acme_ops-tools-triage-1a2b3c4d"
        );
        assert_eq!(name("", "acme/x", "w"), "acme_x-w-1a2b3c4d");
        let bare = state_machine_name("p-", "a/b", "w", "0123456789abcdef");
        assert_eq!(bare.as_deref(), Ok("p-a_b-w-01234567"));
    }

    #[test]
    fn a_long_name_cuts_the_repository_and_the_workflow_never_the_hash() {
        let repository = format!("acme/{}", "r".repeat(100));
        let workflow = "w".repeat(64);
        let long = name("astrolift-", &repository, &workflow);
        assert_eq!(long.len(), NAME_MAX_CHARS);
        assert!(long.starts_with("astrolift-acme_rrr"));
        assert!(long.ends_with(&format!("r-{}-1a2b3c4d", "w".repeat(30))));

        // A short workflow keeps all of itself; the repository takes the rest.
        let short = name("astrolift-", &repository, "triage");
        assert_eq!(short.len(), NAME_MAX_CHARS);
        assert!(short.ends_with("r-triage-1a2b3c4d"));

        // A cut that ends on a separator drops it.
        let repository = format!("{}/tools", "o".repeat(29));
        let cut = name("astrolift-", &repository, &"w".repeat(64));
        assert!(cut.starts_with(&format!("astrolift-{}-w", "o".repeat(29))));
        assert!(cut.len() <= NAME_MAX_CHARS);
    }

    #[test]
    fn every_name_keeps_to_the_rule() {
        for (repository, workflow) in [
            ("Acme Corp/ünïcode repo", "triage"),
            ("a/b", "--"),
            ("//", "x"),
            ("a/b", &"x".repeat(500)),
        ] {
            let name = name("astro_", repository, workflow);
            assert!(name.len() <= NAME_MAX_CHARS, "{name}");
            assert!(name.bytes().all(is_name_byte), "{name}");
            assert!(name.ends_with("-1a2b3c4d"), "{name}");
        }
    }

    #[test]
    fn a_bad_prefix_or_hash_is_refused() {
        let too_long = "p".repeat(NAME_MAX_CHARS - NAME_HASH_CHARS - 3);
        let longest = "p".repeat(NAME_MAX_CHARS - NAME_HASH_CHARS - 4);
        assert_eq!(
            state_machine_name(&too_long, "a/b", "w", HASH),
            Err(NameError::PrefixTooLong(too_long.clone()))
        );
        let at_most = state_machine_name(&longest, "acme/tools", "triage", HASH);
        assert_eq!(at_most.as_deref().map(str::len), Ok(NAME_MAX_CHARS));
        assert_eq!(
            check_prefix("astro/lift-"),
            Err(NameError::InvalidPrefix("astro/lift-".to_owned()))
        );
        for hash in ["sha256:1a2b3c", "sha256:xyz12345", "", "sha256:1a2b3c4é"] {
            assert_eq!(
                state_machine_name("p-", "a/b", "w", hash),
                Err(NameError::InvalidHash(hash.to_owned()))
            );
        }
    }
}
