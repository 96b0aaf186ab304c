//! Local skills: a directory holding `SKILL.md`, whose YAML frontmatter follows
//! the local-skill rules of docs/reference.md §5.1 and whose Markdown body is the
//! skill's instructions.
//!
//! The frontmatter is read with `serde-saphyr` into spanned key/value pairs,
//! so every finding points at the offending key or value in `SKILL.md`.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::diagnostic::{Code, Diagnostic, Edit, Fix, Severity, Span};
use crate::files;
use crate::limits::Limits;
use crate::model::LocalSkill;
use crate::paths;
use crate::position::LineIndex;
use crate::toml_walk::unknown_key_help;
use crate::tree::SourceTree;
use crate::yaml;

/// The file that makes a directory a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// The directories of a skill that are packaged with its `SKILL.md`.
pub const SKILL_DIRS: &[&str] = &["scripts", "references", "assets"];
/// Frontmatter keys the Agent Skills format defines.
pub const FRONTMATTER_KEYS: &[&str] = &[
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];
/// Longest `description`, in characters.
pub const MAX_DESCRIPTION: usize = 1024;
/// Longest `compatibility`, in characters.
pub const MAX_COMPATIBILITY: usize = 500;

pub const MISSING_SKILL: Code = Code::new(
    "skill/missing",
    Severity::Error,
    "A local skill reference names a directory without a SKILL.md.",
);
pub const MISSING_FRONTMATTER: Code = Code::new(
    "skill/missing-frontmatter",
    Severity::Error,
    "SKILL.md does not start with a `---` YAML frontmatter block, or the block is not closed.",
);
pub const INVALID_FRONTMATTER: Code = Code::new(
    "skill/invalid-frontmatter",
    Severity::Error,
    "The frontmatter is not valid YAML, not a mapping, or over the YAML limits.",
);
pub const MISSING_FIELD: Code = Code::new(
    "skill/missing-field",
    Severity::Error,
    "The frontmatter lacks `name` or `description`.",
);
pub const UNKNOWN_FIELD: Code = Code::new(
    "skill/unknown-field",
    Severity::Error,
    "A frontmatter key that the Agent Skills format does not define.",
);
pub const WRONG_TYPE: Code = Code::new(
    "skill/wrong-type",
    Severity::Error,
    "A frontmatter value of the wrong YAML type.",
);
pub const INVALID_NAME: Code = Code::new(
    "skill/invalid-name",
    Severity::Warning,
    "`name` is not 1–64 of a–z, 0–9 and `-` without leading, trailing or double hyphens.",
);
pub const NAME_MISMATCH: Code = Code::new(
    "skill/name-mismatch",
    Severity::Error,
    "`name` differs from the skill's directory name.",
);
pub const INVALID_DESCRIPTION: Code = Code::new(
    "skill/invalid-description",
    Severity::Error,
    "`description` is empty or longer than 1024 characters.",
);
pub const INVALID_COMPATIBILITY: Code = Code::new(
    "skill/invalid-compatibility",
    Severity::Error,
    "`compatibility` is empty or longer than 500 characters.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[
    &MISSING_SKILL,
    &MISSING_FRONTMATTER,
    &INVALID_FRONTMATTER,
    &MISSING_FIELD,
    &UNKNOWN_FIELD,
    &WRONG_TYPE,
    &INVALID_NAME,
    &NAME_MISMATCH,
    &INVALID_DESCRIPTION,
    &INVALID_COMPATIBILITY,
];

/// Reads and checks the skill in `dir` (repo-relative). `None` when
/// `SKILL.md` cannot be read or its frontmatter does not parse; field
/// problems still give a best-effort skill.
pub fn read_local_skill(
    tree: &dyn SourceTree,
    limits: &Limits,
    dir: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<LocalSkill> {
    read_skill_named(tree, limits, dir, paths::file_name(dir), diagnostics)
}

/// [`read_local_skill`] for a skill whose `name` must be `expected_name` rather than its
/// directory's name (a catalogue skill lives in `skills/<name>/<version>/`).
pub fn read_skill_named(
    tree: &dyn SourceTree,
    limits: &Limits,
    dir: &str,
    expected_name: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<LocalSkill> {
    let path = paths::join(dir, SKILL_FILE);
    let text = files::read_text(tree, &path, limits.manifest_file, diagnostics)?;
    let mut checker = SkillFile {
        path,
        dir_name: expected_name.to_owned(),
        diagnostics,
    };
    checker.parse(&text, limits)
}

/// The files packaged with the skill in `dir`: its `SKILL.md` (when there is one) and every
/// file under its [`SKILL_DIRS`], in tree order.
pub fn skill_entries<'t>(tree: &'t dyn SourceTree, dir: &str) -> Vec<&'t crate::tree::FileEntry> {
    let skill_md = tree.entry(&paths::join(dir, SKILL_FILE));
    let under = SKILL_DIRS
        .iter()
        .flat_map(|sub| tree.entries_under(&paths::join(dir, sub)));
    skill_md.into_iter().chain(under).collect()
}

