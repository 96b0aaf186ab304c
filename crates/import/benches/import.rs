//! Importing a 5 MiB Langflow export (target: under 100 ms), against the
//! baseline of parsing the same bytes into a `serde_json::Value`.
//!
//! `cargo bench -p astrolift-import --bench import`
//!
//! The export is generated: 12 agents chained through prompt nodes, each
//! with three tools, a model node, a memory node and a vector store, every
//! component carrying its Python source in `template.code` the way real
//! exports do (that code is most of a real export's bytes), repeated until
//! the file reaches 5 MiB.

use astrolift_import::{Format, Options, Source, SourceFile, import};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

const TARGET: usize = 5 * 1024 * 1024;

fn field(name: &str, value: Value) -> Value {
    json!({"_input_type": "MessageTextInput", "advanced": false, "display_name": name, "dynamic": false,
           "info": "A field of the component.", "list": false, "load_from_db": false, "name": name,
           "placeholder": "", "required": false, "show": true, "title_case": false,
           "trace_as_metadata": true, "type": "str", "value": value})
}

fn component(id: &str, kind: &str, fields: Vec<(&str, Value)>, code: &str) -> Value {
    let mut template = serde_json::Map::new();
    template.insert("_type".into(), json!("Component"));
    template.insert(
        "code".into(),
        json!({"type": "code", "value": code, "name": "code"}),
    );
    for (name, value) in fields {
        template.insert(name.into(), field(name, value));
    }
    json!({"id": id, "type": "genericNode", "position": {"x": 0, "y": 0},
           "data": {"id": id, "type": kind, "node": {"display_name": format!("{kind} {id}"),
           "description": "A component.", "edited": false, "template": template}}})
}

fn edge(source: &str, target: &str, field: &str) -> Value {
    json!({"source": source, "target": target,
           "data": {"targetHandle": {"fieldName": field, "id": target}, "sourceHandle": {"id": source}}})
}

fn export() -> Vec<u8> {
    let code = "from langflow.custom import Component\n\nclass X(Component):\n    def build(self):\n        return self.input_value\n".repeat(40);
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let mut group = 0;
    loop {
        let mut previous: Option<String> = None;
        for a in 0..12 {
            let agent = format!("Agent-{group}-{a}");
            nodes.push(component(
                &agent,
                "Agent",
                vec![
                    (
                        "system_prompt",
                        json!(
                            format!("You are agent {a} of group {group}. Do the step well.\n")
                                .repeat(8)
                        ),
                    ),
                    ("agent_llm", json!("OpenAI")),
                    ("model_name", json!("gpt-4o-mini")),
                ],
                &code,
            ));
            for t in 0..3 {
                let tool = format!("URLComponent-{group}-{a}-{t}");
                nodes.push(component(
                    &tool,
                    "URLComponent",
                    vec![("urls", json!(["https://example.com"]))],
                    &code,
                ));
                edges.push(edge(&tool, &agent, "tools"));
            }
            for kind in ["Memory", "AstraDB", "OpenAIModel"] {
                let id = format!("{kind}-{group}-{a}");
                nodes.push(component(
                    &id,
                    kind,
                    vec![("n_messages", json!(100))],
                    &code,
                ));
                edges.push(edge(&id, &agent, "input_value"));
            }
            if let Some(before) = previous {
                let prompt = format!("Prompt-{group}-{a}");
                nodes.push(component(
                    &prompt,
                    "Prompt",
                    vec![("template", json!("Continue from: {previous}"))],
                    &code,
                ));
                edges.push(edge(&before, &prompt, "previous"));
                edges.push(edge(&prompt, &agent, "input_value"));
            }
            previous = Some(agent);
        }
        group += 1;
        let bytes = serde_json::to_vec_pretty(
            &json!({"name": "bench", "data": {"nodes": nodes, "edges": edges}}),
        )
        .expect("JSON");
        if bytes.len() >= TARGET {
            return bytes;
        }
    }
}

fn bench(c: &mut Criterion) {
    let bytes = export();
    eprintln!("export: {} bytes", bytes.len());
    let mut group = c.benchmark_group("langflow-5mib");
    group.sample_size(20);
    group.bench_function("import (federation)", |b| {
        b.iter(|| {
            let source = Source::File(SourceFile {
                path: "bench.json",
                bytes: &bytes,
            });
            import(Format::Langflow, source, &Options::default()).expect("imports")
        })
    });
    group.bench_function("baseline: serde_json::from_slice to Value", |b| {
        b.iter(|| serde_json::from_slice::<Value>(&bytes).expect("parses"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
