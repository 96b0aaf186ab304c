//! What the two graph formats (Langflow, Flowise) share: a draft of typed
//! nodes and edges, assembled into an [`AgentSet`].
//!
//! - Agent nodes become agents. A graph with none becomes one agent.
//! - A prompt node belongs to the agents it reaches through non-agent nodes:
//!   into a system field (or an agent with no instructions yet) it is
//!   instructions (the brief), otherwise a skill. A prompt that reaches no
//!   agent is a loose prompt: a skill of the first agent.
//! - A tool node belongs to every agent it reaches (the first agent if
//!   none).
//! - Agent A runs before agent B when B is reachable from A through
//!   non-agent nodes: those are the workflow's edges.

use std::collections::{HashSet, VecDeque};

use astrolift_manifest::Diagnostic;

use crate::model::{AgentSet, ImportedAgent, Instruction, SlugAllocator, Tool, slugify};

/// What a node is, for assembly. Gaps for models, memory and the like are
/// emitted by the format module; here such nodes only pass edges through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// An agent (or a chain or model node with its own prompt).
    Agent,
    /// A prompt template.
    Prompt,
    /// A tool; the node's [`Node::tools`] holds it.
    Tool,
    /// Anything else (inputs, outputs, models, memory, ...).
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: String,
    pub title: String,
    pub role: Role,
    /// The node's own prompt texts (system prompt, instructions, template).
    pub texts: Vec<Instruction>,
    /// An agent node's prompts that are not its instructions (an agentflow's
    /// user message): skills of its agent, or its brief when it has no
    /// instructions (docs/import.md).
    pub prompts: Vec<Instruction>,
    /// Tools the node is or names.
    pub tools: Vec<Tool>,
    /// The node's position in the source.
    pub span: astrolift_manifest::Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    /// The input of `to` the edge feeds, when the format says.
    pub field: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Draft {
    pub name: String,
    pub description: Option<String>,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub gaps: Vec<Diagnostic>,
}

/// A field that carries an agent's own instructions.
pub fn is_system_field(field: &str) -> bool {
    let field = field.to_ascii_lowercase();
    field.contains("system") || field.contains("instruction")
}

