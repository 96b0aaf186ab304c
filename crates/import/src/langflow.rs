//! Langflow flow exports (JSON): `{name, description, data: {nodes, edges}}`.
//!
//! A node is `data.nodes[i]` with its component at `.data` (`type`, `id`)
//! and `.data.node` (`display_name`, `description`, `edited`, `tool_mode`,
//! and `template`: one object per field with `type`, `value`, `password`,
//! `load_from_db`). An edge has `source`, `target` and
//! `data.targetHandle.fieldName`, the input it feeds.
//!
//! Mapping: `Agent` components (and model components with a
//! `system_message`) are agents; `Prompt` components are prompts; nodes fed
//! into a `tools` input or in tool mode are tools; every prompt-like string
//! field of any node is kept. Models, memory, vector stores, document
//! loaders, edited (custom code) components, secret fields and every other
//! component are gaps at the node or field.

use std::collections::HashSet;

use serde_json::{Map, Value};

use astrolift_manifest::import_codes as codes;

use crate::graph::{self, Draft, Node, Role, gap, short};
use crate::json::{JsonSource, escape_token};
use crate::model::{Instruction, Tool, slugify};
use crate::{ImportError, Imported, Options, SourceFile};

/// Imports one Langflow flow export.
pub fn import(file: SourceFile<'_>, options: &Options) -> Result<Imported, ImportError> {
    let source = JsonSource::parse(file.path, file.bytes)?;
    let (nodes, edges) = graph_arrays(&source)?;
    graph::check_size(&source, nodes, edges, &options.limits)?;
    let mut draft = Draft::default();
    let ids: Vec<String> = nodes.iter().map(graph::node_id).collect();
    let tool_sources = tool_sources(edges);
    let model_sources = model_sources(edges);
    for (i, node) in nodes.iter().enumerate() {
        let pointer = format!("/data/nodes/{i}");
        let role_hint = Hint {
            feeds_tools: tool_sources.contains(&ids[i]),
            feeds_model: model_sources.contains(&ids[i]),
        };
        let node = read_node(&source, node, &pointer, &ids[i], role_hint, &mut draft.gaps);
        draft.nodes.push(node);
    }
    draft.edges = graph::edges_between(edges, &ids, |e| target_field(e).map(str::to_owned));
    Ok(graph::render(draft, &source, options))
}

/// `data.nodes` and `data.edges`, or why this is not a Langflow flow.
fn graph_arrays<'v>(source: &'v JsonSource<'_>) -> Result<(&'v [Value], &'v [Value]), ImportError> {
    let wrong = |reason: &str| ImportError::WrongFormat {
        path: source.path.clone(),
        expected: "Langflow",
        reason: reason.to_owned(),
    };
    let Some(root) = source.value.as_object() else {
        return Err(wrong("the top level is not a JSON object"));
    };
    if root.get("nodes").is_some_and(Value::is_array) && root.get("data").is_none() {
        return Err(wrong(
            "it has a top-level `nodes` array, as Flowise exports do; use `--from flowise`",
        ));
    }
    if root.get("flows").is_some_and(Value::is_array) {
        return Err(wrong(
            "it is a project of several flows; export the one flow to import",
        ));
    }
    let data = root
        .get("data")
        .and_then(Value::as_object)
        .ok_or_else(|| wrong("it has no `data` object with the flow's `nodes` and `edges`"))?;
    graph::node_and_edge_arrays(data, "data.", |reason| wrong(&reason))
}

fn target_field(edge: &Value) -> Option<&str> {
    edge.pointer("/data/targetHandle/fieldName")
        .and_then(Value::as_str)
}

/// Ids of nodes whose output feeds a `tools` input.
fn tool_sources(edges: &[Value]) -> HashSet<String> {
    sources_into(edges, |field| field == "tools")
}

/// Ids of nodes whose output feeds an agent's model input (a model node
/// wired into an Agent is a model, not an agent of its own).
fn model_sources(edges: &[Value]) -> HashSet<String> {
    sources_into(edges, |field| {
        matches!(field, "agent_llm" | "llm" | "model")
    })
}

