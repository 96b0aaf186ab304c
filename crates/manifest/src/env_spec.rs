//! Env-spec references of trigger bindings (`env_spec = "…"` in a
//! `[[triggers]]` entry) and of workflow stages (in a `[[stages]]` entry), and
//! the diagnostics for one that the agent's project cannot use.
//!
//! Env specs live in state, so whether a name is usable is decided by the
//! caller that holds the state store (the sync, on the check run; the trigger
//! service and `astrolift dispatch`, at dispatch). This module only finds the
//! references with their positions, reading the manifest text again: the
//! trigger model carries names, not spans, and the check is rare (only
//! manifests whose triggers name an env spec are read twice).

use crate::diagnostic::{Code, Severity, Span};
use crate::toml_walk::TomlFile;

pub const NOT_IN_PROJECT: Code = Code::new(
    "trigger/env-spec-not-in-project",
    Severity::Error,
    "A trigger names an env spec that does not exist in the agent's project.",
);

pub const STAGE_NOT_IN_PROJECT: Code = Code::new(
    "workflow/env-spec-not-in-project",
    Severity::Error,
    "A workflow stage names an env spec that does not exist in its agent's project.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[&NOT_IN_PROJECT, &STAGE_NOT_IN_PROJECT];

/// One `env_spec = "…"` of a `[[triggers]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSpecRef {
    /// The trigger's (or stage's) `name`, when it has a string one.
    pub trigger: Option<String>,
    /// The env spec's name as written.
    pub env_spec: String,
    /// The span of the value.
    pub span: Span,
}

/// Every string `env_spec` of the `[[triggers]]` entries in the manifest
/// `text` (at repository path `path`), in file order. A file that does not
/// parse yields what it can: validation reports its problems, not this.
pub fn env_spec_refs(path: &str, text: &str) -> Vec<EnvSpecRef> {
    entry_refs(path, text, "triggers")
}

/// Every string `env_spec` of the `[[stages]]` entries in the workflow file
/// `text` (at repository path `path`), in file order; `trigger` holds the
/// stage's name. As [`env_spec_refs`], a broken file yields what it can.
pub fn stage_env_spec_refs(path: &str, text: &str) -> Vec<EnvSpecRef> {
    entry_refs(path, text, "stages")
}

fn entry_refs(path: &str, text: &str, array: &str) -> Vec<EnvSpecRef> {
    let (mut file, root) = TomlFile::parse(path, text);
    let root = root.get_ref();
    let tables = file.table_array(root, array);
    let mut refs = Vec::new();
    for (table, _) in tables {
        let Some((env_spec, range)) = file.str(table, "env_spec") else {
            continue;
        };
        let env_spec = env_spec.to_owned();
        let trigger = file.str(table, "name").map(|(name, _)| name.to_owned());
        refs.push(EnvSpecRef {
            trigger,
            env_spec,
            span: file.span(range),
        });
    }
    refs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_env_spec_with_its_position() {
        let text = "name = \"a\"\n\n[[triggers]]\nname = \"one\"\nenv_spec = \"prod\"\n\n[[triggers]]\nname = \"two\"\n\n[[triggers]]\nenv_spec = \"dev\"\n";
        let refs = env_spec_refs("astrolift.toml", text);
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[0].trigger.as_deref(), Some("one"));
        assert_eq!((refs[0].env_spec.as_str(), refs[0].span.line), ("prod", 5));
        assert_eq!(refs[0].span.column, 12);
        assert_eq!((refs[1].trigger.as_deref(), refs[1].span.line), (None, 11));
    }

    #[test]
    fn finds_each_stage_env_spec() {
        let text = "schema = \"astrolift.workflow/v1\"\nname = \"w\"\n\n[[stages]]\nname = \"a\"\nagent = \"x\"\nenv_spec = \"prod\"\n\n[[stages]]\nname = \"b\"\nagent = \"y\"\n";
        let refs = stage_env_spec_refs("workflows/w.toml", text);
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].trigger.as_deref(), Some("a"));
        assert_eq!((refs[0].env_spec.as_str(), refs[0].span.line), ("prod", 7));
    }

    #[test]
    fn broken_files_yield_what_they_can() {
        assert!(env_spec_refs("a.toml", "[[triggers]\nenv_spec = 3").is_empty());
        assert!(env_spec_refs("a.toml", "triggers = 1").is_empty());
    }
}