/// The draft as an agent set named `name`.
pub fn assemble(draft: Draft, name: String) -> AgentSet {
    let agent_nodes: Vec<usize> = (0..draft.nodes.len())
        .filter(|&i| draft.nodes[i].role == Role::Agent)
        .collect();
    let mut set = AgentSet {
        name: name.clone(),
        description: draft.description.clone(),
        gaps: draft.gaps.clone(),
        ..AgentSet::default()
    };
    if agent_nodes.is_empty() {
        set.agents.push(single_agent(&draft, name));
        return set;
    }
    let mut slugs = SlugAllocator::default();
    for &i in &agent_nodes {
        let node = &draft.nodes[i];
        let slug = slugs.allocate(&slugify(&node.title, "agent"));
        let (instructions, prompts) = if node.texts.is_empty() {
            (node.prompts.clone(), Vec::new())
        } else {
            (node.texts.clone(), node.prompts.clone())
        };
        set.agents.push(ImportedAgent {
            slug,
            title: node.title.clone(),
            instructions,
            prompts,
            tools: node.tools.clone(),
            span: Some(node.span),
            ..ImportedAgent::default()
        });
    }
    // Node index to agent index, by table: looked up once per reached agent.
    let mut agent_index = vec![None; draft.nodes.len()];
    for (a, &node) in agent_nodes.iter().enumerate() {
        agent_index[node] = Some(a);
    }
    let agent_of = |node: usize| agent_index.get(node).copied().flatten();
    let mut outgoing: Vec<Vec<&Edge>> = vec![Vec::new(); draft.nodes.len()];
    for edge in &draft.edges {
        if let Some(list) = outgoing.get_mut(edge.from) {
            list.push(edge);
        }
    }
    // Prompts into system fields first, so "an agent with no instructions
    // yet" below means one with no system prompt at all.
    let mut prompt_targets: Vec<(usize, Vec<Reached>)> = Vec::new();
    for (i, node) in draft.nodes.iter().enumerate() {
        if matches!(node.role, Role::Prompt | Role::Tool) {
            prompt_targets.push((i, reached_agents(&draft, &outgoing, i)));
        }
    }
    for system_pass in [true, false] {
        for (i, targets) in &prompt_targets {
            let node = &draft.nodes[*i];
            if node.role != Role::Prompt {
                continue;
            }
            if targets.is_empty() {
                if !system_pass {
                    set.loose_prompts.extend(node.texts.iter().cloned());
                }
                continue;
            }
            for (target, field) in targets {
                let Some(agent) = agent_of(*target).and_then(|a| set.agents.get_mut(a)) else {
                    continue;
                };
                let system = field.as_deref().is_some_and(is_system_field);
                if system_pass && system {
                    agent.instructions.extend(node.texts.iter().cloned());
                } else if !system_pass && !system {
                    if agent.instructions.is_empty() {
                        agent.instructions.extend(node.texts.iter().cloned());
                    } else {
                        agent.prompts.extend(node.texts.iter().cloned());
                    }
                }
            }
        }
    }
    for (i, targets) in &prompt_targets {
        let node = &draft.nodes[*i];
        if node.role != Role::Tool {
            continue;
        }
        let agents: Vec<usize> = if targets.is_empty() {
            vec![0]
        } else {
            targets.iter().filter_map(|(t, _)| agent_of(*t)).collect()
        };
        for a in agents {
            if let Some(agent) = set.agents.get_mut(a) {
                for tool in &node.tools {
                    if !agent.tools.iter().any(|t| t.slug == tool.slug) {
                        agent.tools.push(tool.clone());
                    }
                }
            }
        }
    }
    let mut edges_seen = HashSet::new();
    for (from_index, &from) in agent_nodes.iter().enumerate() {
        for (to, _) in reached_agents(&draft, &outgoing, from) {
            if let Some(to_index) = agent_of(to)
                && to_index != from_index
                && edges_seen.insert((from_index, to_index))
            {
                set.edges.push((from_index, to_index));
            }
        }
    }
    set
}

/// A graph with no agent node: one agent with every prompt as its brief.
fn single_agent(draft: &Draft, name: String) -> ImportedAgent {
    let mut agent = ImportedAgent {
        slug: name.clone(),
        title: name,
        ..ImportedAgent::default()
    };
    for node in &draft.nodes {
        agent.instructions.extend(node.texts.iter().cloned());
        agent.prompts.extend(node.prompts.iter().cloned());
        for tool in &node.tools {
            if !agent.tools.iter().any(|t| t.slug == tool.slug) {
                agent.tools.push(tool.clone());
            }
        }
    }
    agent
}

/// An agent node reached, with the field of the edge that reached it.
type Reached = (usize, Option<String>);

/// The agent nodes reachable from `start` through non-agent nodes, each with
/// the field of the edge that reached it.
fn reached_agents(draft: &Draft, outgoing: &[Vec<&Edge>], start: usize) -> Vec<Reached> {
    let mut seen = vec![false; draft.nodes.len()];
    let mut queue = VecDeque::from([start]);
    let mut found: Vec<Reached> = Vec::new();
    if let Some(s) = seen.get_mut(start) {
        *s = true;
    }
    while let Some(node) = queue.pop_front() {
        for edge in outgoing.get(node).into_iter().flatten() {
            let Some(target) = draft.nodes.get(edge.to) else {
                continue;
            };
            if target.role == Role::Agent {
                if !found.iter().any(|(t, _)| *t == edge.to) {
                    found.push((edge.to, edge.field.clone()));
                }
            } else if !std::mem::replace(&mut seen[edge.to], true) {
                queue.push_back(edge.to);
            }
        }
    }
    found
}

