//! An [`AgentSet`] as files: the native layout `astrolift validate` reads.
//!
//! - One agent (or `--mode flatten`): `astrolift.toml`, `brief/README.md`
//!   (+ context files), `skills/<slug>/SKILL.md` per extra prompt (and per
//!   flattened agent), `skills/tools/SKILL.md` listing the tool slugs.
//! - `--mode federation`: the same under `agents/<slug>/` per agent, an
//!   `astrolift.agents.toml` listing them, and `workflows/<name>.toml` whose
//!   stages follow the set's edges.
//!
//! Every instruction and prompt text is written verbatim: the
//! no-prompt-lost property holds by construction, and a test checks it.

use std::collections::BTreeMap;

use astrolift_manifest::import_codes as codes;
use astrolift_manifest::{Diagnostic, Span};

use crate::model::{
    AgentSet, Imported, ImportedAgent, Instruction, OutputFile, SlugAllocator, Tool,
};
use crate::{Mode, Options};

/// The local skill that carries the tool slugs (`allowed-tools`).
pub const TOOLS_SKILL: &str = "tools";

/// Renders the set in `mode` and adds the gaps every layout shares
/// (runtime image, unresolved tools, flattening, stage bindings).
pub fn render(mut set: AgentSet, mode: Mode, options: &Options, source_path: &str) -> Imported {
    let mut files = BTreeMap::new();
    let mut gaps = std::mem::take(&mut set.gaps);
    let agents = match mode {
        Mode::Federation if set.agents.len() > 1 => {
            render_federation(&set, options, &mut files, &mut gaps, source_path);
            set.agents.iter().map(|a| a.slug.clone()).collect()
        }
        _ => {
            let agent = flatten(&mut set, &mut gaps, source_path);
            write_agent(&agent, "", &set.loose_prompts, options, &mut files);
            vec![agent.slug]
        }
    };
    for tool in set.agents.iter().flat_map(|a| &a.tools) {
        gaps.push(tool_gap(tool));
    }
    if options.image.is_none() {
        gaps.push(
            Diagnostic::new(
                &codes::RUNTIME_IMAGE_REQUIRED,
                source_path,
                Span::FILE,
                "the source names no runtime image, so the imported agents cannot run yet",
            )
            .with_help(
                "import again with `--image IMAGE_REF`, or set `image_ref` in each astrolift.toml",
            ),
        );
    }
    astrolift_manifest::diagnostic::sort(&mut gaps);
    gaps.dedup();
    Imported {
        files,
        gaps,
        agents,
    }
}

fn tool_gap(tool: &Tool) -> Diagnostic {
    Diagnostic::new(
        &codes::UNRESOLVED_TOOL,
        &tool.path,
        tool.span,
        format!(
            "tool `{}` became the tool slug `{}`, which no ToolDef binds yet",
            tool.name, tool.slug
        ),
    )
    .with_help(format!(
        "bind a ToolDef named `{}`; until then the agent runs without it",
        tool.slug
    ))
}

/// One agent standing for the whole set. With several agents, the first
/// one's instructions stay the brief and every other agent becomes a skill,
/// in source order.
fn flatten(set: &mut AgentSet, gaps: &mut Vec<Diagnostic>, source_path: &str) -> ImportedAgent {
    let mut agents = set.agents.iter();
    let Some(first) = agents.next() else {
        return ImportedAgent {
            slug: set.name.clone(),
            title: set.name.clone(),
            ..ImportedAgent::default()
        };
    };
    let mut flat = first.clone();
    flat.slug = set.name.clone();
    let rest: Vec<&ImportedAgent> = agents.collect();
    if !rest.is_empty() {
        let names: Vec<&str> = set.agents.iter().map(|a| a.title.as_str()).collect();
        gaps.push(
            Diagnostic::new(
                &codes::FLATTENED,
                source_path,
                Span::FILE,
                format!(
                    "{} agents ({}) were flattened into one: the first one's instructions are the brief, each other one is a skill",
                    names.len(),
                    names.join(", ")
                ),
            )
            .with_help("import with `--mode federation` to keep one agent per node and a workflow"),
        );
    }
    for other in rest {
        let texts: Vec<&str> = other.instructions.iter().map(|i| i.text.as_str()).collect();
        flat.prompts.push(Instruction {
            origin: format!("agent `{}`", other.title),
            text: texts.join("\n\n"),
        });
        flat.prompts.extend(other.prompts.iter().cloned());
        flat.context.extend(other.context.iter().cloned());
        for tool in &other.tools {
            if !flat.tools.iter().any(|t| t.slug == tool.slug) {
                flat.tools.push(tool.clone());
            }
        }
    }
    flat
}

