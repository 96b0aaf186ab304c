//! Flowise exports (JSON): chatflows and agentflows v2, both
//! `{nodes, edges}` with each node's settings in `nodes[i].data.inputs`.
//!
//! - Chatflows: a node's `data.category` says what it is (`Agents`,
//!   `Chains`, `Prompts`, `Tools`, `Chat Models`, `Memory`, `Vector Stores`,
//!   `Document Loaders`, ...); prompts are inputs such as `systemMessage`,
//!   `systemMessagePrompt` or `template`; tools are nodes wired into an
//!   agent's `tools` input; credentials are `data.credential`.
//! - Agentflows v2 (`type: "agentFlow"`): `data.name` says what it is
//!   (`agentAgentflow`, `llmAgentflow`, `toolAgentflow`, ...); prompts are
//!   the `content` of `agentMessages` / `llmMessages` and instruction
//!   inputs, and an agent's user message (`agentUserMessage`,
//!   `llmUserMessage`) when it says more than its `{{ variables }}`; tools
//!   are `agentTools[].agentSelectedTool`; credentials sit in the
//!   `*Config.credential` inputs.
//!
//! Text is kept verbatim, HTML of the v2 rich-text editor included.

use serde_json::{Map, Value};

use astrolift_manifest::import_codes as codes;
use astrolift_manifest::{Diagnostic, Severity};

use crate::graph::{self, Draft, Node, Role, gap, short};
use crate::json::{JsonSource, escape_token};
use crate::model::{Instruction, Tool, slugify};
use crate::{ImportError, Imported, Options, SourceFile};

/// Imports one Flowise chatflow or agentflow export.
pub fn import(file: SourceFile<'_>, options: &Options) -> Result<Imported, ImportError> {
    let source = JsonSource::parse(file.path, file.bytes)?;
    let (nodes, edges) = graph_arrays(&source)?;
    graph::check_size(&source, nodes, edges, &options.limits)?;
    let mut draft = Draft::default();
    let ids: Vec<String> = nodes.iter().map(graph::node_id).collect();
    let tool_sources: std::collections::HashSet<&str> = edges
        .iter()
        .filter(|e| edge_field(e).as_deref() == Some("tools"))
        .filter_map(|e| e.get("source").and_then(Value::as_str))
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        let pointer = format!("/nodes/{i}");
        let feeds_tools = tool_sources.contains(ids[i].as_str());
        let node = read_node(
            &source,
            node,
            &pointer,
            &ids[i],
            feeds_tools,
            &mut draft.gaps,
        );
        draft.nodes.push(node);
    }
    draft.edges = graph::edges_between(edges, &ids, edge_field);
    Ok(graph::render(draft, &source, options))
}

fn graph_arrays<'v>(source: &'v JsonSource<'_>) -> Result<(&'v [Value], &'v [Value]), ImportError> {
    let wrong = |reason: &str| ImportError::WrongFormat {
        path: source.path.clone(),
        expected: "Flowise",
        reason: reason.to_owned(),
    };
    let Some(root) = source.value.as_object() else {
        return Err(wrong("the top level is not a JSON object"));
    };
    if root.get("data").and_then(|d| d.get("nodes")).is_some() {
        return Err(wrong(
            "its nodes are under `data.nodes`, as Langflow exports are; use `--from langflow`",
        ));
    }
    let (nodes, edges) = graph::node_and_edge_arrays(root, "", |reason| wrong(&reason))?;
    if nodes
        .iter()
        .any(|n| n.pointer("/data/node/template").is_some())
    {
        return Err(wrong(
            "its nodes carry Langflow `data.node.template` fields; use `--from langflow`",
        ));
    }
    Ok((nodes, edges))
}

/// The input an edge feeds: `tools` in `toolAgent_0-input-tools-Tool`.
fn edge_field(edge: &Value) -> Option<String> {
    let handle = edge.get("targetHandle").and_then(Value::as_str)?;
    let (_, rest) = handle.split_once("-input-")?;
    Some(rest.split('-').next().unwrap_or(rest).to_owned())
}