/// The set's name: `--name`, else the source's own name, else the file
/// name without its extension, as a slug.
pub fn set_name(option: Option<&str>, source_name: Option<&str>, path: &str) -> String {
    if let Some(name) = option {
        return name.to_owned();
    }
    if let Some(name) = source_name.filter(|n| !n.trim().is_empty()) {
        return slugify(name, "imported");
    }
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    slugify(stem, "imported")
}

/// A gap about a node or field of a JSON source.
pub fn gap(
    code: &astrolift_manifest::Code,
    source: &crate::json::JsonSource<'_>,
    pointer: &str,
    message: String,
) -> Diagnostic {
    Diagnostic::new(code, &source.path, source.span(pointer), message)
}

/// Keeps strings short and on one line in gap messages.
pub fn short(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 60 {
        line.chars().take(57).collect::<String>() + "..."
    } else {
        line
    }
}

/// A node's id: its `id`, else its `data.id` (both formats).
pub fn node_id(node: &serde_json::Value) -> String {
    node.get("id")
        .or_else(|| node.pointer("/data/id"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The edges whose `source` and `target` are ids of `ids` (others name no
/// node and are skipped), with the input each feeds.
pub fn edges_between(
    edges: &[serde_json::Value],
    ids: &[String],
    field: impl Fn(&serde_json::Value) -> Option<String>,
) -> Vec<Edge> {
    let positions: std::collections::HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .rev() // the first node of a duplicated id wins
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let index = |edge: &serde_json::Value, end: &str| {
        let id = edge.get(end).and_then(serde_json::Value::as_str)?;
        positions.get(id).copied()
    };
    edges
        .iter()
        .filter_map(|edge| {
            Some(Edge {
                from: index(edge, "source")?,
                to: index(edge, "target")?,
                field: field(edge),
            })
        })
        .collect()
}

/// The `nodes` and `edges` arrays of `container` (edges may be absent), or
/// the reason the export is not of the `expected` format.
pub fn node_and_edge_arrays<'v>(
    container: &'v serde_json::Map<String, serde_json::Value>,
    at: &str,
    wrong: impl Fn(String) -> crate::ImportError,
) -> Result<(&'v [serde_json::Value], &'v [serde_json::Value]), crate::ImportError> {
    let nodes = container
        .get("nodes")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| wrong(format!("`{at}nodes` is missing or not an array")))?;
    let edges = match container.get("edges") {
        None => &[][..],
        Some(serde_json::Value::Array(edges)) => edges.as_slice(),
        Some(_) => return Err(wrong(format!("`{at}edges` is not an array"))),
    };
    Ok((nodes, edges))
}

/// Finishes a graph import: the source's description and name, assembly,
/// and the layout in the mode asked for (or by agent count).
pub fn render(
    mut draft: Draft,
    source: &crate::json::JsonSource<'_>,
    options: &crate::Options,
) -> crate::Imported {
    let text = |key: &str| source.value.get(key).and_then(serde_json::Value::as_str);
    draft.description = text("description").map(str::to_owned);
    let name = set_name(options.name.as_deref(), text("name"), &source.path);
    let set = assemble(draft, name);
    let mode = crate::effective_mode(options, set.agents.len());
    crate::layout::render(set, mode, options, &source.path)
}

/// Refuses graphs over the node or edge limit: assembly walks the graph once
/// per prompt and tool node, so its size bounds the work.
pub fn check_size(
    source: &crate::json::JsonSource<'_>,
    nodes: &[serde_json::Value],
    edges: &[serde_json::Value],
    limits: &crate::ImportLimits,
) -> Result<(), crate::ImportError> {
    if nodes.len() > limits.graph_nodes || edges.len() > limits.graph_edges {
        return Err(crate::ImportError::TooManyNodes {
            path: source.path.clone(),
            nodes: nodes.len(),
            edges: edges.len(),
            max_nodes: limits.graph_nodes,
            max_edges: limits.graph_edges,
        });
    }
    Ok(())
}