fn render_federation(
    set: &AgentSet,
    options: &Options,
    files: &mut BTreeMap<String, OutputFile>,
    gaps: &mut Vec<Diagnostic>,
    source_path: &str,
) {
    let mut federation = format!(
        "# Imported by `astrolift import`: one agent per agent node of the source.\nschema = \"astrolift.agent.federation/v1\"\nname = {}\ninclude = [\"agents/*/astrolift.toml\"]\n",
        quote(&set.name)
    );
    for (index, agent) in set.agents.iter().enumerate() {
        let loose = if index == 0 {
            &set.loose_prompts[..]
        } else {
            &[]
        };
        write_agent(
            agent,
            &format!("agents/{}/", agent.slug),
            loose,
            options,
            files,
        );
        federation.push_str(&format!(
            "\n[[agents]]\nmanifest = \"agents/{0}/astrolift.toml\"\nalias = \"{0}\"\n",
            agent.slug
        ));
    }
    files.insert(
        "astrolift.agents.toml".to_owned(),
        OutputFile::text(federation),
    );
    let workflow = workflow_toml(set, gaps, source_path);
    files.insert(
        format!("workflows/{}.toml", set.name),
        OutputFile::text(workflow),
    );
}

/// The workflow: one stage per agent, in an order that follows the edges;
/// an edge against that order (a cycle) is dropped with a gap.
fn workflow_toml(set: &AgentSet, gaps: &mut Vec<Diagnostic>, source_path: &str) -> String {
    let order = stage_order(set.agents.len(), &set.edges, |cycle| {
        let names: Vec<&str> = cycle
            .iter()
            .filter_map(|&i| set.agents.get(i).map(|a| a.slug.as_str()))
            .collect();
        gaps.push(
            Diagnostic::new(
                &codes::CYCLE,
                source_path,
                Span::FILE,
                format!(
                    "the agents {} form a cycle; the workflow runs them in source order and drops the edges back",
                    names.join(" -> ")
                ),
            )
            .with_help("a workflow is acyclic: loop inside one agent instead"),
        );
    });
    let mut text = format!(
        "# Imported by `astrolift import`: stages follow the edges of the source graph.\nschema = \"astrolift.workflow/v1\"\nname = {}\n",
        quote(&set.name)
    );
    if let Some(description) = set.description.as_deref().filter(|d| !d.trim().is_empty()) {
        text.push_str(&format!("description = {}\n", quote(description)));
    }
    let position: BTreeMap<usize, usize> = order.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    for &index in &order {
        let Some(agent) = set.agents.get(index) else {
            continue;
        };
        let mut needs: Vec<&str> = Vec::new();
        for &(from, to) in &set.edges {
            let forward = position.get(&from) < position.get(&to);
            let before = set.agents.get(from).filter(|_| to == index && forward);
            if let Some(before) = before.filter(|b| !needs.contains(&b.slug.as_str())) {
                needs.push(&before.slug);
            }
        }
        text.push_str(&format!(
            "\n[[stages]]\nname = {0}\nagent = {0}\n",
            quote(&agent.slug)
        ));
        if !needs.is_empty() {
            let quoted: Vec<String> = needs.iter().map(|n| quote(n)).collect();
            text.push_str(&format!("needs = [{}]\n", quoted.join(", ")));
            gaps.push(
                Diagnostic::new(
                    &codes::STAGE_BINDING,
                    source_path,
                    agent.span.unwrap_or(Span::FILE),
                    format!(
                        "stage `{}` runs after {}; what it receives from them is for its `payload` to say",
                        agent.slug,
                        needs.join(", ")
                    ),
                )
                .with_help("add `payload = '{result: .stages.<stage>.result}'` (jq over {input, stages})"),
            );
        }
    }
    text
}

/// A topological order of `0..count` (ties by index); when only cycles are
/// left, the lowest index goes next and `on_cycle` hears the nodes it closed.
pub fn stage_order(
    count: usize,
    edges: &[(usize, usize)],
    mut on_cycle: impl FnMut(Vec<usize>),
) -> Vec<usize> {
    let mut done = vec![false; count];
    let mut order = Vec::with_capacity(count);
    while order.len() < count {
        let ready = (0..count).find(|&i| {
            !done[i]
                && !edges
                    .iter()
                    .any(|&(from, to)| to == i && from != i && from < count && !done[from])
        });
        let next = match ready {
            Some(i) => i,
            None => {
                let stuck: Vec<usize> = (0..count).filter(|&i| !done[i]).collect();
                let Some(&first) = stuck.first() else {
                    break;
                };
                on_cycle(stuck);
                first
            }
        };
        done[next] = true;
        order.push(next);
    }
    order
}