/// The frontmatter split out of a SKILL.md: the YAML text, the byte offset
/// where it starts, and the body after it.
struct Split<'t> {
    yaml: &'t str,
    yaml_start: usize,
    body: &'t str,
}

/// Maps parser positions inside the frontmatter to positions in SKILL.md.
struct Frame<'t> {
    index: LineIndex<'t>,
    yaml: &'t str,
    yaml_start: usize,
}

impl Frame<'_> {
    /// The span of a node: exact from byte offsets (string input always has
    /// them), else the parser's line and column below the opening fence.
    fn span(&self, location: serde_saphyr::Location) -> Span {
        let span = location.span();
        match (span.byte_offset(), span.byte_len()) {
            (Some(offset), Some(len)) => {
                let start = self
                    .yaml_start
                    .saturating_add(usize::try_from(offset).unwrap_or(usize::MAX));
                let end = start.saturating_add(usize::try_from(len).unwrap_or(0).max(1));
                self.index.span(start..end)
            }
            // The parser's line counts a lone `\r` as a line break; the
            // index does not, so go through a byte offset.
            _ => {
                let line_column =
                    yaml::line_column_offset(self.yaml, location.line(), location.column());
                let start = self.yaml_start.saturating_add(line_column);
                self.index.span(start..start.saturating_add(1))
            }
        }
    }
}

/// Splits `---\n<yaml>\n---\n<body>`. Written by hand: the fence rules are
/// two lines of logic and no frontmatter crate reports positions.
fn split_frontmatter(text: &str) -> Result<Split<'_>, &'static str> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err("SKILL.md must start with a `---` line opening the YAML frontmatter");
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    for line in lines {
        let fence = line.trim_end();
        if fence == "---" || fence == "..." {
            return Ok(Split {
                yaml: &text[yaml_start..offset],
                yaml_start,
                body: &text[offset + line.len()..],
            });
        }
        offset += line.len();
    }
    Err("the YAML frontmatter is not closed by a `---` line")
}

/// The frontmatter as ordered, spanned key/value pairs.
struct Entries(Vec<(Spanned<String>, Spanned<Value>)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of frontmatter fields")
            }
            fn visit_unit<E>(self) -> Result<Entries, E> {
                Ok(Entries(Vec::new()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor)
    }
}

struct SkillFile<'d> {
    path: String,
    dir_name: String,
    diagnostics: &'d mut Vec<Diagnostic>,
}

/// A frontmatter key or value with its position in SKILL.md.
struct Field<'e> {
    key: &'e Spanned<String>,
    value: &'e Spanned<Value>,
}