fn sources_into(edges: &[Value], field: impl Fn(&str) -> bool) -> HashSet<String> {
    edges
        .iter()
        .filter(|e| target_field(e).is_some_and(&field))
        .filter_map(|e| e.get("source").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

#[derive(Debug, Clone, Copy)]
struct Hint {
    feeds_tools: bool,
    feeds_model: bool,
}

/// Component types that are the flow's input and output: they map to the
/// dispatch input and the callback result, so they are no gap.
const IO_TYPES: &[&str] = &["ChatInput", "ChatOutput", "TextInput", "TextOutput"];

const VECTOR_WORDS: &[&str] = &[
    "vector",
    "astradb",
    "chroma",
    "faiss",
    "pinecone",
    "qdrant",
    "weaviate",
    "milvus",
    "pgvector",
    "embedding",
    "retriever",
    "elasticsearch",
    "opensearch",
    "couchbase",
    "mongodbatlas",
];
const LOADER_WORDS: &[&str] = &[
    "file",
    "directory",
    "loader",
    "splitter",
    "splittext",
    "pdf",
];

fn read_node(
    source: &JsonSource<'_>,
    node: &Value,
    pointer: &str,
    id: &str,
    hint: Hint,
    gaps: &mut Vec<Diagnostic>,
) -> Node {
    let component = node.get("data");
    let kind = component
        .and_then(|c| c.get("type"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let body = component.and_then(|c| c.get("node"));
    let title = body
        .and_then(|b| b.get("display_name"))
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or(if kind.is_empty() { id } else { kind })
        .to_owned();
    let empty = Map::new();
    let template = body
        .and_then(|b| b.get("template"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let template_pointer = format!("{pointer}/data/node/template");
    let mut result = Node {
        id: id.to_owned(),
        title: title.clone(),
        role: Role::Other,
        texts: Vec::new(),
        prompts: Vec::new(),
        tools: Vec::new(),
        span: source.span(pointer),
    };
    if node.get("type").and_then(Value::as_str) == Some("noteNode") {
        gaps.push(
            gap(
                &codes::UNSUPPORTED_NODE,
                source,
                pointer,
                format!("note `{}` is not imported", short(&title)),
            )
            .with_severity(astrolift_manifest::Severity::Notice),
        );
        return result;
    }
    let edited = body.and_then(|b| b.get("edited")).and_then(Value::as_bool) == Some(true);
    if edited || kind == "CustomComponent" {
        gaps.push(gap(
            &codes::CUSTOM_CODE,
            source,
            &format!("{template_pointer}/code"),
            format!(
                "component `{}` runs custom code, which is not imported",
                short(&title)
            ),
        ));
    }
    credential_gaps(source, template, &template_pointer, &title, gaps);
    for (field, value) in template {
        if let Some(text) = prompt_text(field, value) {
            result.texts.push(Instruction {
                origin: format!("{} `{}` of {}", field_label(field), field, short(&title)),
                text: text.to_owned(),
            });
        }
    }
    let lower = kind.to_ascii_lowercase();
    let tool_mode = body
        .and_then(|b| b.get("tool_mode"))
        .and_then(Value::as_bool)
        == Some(true);
    let has = |field: &str| template.contains_key(field);
    let is_agent = kind == "Agent"
        || (!hint.feeds_model
            && !hint.feeds_tools
            && (has("system_prompt") || has("system_message")));
    let is_prompt = kind == "Prompt" || (has("template") && !result.texts.is_empty());
    let is_tool = hint.feeds_tools || tool_mode;
    // What the node holds that has no native equivalent, whatever its role.
    let holds = if is_agent || is_prompt {
        None
    } else if lower.contains("memory") || lower.contains("messagehistory") {
        Some((&codes::MEMORY, "memory", ": each run starts from its input"))
    } else if VECTOR_WORDS.iter().any(|w| lower.contains(w)) {
        Some((&codes::VECTOR_STORE, "vector store", ""))
    } else if LOADER_WORDS.iter().any(|w| lower.contains(w)) {
        Some((&codes::DOCUMENT_LOADER, "document loader", ""))
    } else {
        None
    };
    if let Some((code, what, why)) = holds {
        gaps.push(gap(
            code,
            source,
            pointer,
            format!("{what} `{}` is not imported{why}", short(&title)),
        ));
    }
    result.role = if is_agent {
        model_gap(source, template, &template_pointer, &title, gaps);
        Role::Agent
    } else if is_prompt {
        Role::Prompt
    } else if is_tool {
        result.tools.push(Tool {
            slug: slugify(&title, "tool"),
            name: title.clone(),
            description: body
                .and_then(|b| b.get("description"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            path: source.path.clone(),
            span: source.span(pointer),
        });
        Role::Tool
    } else if holds.is_some() || IO_TYPES.contains(&kind) {
        Role::Other
    } else if lower.ends_with("model") || lower.contains("languagemodel") || has("model_name") {
        model_gap(source, template, &template_pointer, &title, gaps);
        Role::Other
    } else if !(edited || kind == "CustomComponent") {
        gaps.push(gap(
            &codes::UNSUPPORTED_NODE,
            source,
            pointer,
            format!(
                "component `{}` ({}) has no native equivalent and is not imported",
                short(&title),
                if kind.is_empty() { "no type" } else { kind }
            ),
        ));
        Role::Other
    } else {
        Role::Other
    };
    // A prompt-like field on an input, tool or other node is still text the
    // flow uses: keep it, as a loose prompt if it reaches no agent.
    if result.role == Role::Other && !result.texts.is_empty() {
        result.role = Role::Prompt;
    }
    result
}

use astrolift_manifest::Diagnostic;

/// Field names whose string value is prompt text.
pub fn is_prompt_field(field: &str) -> bool {
    let field = field.to_ascii_lowercase();
    matches!(
        field.as_str(),
        "system_prompt" | "system_message" | "template" | "instructions" | "prompt"
    ) || field.ends_with("_prompt")
        || field.ends_with("_instructions")
}

fn prompt_text<'v>(field: &str, value: &'v Value) -> Option<&'v str> {
    if !is_prompt_field(field) || value.get("type").and_then(Value::as_str) == Some("code") {
        return None;
    }
    value
        .get("value")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
}

fn field_label(field: &str) -> &'static str {
    if graph::is_system_field(field) {
        "system prompt"
    } else {
        "prompt"
    }
}

/// A gap per secret field with a value (a literal key or a global
/// variable's name); the value itself is never shown.
fn credential_gaps(
    source: &JsonSource<'_>,
    template: &Map<String, Value>,
    template_pointer: &str,
    title: &str,
    gaps: &mut Vec<Diagnostic>,
) {
    for (field, value) in template {
        let secret = value.get("password").and_then(Value::as_bool) == Some(true)
            || value.get("load_from_db").and_then(Value::as_bool) == Some(true)
            || value.get("_input_type").and_then(Value::as_str) == Some("SecretStrInput");
        let set = value
            .get("value")
            .and_then(Value::as_str)
            .is_some_and(|v| !v.trim().is_empty());
        if secret && set {
            gaps.push(
                gap(
                    &codes::CREDENTIAL,
                    source,
                    &format!("{template_pointer}/{}", escape_token(field)),
                    format!(
                        "field `{field}` of `{}` holds a credential, which is not imported",
                        short(title)
                    ),
                )
                .with_help("declare it under [secrets] as a `secret://` reference"),
            );
        }
    }
}

/// One gap naming the model settings of a node, if it has any.
fn model_gap(
    source: &JsonSource<'_>,
    template: &Map<String, Value>,
    template_pointer: &str,
    title: &str,
    gaps: &mut Vec<Diagnostic>,
) {
    let settings: Vec<String> = ["agent_llm", "model_name", "model", "temperature"]
        .iter()
        .filter_map(|field| {
            let value = template.get(*field)?.get("value")?;
            let shown = match value {
                Value::String(s) if !s.trim().is_empty() => short(s),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            Some(format!("{field} = {shown}"))
        })
        .collect();
    if settings.is_empty() {
        return;
    }
    let field = ["agent_llm", "model_name", "model", "temperature"]
        .into_iter()
        .find(|f| template.contains_key(*f))
        .unwrap_or("model_name");
    gaps.push(gap(
        &codes::MODEL,
        source,
        &format!("{template_pointer}/{field}"),
        format!(
            "model settings of `{}` ({}) are not imported: the runtime image chooses the model",
            short(title),
            settings.join(", ")
        ),
    ));
}
