//! The prompts of a dispatch: the texts read for them ([`PromptTexts`]) and
//! [`compose_prompts`], the one function that composes the system prompt and
//! the kickoff turn: `build_message`, `astrolift trigger test` and
//! `render_runtime_env` all call it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the caller read for the prompts: the brief's text, then each skill's
/// instructions in order, then the tools of the contract.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptTexts {
    pub brief: Option<String>,
    pub skills: Vec<SkillText>,
    /// In order; a slug seen before is skipped.
    pub tools: Vec<ToolContract>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SkillText {
    pub name: String,
    pub instructions: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolContract {
    pub slug: String,
    pub description: Option<String>,
}

/// `AGENT_SYSTEM` and `AGENT_PROMPT`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompts {
    pub system: String,
    pub kickoff: String,
}

/// The system prompt (the brief, then each skill's instructions in order,
/// then the tool contract with each slug once) and the kickoff turn (the
/// payload JSON inline; none for the empty payload).
pub fn compose_prompts(texts: &PromptTexts, agent: &str, payload: Option<&Value>) -> Prompts {
    let payload = non_empty_payload(payload).map(Value::to_string);
    Prompts {
        system: system_prompt(texts),
        kickoff: kickoff_prompt(agent, payload.as_deref()),
    }
}

/// The tool slugs of `texts`, in order, each once.
pub fn tool_slugs(texts: &PromptTexts) -> Vec<String> {
    let mut seen = BTreeSet::new();
    texts
        .tools
        .iter()
        .filter(|tool| seen.insert(tool.slug.as_str()))
        .map(|tool| tool.slug.clone())
        .collect()
}

/// The empty payload is `None`, `null` or `{}`.
pub fn non_empty_payload(payload: Option<&Value>) -> Option<&Value> {
    payload.filter(|p| !p.is_null() && p.as_object().is_none_or(|o| !o.is_empty()))
}

/// The brief, then each skill's instructions in order, then the tool contract
/// (each slug once, first description wins), separated by blank lines.
pub fn system_prompt(prompts: &PromptTexts) -> String {
    let mut sections = Vec::new();
    if let Some(brief) = prompts
        .brief
        .as_deref()
        .map(str::trim_end)
        .filter(|b| !b.is_empty())
    {
        sections.push(brief.to_owned());
    }
    for skill in &prompts.skills {
        sections.push(format!(
            "## Skill: {}\n\n{}",
            skill.name,
            skill.instructions.trim_end()
        ));
    }
    let mut seen = BTreeSet::new();
    let tools: Vec<String> = prompts
        .tools
        .iter()
        .filter(|tool| seen.insert(tool.slug.as_str()))
        .map(|tool| match &tool.description {
            Some(description) => format!("- `{}`: {}", tool.slug, description),
            None => format!("- `{}`", tool.slug),
        })
        .collect();
    if !tools.is_empty() {
        sections.push(format!("## Tools\n\n{}", tools.join("\n")));
    }
    sections.join("\n\n")
}

/// The kickoff turn, carrying the payload JSON inline (the same text as
/// `ASTROLIFT_TRIGGER_PAYLOAD`).
pub fn kickoff_prompt(agent: &str, payload: Option<&str>) -> String {
    match payload {
        Some(payload) => format!(
            "Run the agent `{agent}` once for this input.\n\nInput (JSON, also in ASTROLIFT_TRIGGER_PAYLOAD):\n```json\n{payload}\n```"
        ),
        None => format!("Run the agent `{agent}` once. No input was supplied."),
    }
}