fn read_node(
    source: &JsonSource<'_>,
    node: &Value,
    pointer: &str,
    id: &str,
    feeds_tools: bool,
    gaps: &mut Vec<Diagnostic>,
) -> Node {
    let data = node.get("data");
    let text_of = |key: &str| {
        data.and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let name = text_of("name");
    let category = text_of("category");
    let label = match text_of("label") {
        "" => {
            if name.is_empty() {
                id
            } else {
                name
            }
        }
        label => label,
    }
    .to_owned();
    let empty = Map::new();
    let inputs = data
        .and_then(|d| d.get("inputs"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let inputs_pointer = format!("{pointer}/data/inputs");
    let mut result = Node {
        id: id.to_owned(),
        title: label.clone(),
        role: Role::Other,
        texts: prompt_texts(inputs, &label),
        prompts: Vec::new(),
        tools: Vec::new(),
        span: source.span(pointer),
    };
    credential_gaps(source, data, inputs, pointer, &label, gaps);
    let kind = Kind::of(node, name, category, feeds_tools);
    let at_node = |code, message: String| gap(code, source, pointer, message);
    result.role = match kind {
        Kind::Agent => {
            model_gap(source, inputs, &inputs_pointer, &label, gaps);
            for (key, value) in inputs {
                let lower = key.to_ascii_lowercase();
                if lower.ends_with("enablememory") && value.as_bool() == Some(true) {
                    gaps.push(gap(
                        &codes::MEMORY,
                        source,
                        &format!("{inputs_pointer}/{}", escape_token(key)),
                        format!(
                            "memory of `{}` is not imported: each run starts from its input",
                            short(&label)
                        ),
                    ));
                }
                if (lower.contains("knowledge")
                    || lower.contains("vectorstore")
                    || lower.contains("retriever"))
                    && is_set(value)
                {
                    gaps.push(gap(
                        &codes::VECTOR_STORE,
                        source,
                        &format!("{inputs_pointer}/{}", escape_token(key)),
                        format!("knowledge `{key}` of `{}` is not imported", short(&label)),
                    ));
                }
            }
            if name == "conditionAgentAgentflow" {
                gaps.push(
                    at_node(
                        &codes::UNSUPPORTED_NODE,
                        format!(
                            "the routing of `{}` is not kept: the workflow runs every branch",
                            short(&label)
                        ),
                    )
                    .with_severity(Severity::Notice),
                );
            }
            result.tools = selected_tools(source, inputs, &inputs_pointer);
            result.prompts = user_messages(inputs, &label);
            Role::Agent
        }
        Kind::Prompt => Role::Prompt,
        Kind::Tool { custom } => {
            if custom {
                gaps.push(at_node(
                    &codes::CUSTOM_CODE,
                    format!(
                        "tool `{}` runs custom code, which is not imported",
                        short(&label)
                    ),
                ));
            }
            let selected = inputs
                .get("toolAgentflowSelectedTool")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty());
            let tool_name = selected.unwrap_or(if name.is_empty() { &label } else { name });
            result.tools.push(Tool {
                slug: slugify(tool_name, "tool"),
                name: tool_name.to_owned(),
                description: data
                    .and_then(|d| d.get("description"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                path: source.path.clone(),
                span: source.span(pointer),
            });
            Role::Tool
        }
        Kind::Io => Role::Other,
        Kind::Note => {
            gaps.push(
                at_node(
                    &codes::UNSUPPORTED_NODE,
                    format!("note `{}` is not imported", short(&label)),
                )
                .with_severity(Severity::Notice),
            );
            Role::Other
        }
        Kind::Model => {
            let before = gaps.len();
            model_gap(source, inputs, &inputs_pointer, &label, gaps);
            if gaps.len() == before {
                gaps.push(at_node(
                    &codes::MODEL,
                    format!(
                        "model `{}` ({name}) is not imported: the runtime image chooses the model",
                        short(&label)
                    ),
                ));
            }
            Role::Other
        }
        Kind::Gap(code, what) => {
            gaps.push(at_node(
                code,
                format!(
                    "{what} `{}` ({}) is not imported",
                    short(&label),
                    if name.is_empty() { "no name" } else { name }
                ),
            ));
            Role::Other
        }
    };
    if result.role != Role::Agent {
        // Only an agent keeps prompts apart from its instructions.
        result.texts.extend(user_messages(inputs, &label));
    }
    if result.role == Role::Other && !result.texts.is_empty() {
        result.role = Role::Prompt;
    }
    result
}

/// What a node is, from its v2 `name` or its chatflow `category`.
enum Kind {
    Agent,
    Prompt,
    Tool { custom: bool },
    Io,
    Note,
    Model,
    Gap(&'static astrolift_manifest::Code, &'static str),
}

impl Kind {
    fn of(node: &Value, name: &str, category: &str, feeds_tools: bool) -> Kind {
        let v2 = node.get("type").and_then(Value::as_str) == Some("agentFlow")
            || name.ends_with("Agentflow");
        if v2 {
            return match name {
                "agentAgentflow" | "llmAgentflow" | "conditionAgentAgentflow" => Kind::Agent,
                "toolAgentflow" => Kind::Tool { custom: false },
                "startAgentflow" | "directReplyAgentflow" => Kind::Io,
                "stickyNoteAgentflow" => Kind::Note,
                "retrieverAgentflow" => Kind::Gap(&codes::VECTOR_STORE, "retriever"),
                "customFunctionAgentflow" => Kind::Gap(&codes::CUSTOM_CODE, "custom function"),
                _ => Kind::Gap(&codes::UNSUPPORTED_NODE, "node"),
            };
        }
        if name == "stickyNote" {
            return Kind::Note;
        }
        match category {
            "Agents" | "Multi Agents" | "Sequential Agents" | "Chains" => Kind::Agent,
            "Prompts" => Kind::Prompt,
            "Tools" | "Tools (MCP)" => Kind::Tool {
                custom: name.to_ascii_lowercase().contains("custom"),
            },
            "Chat Models" | "LLMs" => Kind::Model,
            "Memory" => Kind::Gap(&codes::MEMORY, "memory"),
            "Vector Stores" | "Embeddings" | "Retrievers" | "Record Manager" => {
                Kind::Gap(&codes::VECTOR_STORE, "vector store")
            }
            "Document Loaders" | "Text Splitters" => {
                Kind::Gap(&codes::DOCUMENT_LOADER, "document loader")
            }
            "Utilities" if name.to_ascii_lowercase().contains("customfunction") => {
                Kind::Gap(&codes::CUSTOM_CODE, "custom function")
            }
            _ if feeds_tools => Kind::Tool { custom: false },
            _ => Kind::Gap(&codes::UNSUPPORTED_NODE, "node"),
        }
    }
}

/// An input key whose string value is prompt text.
pub fn is_prompt_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    !key.contains("model")
        && !key.ends_with("config")
        && (key.contains("prompt")
            || key.contains("instruction")
            || key.contains("systemmessage")
            || key == "template")
}

/// An input key whose value is a list of `{role, content}` messages.
pub fn is_messages_key(key: &str) -> bool {
    key.ends_with("Messages")
}

fn prompt_texts(inputs: &Map<String, Value>, label: &str) -> Vec<Instruction> {
    let mut texts = Vec::new();
    for (key, value) in inputs {
        if is_prompt_key(key) {
            if let Some(text) = value.as_str().filter(|t| !t.trim().is_empty()) {
                texts.push(Instruction {
                    origin: format!("`{key}` of {}", short(label)),
                    text: text.to_owned(),
                });
            }
        } else if is_messages_key(key) {
            for message in value.as_array().into_iter().flatten() {
                let Some(text) = message
                    .get("content")
                    .and_then(Value::as_str)
                    .filter(|t| !t.trim().is_empty())
                else {
                    continue;
                };
                let role = message
                    .get("role")
                    .and_then(Value::as_str)
                    .unwrap_or("message");
                texts.push(Instruction {
                    origin: format!("{role} message of {}", short(label)),
                    text: text.to_owned(),
                });
            }
        }
    }
    texts
}

/// An input key whose string value is the user turn an agentflow node sends
/// each run: `agentUserMessage`, `llmUserMessage`, a condition agent's
/// `conditionAgentInput`.
pub fn is_user_message_key(key: &str) -> bool {
    key.ends_with("UserMessage") || key == "conditionAgentInput"
}

/// The user messages of a node that say something besides template variables
/// (docs/import.md): `<p>{{ question }}</p>` is only the run's input.
fn user_messages(inputs: &Map<String, Value>, label: &str) -> Vec<Instruction> {
    inputs
        .iter()
        .filter(|(key, _)| is_user_message_key(key))
        .filter_map(|(_, value)| {
            let text = value.as_str().filter(|t| has_text_besides_variables(t))?;
            Some(Instruction {
                origin: format!("user message of {}", short(label)),
                text: text.to_owned(),
            })
        })
        .collect()
}

/// Whether rich text holds anything but HTML tags, `{{ variable }}`
/// placeholders, `&nbsp;` and whitespace. An unclosed tag or placeholder is
/// text.
pub fn has_text_besides_variables(text: &str) -> bool {
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let skip = if rest.starts_with("{{") {
            rest.find("}}").map(|end| end + 2)
        } else if c == '<' {
            rest.find('>').map(|end| end + 1)
        } else if rest.starts_with("&nbsp;") {
            Some("&nbsp;".len())
        } else if c.is_whitespace() {
            Some(c.len_utf8())
        } else {
            None
        };
        match skip {
            Some(len) => rest = &rest[len..],
            None => return true,
        }
    }
    false
}

fn is_set(value: &Value) -> bool {
    match value {
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Bool(b) => *b,
        _ => false,
    }
}

/// The tools an agentflow agent selects: `agentTools[].agentSelectedTool`.
fn selected_tools(
    source: &JsonSource<'_>,
    inputs: &Map<String, Value>,
    inputs_pointer: &str,
) -> Vec<Tool> {
    let mut tools: Vec<Tool> = Vec::new();
    for (key, value) in inputs {
        if !key.ends_with("Tools") {
            continue;
        }
        for (i, entry) in value.as_array().into_iter().flatten().enumerate() {
            let Some(name) = entry
                .as_object()
                .and_then(|o| o.iter().find(|(k, _)| k.ends_with("SelectedTool")))
                .and_then(|(_, v)| v.as_str())
                .filter(|n| !n.is_empty())
            else {
                continue;
            };
            let slug = slugify(name, "tool");
            if tools.iter().any(|t| t.slug == slug) {
                continue;
            }
            tools.push(Tool {
                slug,
                name: name.to_owned(),
                description: None,
                path: source.path.clone(),
                span: source.span(&format!("{inputs_pointer}/{}/{i}", escape_token(key))),
            });
        }
    }
    tools
}

/// A gap per credential: `data.credential`, `inputs.credential`, and any
/// `credential` inside an input object (the v2 `*Config` inputs and tool
/// configs). The value (an id) is never shown.
fn credential_gaps(
    source: &JsonSource<'_>,
    data: Option<&Value>,
    inputs: &Map<String, Value>,
    pointer: &str,
    label: &str,
    gaps: &mut Vec<Diagnostic>,
) {
    let mut found: Vec<String> = Vec::new();
    if data.and_then(|d| d.get("credential")).is_some_and(is_set) {
        found.push(format!("{pointer}/data/credential"));
    }
    for (key, value) in inputs {
        let at = format!("{pointer}/data/inputs/{}", escape_token(key));
        if (key == "credential" && is_set(value)) || contains_credential(value, 0) {
            found.push(at);
        }
    }
    for at in found {
        gaps.push(
            gap(
                &codes::CREDENTIAL,
                source,
                &at,
                format!("a credential of `{}` is not imported", short(label)),
            )
            .with_help("declare it under [secrets] as a `secret://` reference"),
        );
    }
}

/// A non-empty `credential` key somewhere inside `value` (a few levels).
fn contains_credential(value: &Value, depth: usize) -> bool {
    if depth > 4 {
        return false;
    }
    match value {
        Value::Object(map) => map.iter().any(|(k, v)| {
            (k == "credential" || k == "FLOWISE_CREDENTIAL_ID") && is_set(v)
                || contains_credential(v, depth + 1)
        }),
        Value::Array(items) => items.iter().any(|v| contains_credential(v, depth + 1)),
        _ => false,
    }
}

/// One gap naming a node's model settings (`*Model` and `modelName`).
fn model_gap(
    source: &JsonSource<'_>,
    inputs: &Map<String, Value>,
    inputs_pointer: &str,
    label: &str,
    gaps: &mut Vec<Diagnostic>,
) {
    let mut first: Option<&str> = None;
    let mut settings: Vec<String> = Vec::new();
    for (key, value) in inputs {
        let lower = key.to_ascii_lowercase();
        let shown = match value {
            Value::String(s) if !s.trim().is_empty() && !s.starts_with("{{") => Some(short(s)),
            Value::Object(config) => config.get("modelName").and_then(Value::as_str).map(short),
            _ => None,
        };
        let is_model =
            (lower.ends_with("model") || lower == "modelname" || lower.ends_with("modelconfig"))
                && !lower.contains("prompt");
        if let Some(shown) = shown.filter(|_| is_model) {
            first.get_or_insert(key);
            settings.push(format!("{key} = {shown}"));
        }
    }
    let Some(first) = first else {
        return;
    };
    gaps.push(gap(
        &codes::MODEL,
        source,
        &format!("{inputs_pointer}/{}", escape_token(first)),
        format!(
            "model settings of `{}` ({}) are not imported: the runtime image chooses the model",
            short(label),
            settings.join(", ")
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::has_text_besides_variables;

    #[test]
    fn a_message_of_variables_only_has_no_text() {
        let mention = r#"<p><span class="variable" data-type="mention" data-id="question">{{ question }}</span>&nbsp;</p>"#;
        assert!(!has_text_besides_variables(mention));
        assert!(!has_text_besides_variables("{{ $flow.state.next }} \n"));
        assert!(!has_text_besides_variables(""));
        assert!(has_text_besides_variables("<p>Review: {{ question }}</p>"));
        assert!(has_text_besides_variables("{{ unclosed"));
        assert!(has_text_besides_variables("<p"));
        assert!(has_text_besides_variables("é"));
    }
}