impl SkillFile<'_> {
    fn parse(&mut self, text: &str, limits: &Limits) -> Option<LocalSkill> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let split = match split_frontmatter(text) {
            Ok(split) => split,
            Err(message) => {
                self.report(&MISSING_FRONTMATTER, Span::FILE, message).help = Some(
                    "start SKILL.md with `---`, then `name:` and `description:`, then `---`"
                        .to_owned(),
                );
                return None;
            }
        };
        let frame = Frame {
            index: LineIndex::new(text),
            yaml: split.yaml,
            yaml_start: split.yaml_start,
        };
        let entries = self.parse_yaml(&split, &frame, limits)?;
        Some(self.check_fields(&entries, &frame, split.body))
    }

    fn parse_yaml(
        &mut self,
        split: &Split<'_>,
        frame: &Frame<'_>,
        limits: &Limits,
    ) -> Option<Entries> {
        if split.yaml.trim().is_empty() {
            return Some(Entries(Vec::new()));
        }
        let options = frontmatter_options(limits);
        match serde_saphyr::from_str_with_options::<Entries>(split.yaml, options) {
            Ok(entries) => Some(entries),
            Err(error) => {
                let span = error.location().map_or(Span::FILE, |l| frame.span(l));
                let message = first_line(&error.without_snippet().to_string());
                self.report(
                    &INVALID_FRONTMATTER,
                    span,
                    format!("invalid YAML frontmatter: {message}"),
                );
                None
            }
        }
    }

    fn check_fields(&mut self, entries: &Entries, frame: &Frame<'_>, body: &str) -> LocalSkill {
        let mut skill = LocalSkill {
            name: String::new(),
            description: String::new(),
            license: None,
            compatibility: None,
            metadata: BTreeMap::new(),
            allowed_tools: Vec::new(),
            instructions: body.trim_start_matches(['\r', '\n']).to_owned(),
        };
        let mut seen = Vec::new();
        for (key, value) in &entries.0 {
            let field = Field { key, value };
            seen.push(key.value.as_str());
            self.check_field(&field, frame, &mut skill);
        }
        for required in ["name", "description"] {
            if !seen.contains(&required) {
                self.report(
                    &MISSING_FIELD,
                    Span::FILE,
                    format!("the frontmatter has no `{required}`"),
                );
            }
        }
        skill
    }

    fn check_field(&mut self, field: &Field<'_>, frame: &Frame<'_>, skill: &mut LocalSkill) {
        let key = field.key.value.as_str();
        let key_span = frame.span(field.key.referenced);
        let value_span = frame.span(field.value.referenced);
        match key {
            "name" => {
                if let Some(name) = self.string(key, &field.value.value, value_span) {
                    self.check_name(&name, value_span);
                    skill.name = name;
                }
            }
            "description" => {
                if let Some(text) = self.string(key, &field.value.value, value_span) {
                    self.check_length(
                        &INVALID_DESCRIPTION,
                        key,
                        &text,
                        MAX_DESCRIPTION,
                        value_span,
                    );
                    skill.description = text;
                }
            }
            "license" => skill.license = self.string(key, &field.value.value, value_span),
            "compatibility" => {
                if let Some(text) = self.string(key, &field.value.value, value_span) {
                    self.check_length(
                        &INVALID_COMPATIBILITY,
                        key,
                        &text,
                        MAX_COMPATIBILITY,
                        value_span,
                    );
                    skill.compatibility = Some(text);
                }
            }
            "metadata" => skill.metadata = self.metadata(&field.value.value, value_span),
            "allowed-tools" => {
                skill.allowed_tools = self.allowed_tools(&field.value.value, value_span)
            }
            other => {
                let help = unknown_key_help(other, FRONTMATTER_KEYS);
                self.report(
                    &UNKNOWN_FIELD,
                    key_span,
                    format!("unknown frontmatter field `{other}`"),
                )
                .help = Some(help);
            }
        }
    }

    /// A name outside the slug rule is a warning (docs/reference.md §5.1: the packager skill's
    /// `packager.default` registers as written); the name is then compared with the
    /// directory through the slug it plainly means.
    fn check_name(&mut self, name: &str, span: Span) {
        let slug = if paths::is_slug(name) {
            Some(name.to_owned())
        } else {
            self.invalid_name(name, span)
        };
        if slug.as_deref().unwrap_or(name) != self.dir_name {
            let dir = self.dir_name.clone();
            self.report(
                &NAME_MISMATCH,
                span,
                format!("skill name `{name}` differs from its directory name `{dir}`"),
            )
            .help = Some(format!("rename the directory or set `name: {dir}`"));
        }
    }

    /// Reports `name` as not a slug, with a rename to its plain slug when that is the
    /// directory's name and the value is written on one line; returns the plain slug.
    fn invalid_name(&mut self, name: &str, span: Span) -> Option<String> {
        let slug = paths::plain_slug(name);
        let fix = slug
            .as_deref()
            .filter(|slug| *slug == self.dir_name && is_plain_value(name, span))
            .map(|slug| {
                let edit = Edit::new(self.path.clone(), span, slug);
                Fix::one(format!("rename the skill to `{slug}`"), edit)
            });
        let help = if paths::is_slug(&self.dir_name) {
            format!(
                "{}: `name: {}` (the directory name)",
                paths::SLUG_RULE,
                self.dir_name
            )
        } else {
            paths::SLUG_RULE.to_owned()
        };
        let diagnostic = self.report(
            &INVALID_NAME,
            span,
            format!("skill name `{name}` is not valid"),
        );
        diagnostic.help = Some(help);
        diagnostic.fix = fix;
        slug
    }

    fn check_length(&mut self, code: &Code, key: &str, text: &str, max: usize, span: Span) {
        let length = text.chars().count();
        if text.trim().is_empty() {
            self.report(code, span, format!("`{key}` is empty"));
        } else if length > max {
            self.report(
                code,
                span,
                format!("`{key}` is {length} characters, over the {max}-character limit"),
            );
        }
    }

    fn string(&mut self, key: &str, value: &Value, span: Span) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            other => {
                self.wrong_type(key, "a string", other, span);
                None
            }
        }
    }

    /// `metadata` is a map. docs/reference.md §5.1 keeps it free-form; the packager skill nests
    /// JSON objects in it, so non-string values are kept as compact JSON.
    fn metadata(&mut self, value: &Value, span: Span) -> BTreeMap<String, String> {
        let Value::Object(map) = value else {
            self.wrong_type("metadata", "a mapping", value, span);
            return BTreeMap::new();
        };
        map.iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), text)
            })
            .collect()
    }

    /// `allowed-tools`: a space-delimited string (the Agent Skills form) or a list of strings.
    fn allowed_tools(&mut self, value: &Value, span: Span) -> Vec<String> {
        match value {
            Value::String(s) => split_tools(s),
            Value::Array(items) if items.iter().all(Value::is_string) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            other => {
                self.wrong_type(
                    "allowed-tools",
                    "a string or a list of strings",
                    other,
                    span,
                );
                Vec::new()
            }
        }
    }

    fn wrong_type(&mut self, key: &str, expected: &str, found: &Value, span: Span) {
        let found = match found {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "a list",
            Value::Object(_) => "a mapping",
        };
        self.report(
            &WRONG_TYPE,
            span,
            format!("`{key}` must be {expected}, found {found}"),
        );
    }

    fn report(&mut self, code: &Code, span: Span, message: impl Into<String>) -> &mut Diagnostic {
        self.diagnostics
            .push(Diagnostic::new(code, self.path.clone(), span, message));
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }
}