/// One agent's files under `prefix` ("" or `agents/<slug>/`).
fn write_agent(
    agent: &ImportedAgent,
    prefix: &str,
    loose: &[Instruction],
    options: &Options,
    files: &mut BTreeMap<String, OutputFile>,
) {
    let mut skills: Vec<String> = Vec::new();
    let mut slugs = SlugAllocator::with_taken([TOOLS_SKILL]);
    for prompt in agent.prompts.iter().chain(loose) {
        let slug = slugs.allocate(&crate::model::slugify(&prompt.origin, "prompt"));
        files.insert(
            format!("{prefix}skills/{slug}/SKILL.md"),
            OutputFile::text(skill_md(
                &slug,
                &format!("Imported from {}.", prompt.origin),
                &prompt.text,
                &[],
            )),
        );
        skills.push(slug);
    }
    if !agent.tools.is_empty() {
        let mut body = String::from(
            "The source gave this agent the tools below. Each name is a tool slug with no binding yet: bind a ToolDef of that name.\n\n",
        );
        for tool in &agent.tools {
            body.push_str(&format!("- `{}`: {}", tool.slug, tool.name));
            if let Some(description) = tool.description.as_deref().filter(|d| !d.is_empty()) {
                body.push_str(&format!(" ({})", one_line(description)));
            }
            body.push('\n');
        }
        let slugs: Vec<&str> = agent.tools.iter().map(|t| t.slug.as_str()).collect();
        files.insert(
            format!("{prefix}skills/{TOOLS_SKILL}/SKILL.md"),
            OutputFile::text(skill_md(
                TOOLS_SKILL,
                "The tools the source gave this agent, as tool slugs to bind.",
                &body,
                &slugs,
            )),
        );
        skills.push(TOOLS_SKILL.to_owned());
    }
    files.insert(
        format!("{prefix}brief/README.md"),
        OutputFile::text(brief_md(agent)),
    );
    for context in &agent.context {
        files.insert(
            format!("{prefix}brief/{}", context.name),
            OutputFile::text(context.text.clone()),
        );
    }
    files.insert(
        format!("{prefix}astrolift.toml"),
        OutputFile::text(manifest_toml(
            &agent.slug,
            &skills,
            options.image.as_deref(),
        )),
    );
}

fn brief_md(agent: &ImportedAgent) -> String {
    let mut text = String::new();
    match agent.instructions.as_slice() {
        [] => text.push_str(&format!(
            "# {}\n\nThe source gave this agent no instructions: write them here.\n",
            one_line(&agent.title)
        )),
        // A single instruction (an AGENTS.md, one system prompt) is the brief as it was.
        [only] => {
            text.push_str(&only.text);
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
        several => {
            text.push_str(&format!("# {}\n", one_line(&agent.title)));
            for instruction in several {
                text.push_str(&format!(
                    "\n## {}\n\n{}\n",
                    one_line(&instruction.origin),
                    instruction.text
                ));
            }
        }
    }
    if !agent.context.is_empty() {
        text.push_str("\n## Context files\n\n");
        for context in &agent.context {
            text.push_str(&format!(
                "- [{}]({})\n",
                one_line(&context.title),
                link_target(&context.name)
            ));
        }
    }
    text
}

/// A path as a Markdown link destination: `<...>` keeps spaces and
/// parentheses literal.
fn link_target(path: &str) -> String {
    if path.contains([' ', '(', ')']) {
        format!("<{path}>")
    } else {
        path.to_owned()
    }
}

/// `SKILL.md`: frontmatter (`name` = the directory, a one-line
/// `description`, `allowed-tools` when given) and the text as the body.
pub fn skill_md(name: &str, description: &str, body: &str, tools: &[&str]) -> String {
    let mut description = one_line(description);
    if description.chars().count() > 1024 {
        description = description.chars().take(1021).collect::<String>() + "...";
    }
    let mut text = format!(
        "---\nname: {name}\ndescription: {}\n",
        json_string(&description)
    );
    if !tools.is_empty() {
        let quoted: Vec<String> = tools.iter().map(|t| json_string(t)).collect();
        text.push_str(&format!("allowed-tools: [{}]\n", quoted.join(", ")));
    }
    text.push_str("---\n\n");
    text.push_str(body);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The native manifest of one imported agent. Without an image the
/// `image_ref` is empty: validation says so too, next to the import gap.
pub fn manifest_toml(name: &str, skills: &[String], image: Option<&str>) -> String {
    let mut text = format!(
        "# Imported by `astrolift import`.\nastrolift_version = 1\nname = {}\nbrief = \"brief/README.md\"\n",
        quote(name)
    );
    if !skills.is_empty() {
        text.push_str("skills = [\n");
        for skill in skills {
            text.push_str(&format!("  {{ {skill} = \"skills/{skill}\" }},\n"));
        }
        text.push_str("]\n");
    }
    text.push_str(&format!(
        "\n[[workloads]]\nname = {}\nkind = \"agent\"\nrun_family = \"task\"\n\n  [[workloads.containers]]\n  name = \"agent\"\n  is_primary = true\n",
        quote(name)
    ));
    match image {
        Some(image) => text.push_str(&format!("  image_ref = {}\n", quote(image))),
        None => text.push_str(
            "  # No runtime image yet (import/runtime-image-required): set one before registering.\n  image_ref = \"\"\n",
        ),
    }
    text
}

/// A TOML basic string. By hand: the workspace builds `toml` without its
/// serializer, and a basic string is five escapes.
pub fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            '\r' => quoted.push_str("\\r"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// A JSON string, which is also a YAML double-quoted scalar.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_order_follows_edges_and_breaks_cycles() {
        assert_eq!(stage_order(3, &[(2, 0), (0, 1)], |_| {}), [2, 0, 1]);
        let mut cycles = Vec::new();
        let order = stage_order(3, &[(0, 1), (1, 0), (1, 2)], |c| cycles.push(c));
        assert_eq!(order, [0, 1, 2]);
        assert_eq!(cycles, [vec![0, 1, 2]]);
    }
}
