//! No prompt lost: every non-empty prompt, system message and instruction
//! of a source appears verbatim in some output file, in every mode.
//!
//! The collectors below read the fixtures independently of the importers:
//! any string under a prompt-like key, anywhere in a node.

use astrolift_import::{Format, Imported, Mode, Source, SourceFile, import};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::support::{fixture, graph_fixtures, import_file, options};

fn prompt_like(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "prompt",
        "instruction",
        "system_message",
        "systemmessage",
        "template",
    ]
    .iter()
    .any(|w| key.contains(w))
        && !key.contains("model")
        && !key.ends_with("config")
}

/// Every prompt text of a node tree: prompt-like keys' strings (a Langflow
/// field's `value`), and the `content` of `*Messages` lists.
fn push(out: &mut Vec<String>, text: Option<&Value>) {
    if let Some(Value::String(text)) = text
        && !text.trim().is_empty()
    {
        out.push(text.clone());
    }
}

/// A Flowise agentflow user message (`agentUserMessage`, `llmUserMessage`,
/// `conditionAgentInput`) whose text, without tags and `{{ … }}`, is not blank.
fn user_message(key: &str, value: &Value) -> bool {
    let Some(text) = value.as_str() else {
        return false;
    };
    let key = key.to_ascii_lowercase();
    if !key.ends_with("usermessage") && key != "conditionagentinput" {
        return false;
    }
    let mut plain = String::new();
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => plain.push(c),
            _ => {}
        }
    }
    let without_variables: String = plain
        .split("{{")
        .enumerate()
        .map(|(i, part)| match part.split_once("}}") {
            Some((_, after)) if i > 0 => after,
            _ => part,
        })
        .collect();
    !without_variables.replace("&nbsp;", " ").trim().is_empty()
}

fn collect(value: &Value, key: &str, out: &mut Vec<String>) {
    match value {
        Value::String(_) if prompt_like(key) || user_message(key, value) => push(out, Some(value)),
        Value::Object(map) => {
            // A Langflow template field: {type, value, ...} under its name.
            if prompt_like(key) && map.get("type").and_then(Value::as_str) != Some("code") {
                push(out, map.get("value"));
            }
            for (k, v) in map {
                collect(v, k, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                if key.ends_with("Messages") {
                    push(out, item.get("content"));
                }
                collect(item, key, out);
            }
        }
        _ => {}
    }
}

fn missing(prompts: &[String], imported: &Imported) -> Vec<String> {
    let output: Vec<String> = imported
        .files
        .values()
        .map(|f| String::from_utf8_lossy(&f.bytes).into_owned())
        .collect();
    prompts
        .iter()
        .filter(|p| !output.iter().any(|o| o.contains(p.as_str())))
        .cloned()
        .collect()
}

#[test]
fn every_prompt_of_every_fixture_is_in_the_output() {
    for (format, path) in graph_fixtures() {
        let (_, bytes) = fixture(&path);
        let value: Value = serde_json::from_slice(&bytes).expect("fixture JSON");
        let mut prompts = Vec::new();
        collect(&value, "", &mut prompts);
        assert!(!prompts.is_empty(), "{path} has prompts to check");
        for mode in [None, Some(Mode::Flatten), Some(Mode::Federation)] {
            let imported = import_file(format, &path, &options(true, mode));
            assert_eq!(
                missing(&prompts, &imported),
                Vec::<String>::new(),
                "{path} {mode:?}"
            );
        }
    }
}

#[test]
fn agents_md_text_is_in_the_output_verbatim() {
    let (_, root) = fixture("agents_md/repo/AGENTS.md");
    let (_, nested) = fixture("agents_md/repo/packages/api/AGENTS.md");
    let imported = crate::support::import_dir("agents_md/repo", &options(true, None));
    let texts = [
        String::from_utf8_lossy(&root).into_owned(),
        String::from_utf8_lossy(&nested).into_owned(),
    ];
    assert_eq!(missing(&texts, &imported), Vec::<String>::new());
}

/// A Langflow flow of `agents` Agent nodes chained in order, each with its
/// system prompt, and a Prompt node feeding each one's input.
fn langflow_chain(agents: &[(String, String)]) -> Vec<u8> {
    let field = |value: &str| json!({"type": "str", "value": value});
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for (i, (system, prompt)) in agents.iter().enumerate() {
        nodes.push(json!({"id": format!("Agent-{i}"), "type": "genericNode", "data": {"id": format!("Agent-{i}"), "type": "Agent", "node": {"display_name": format!("Agent {i}"), "template": {"system_prompt": field(system)}}}}));
        nodes.push(json!({"id": format!("Prompt-{i}"), "type": "genericNode", "data": {"id": format!("Prompt-{i}"), "type": "Prompt", "node": {"display_name": format!("Prompt {i}"), "template": {"template": field(prompt)}}}}));
        edges.push(json!({"source": format!("Prompt-{i}"), "target": format!("Agent-{i}"), "data": {"targetHandle": {"fieldName": "input_value"}}}));
        if i > 0 {
            edges.push(json!({"source": format!("Agent-{}", i - 1), "target": format!("Prompt-{i}"), "data": {"targetHandle": {"fieldName": "context"}}}));
        }
    }
    serde_json::to_vec(&json!({"name": "chain", "data": {"nodes": nodes, "edges": edges}}))
        .expect("JSON")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn generated_langflow_chains_lose_no_prompt(
        agents in prop::collection::vec(("[a-zA-Z0-9 .,:#*\\-\n]{1,80}", "[a-zA-Z0-9 {}.,\n]{1,80}"), 1..5),
        federation in any::<bool>(),
    ) {
        let bytes = langflow_chain(&agents);
        let mode = if federation { Mode::Federation } else { Mode::Flatten };
        let imported = import(
            Format::Langflow,
            Source::File(SourceFile { path: "chain.json", bytes: &bytes }),
            &options(true, Some(mode)),
        ).expect("imports");
        let prompts: Vec<String> = agents
            .iter()
            .flat_map(|(s, p)| [s.clone(), p.clone()])
            .filter(|t| !t.trim().is_empty())
            .collect();
        prop_assert_eq!(missing(&prompts, &imported), Vec::<String>::new());
    }
}