/// Parser options with the same bounds as every other YAML this crate reads
/// (`yaml.rs`): the §11 depth and alias limits, a node cap, a cap on events
/// replayed through aliases (so an alias bomb fails in milliseconds), and
/// duplicate keys rejected. The option structs are non-exhaustive, so they
/// start from the defaults.
fn frontmatter_options(limits: &Limits) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = limits.yaml_depth;
    budget.flow_nesting_limit = limits.yaml_depth;
    budget.max_aliases = limits.yaml_aliases;
    budget.max_nodes = yaml::MAX_NODES;
    budget.max_documents = 1;
    budget.max_events = yaml::MAX_NODES.saturating_mul(4);
    budget.max_recorded_anchor_events = yaml::MAX_REPLAYED_EVENTS;
    let mut alias_limits = serde_saphyr::options::AliasLimits::default();
    alias_limits.max_total_replayed_events = yaml::MAX_REPLAYED_EVENTS;
    alias_limits.max_replay_stack_depth = limits.yaml_depth;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits = alias_limits;
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    options.with_snippet = false;
    options
}

/// Splits a space-delimited tool list, keeping spaces inside parentheses:
/// `Bash(git diff:*) Read` is two tools. Written by hand: a depth counter.
fn split_tools(text: &str) -> Vec<String> {
    let mut tools = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if c.is_whitespace() && depth == 0 {
            if !current.is_empty() {
                tools.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        tools.push(current);
    }
    tools
}

/// The parser's message without its position suffix: the position it gives
/// is relative to the frontmatter, and the diagnostic's span already has the
/// position in SKILL.md.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    match line.rfind(" at line ") {
        Some(i) => line[..i].to_owned(),
        None => line.to_owned(),
    }
}

/// Whether the value at `span` is `name` as a plain or quoted scalar on one line, so that
/// writing a slug over it is certain (a block scalar or a folded line is left alone).
fn is_plain_value(name: &str, span: Span) -> bool {
    let width = span.end_column.saturating_sub(span.column);
    let chars = u32::try_from(name.chars().count()).unwrap_or(u32::MAX);
    span.line == span.end_line && (width == chars || width == chars.saturating_add(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::MemTree;

    fn check(dir: &str, text: &str) -> (Option<LocalSkill>, Vec<(String, u32, u32)>) {
        let tree = MemTree::from_files([(format!("{dir}/SKILL.md"), text)]);
        let mut diagnostics = Vec::new();
        let skill = read_local_skill(&tree, &Limits::DEFAULT, dir, &mut diagnostics);
        let found = diagnostics
            .into_iter()
            .map(|d| (d.code, d.span.line, d.span.column))
            .collect();
        (skill, found)
    }

    #[test]
    fn reads_a_valid_skill() {
        let text = "---\nname: reviewer\ndescription: Reviews code.\nallowed-tools: Bash Read\nmetadata:\n  a: b\n  n: {x: 1}\n---\n\n# Reviewer\n";
        let (skill, found) = check("skills/reviewer", text);
        assert_eq!(found, []);
        let skill = skill.unwrap_or_else(|| unreachable!());
        assert_eq!(skill.allowed_tools, ["Bash", "Read"]);
        assert_eq!(
            skill.metadata.get("n").map(String::as_str),
            Some("{\"x\":1}")
        );
        assert_eq!(skill.instructions, "# Reviewer\n");
    }

    #[test]
    fn tool_lists_keep_parenthesized_spaces() {
        assert_eq!(
            split_tools("Bash(git diff:*)  Read"),
            ["Bash(git diff:*)", "Read"]
        );
    }

    #[test]
    fn positions_point_into_the_frontmatter() {
        let text = "---\nname: Other\ndescripton: x\n---\n";
        let (_, found) = check("skills/reviewer", text);
        let expected = [
            ("skill/invalid-name".to_owned(), 2, 7),
            ("skill/name-mismatch".to_owned(), 2, 7),
            ("skill/unknown-field".to_owned(), 3, 1),
            ("skill/missing-field".to_owned(), 1, 1),
        ];
        assert_eq!(found, expected);
    }

    #[test]
    fn a_dotted_name_is_a_warning_with_a_rename() {
        let text = "---\nname: packager.default\ndescription: Packs.\n---\nbody\n";
        let tree = MemTree::from_files([("skills/packager-default/SKILL.md", text)]);
        let mut diagnostics = Vec::new();
        let dir = "skills/packager-default";
        let skill = read_local_skill(&tree, &Limits::DEFAULT, dir, &mut diagnostics);
        assert_eq!(skill.map(|s| s.name).as_deref(), Some("packager.default"));
        let [warning] = diagnostics.as_slice() else {
            panic!("one warning expected: {diagnostics:?}");
        };
        assert_eq!(warning.severity, Severity::Warning);
        let edits = warning.fix.as_ref().map(|f| f.edits.clone());
        let expected = Edit::new(
            "skills/packager-default/SKILL.md",
            Span::new(2, 7, 2, 23),
            "packager-default",
        );
        assert_eq!(edits, Some(vec![expected]));
    }

    #[test]
    fn a_quoted_name_is_renamed_and_a_block_scalar_is_not() {
        let findings = |text: &str| {
            let tree = MemTree::from_files([("skills/a-b/SKILL.md", text)]);
            let mut diagnostics = Vec::new();
            read_local_skill(&tree, &Limits::DEFAULT, "skills/a-b", &mut diagnostics);
            diagnostics
        };
        let quoted = "---\nname: \"A.B\"\ndescription: x\n---\n";
        let [warning] = findings(quoted)
            .try_into()
            .unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(warning.code, "skill/invalid-name");
        let fixed = warning
            .fix
            .and_then(|f| crate::fix::apply(quoted, &f.edits).ok())
            .unwrap_or_default();
        assert!(findings(&fixed).is_empty(), "{fixed}");
        // `|` keeps the line break, so the name is `A.B\n`: its slug is still `a-b`.
        let block = findings("---\nname: |\n  A.B\ndescription: x\n---\n");
        assert!(block.iter().all(|d| d.fix.is_none()), "{block:?}");
    }
}
