//! The native agent manifest, `astrolift.toml` (docs/reference.md
//! §5.1): identity, brief, skills, the agent workload and
//! its containers, `[environment]`, `[secrets]` and `[package]`.
//!
//! Every rule reports on the offending key or value and reading goes on, so
//! one pass gives every problem plus a best-effort [`AgentManifest`].

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;

use toml::de::{DeTable, DeValue};

use crate::brief;
use crate::diagnostic::{Code, Diagnostic, Fix, Severity, Span};
use crate::discovery::DiscoveredAgent;
use crate::files;
use crate::limits::Limits;
use crate::model::{
    AgentManifest, Container, DEFAULT_EXCLUDES, PackageSpec, SharedMount, SkillRef, Workload,
};
use crate::paths::{self, SLUG_RULE};
use crate::skill;
use crate::toml_walk::{TomlFile, key_span};
use crate::tree::SourceTree;
use crate::triggers;

// Defined in their own modules (config, workspaces and workflows use them
// too); re-exported so `native::RESERVED_ENV` and `native::parse_remote_ref`
// keep working.
pub use crate::remote_ref::parse_remote_ref;
pub use crate::reserved_env::RESERVED_ENV;
use crate::reserved_env::refuse_reserved;

/// The only `astrolift_version` this version reads.
pub const FORMAT_VERSION: i64 = 1;
/// The prefix of every `[secrets]` value.
pub const SECRET_SCHEME: &str = "secret://";

pub const UNSUPPORTED_VERSION: Code = Code::new(
    "manifest/unsupported-version",
    Severity::Error,
    "`astrolift_version` is not 1.",
);
pub const INVALID_NAME: Code = Code::new(
    "manifest/invalid-name",
    Severity::Error,
    "The agent `name` is not a slug.",
);
pub const DUPLICATE_NAME: Code = Code::new(
    "manifest/duplicate-name",
    Severity::Error,
    "Two agents of the repository have the same `name`.",
);
pub const INVALID_SKILL_REF: Code = Code::new(
    "manifest/invalid-skill-ref",
    Severity::Error,
    "A skill reference in none of the three forms (local, `name@version`, `alias/path@ref`).",
);
pub const DUPLICATE_SKILL: Code = Code::new(
    "manifest/duplicate-skill",
    Severity::Warning,
    "The same skill is referenced twice; the later reference is dropped.",
);
pub const NO_AGENT_WORKLOAD: Code = Code::new(
    "manifest/no-agent-workload",
    Severity::Error,
    "No `[[workloads]]` entry has `kind = \"agent\"`.",
);
pub const MULTIPLE_AGENT_WORKLOADS: Code = Code::new(
    "manifest/multiple-agent-workloads",
    Severity::Error,
    "More than one `[[workloads]]` entry has `kind = \"agent\"`.",
);
pub const UNSUPPORTED_WORKLOAD_KIND: Code = Code::new(
    "manifest/unsupported-workload-kind",
    Severity::Error,
    "A workload `kind` other than `agent`: an agent manifest defines exactly one agent workload.",
);
pub const OUT_OF_RANGE: Code = Code::new(
    "manifest/out-of-range",
    Severity::Error,
    "A number outside its range: `max_retries` ≥ 0, `tool_timeout_seconds` and `result_ttl_hours` > 0.",
);
pub const EMPTY_VALUE: Code = Code::new(
    "manifest/empty-value",
    Severity::Error,
    "A string that must not be empty is empty, such as `image_ref`.",
);
pub const NO_PRIMARY_CONTAINER: Code = Code::new(
    "manifest/no-primary-container",
    Severity::Error,
    "The agent workload has no container with `is_primary = true`.",
);
pub const MULTIPLE_PRIMARY_CONTAINERS: Code = Code::new(
    "manifest/multiple-primary-containers",
    Severity::Error,
    "More than one container of the agent workload has `is_primary = true`.",
);
pub const RESERVED_ENV_VAR: Code = Code::new(
    "manifest/reserved-env",
    Severity::Warning,
    "`[environment]` or `[secrets]` sets a runtime variable the dispatcher owns; it is ignored.",
);
pub const INVALID_ENV_NAME: Code = Code::new(
    "manifest/invalid-env-name",
    Severity::Error,
    "An `[environment]` or `[secrets]` name is not a valid variable name.",
);
pub const PLAINTEXT_SECRET: Code = Code::new(
    "manifest/plaintext-secret",
    Severity::Error,
    "A `[secrets]` value is not a `secret://` reference. The value is never shown.",
);
pub const EMPTY_SECRET_REF: Code = Code::new(
    "manifest/empty-secret-ref",
    Severity::Error,
    "A `[secrets]` value is `secret://` with no name after it.",
);
pub const MISSING_PACKAGE_ROOT: Code = Code::new(
    "manifest/missing-package-root",
    Severity::Error,
    "`[package] root` names a directory that does not exist.",
);
pub const MISSING_SHARED_SOURCE: Code = Code::new(
    "manifest/missing-shared-source",
    Severity::Error,
    "A `[[package.shared]]` `source` does not exist in the repository.",
);
pub const INVALID_MOUNT: Code = Code::new(
    "manifest/invalid-mount",
    Severity::Error,
    "A `[[package.shared]]` `mount` is the package root itself rather than a path inside it.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[
    &UNSUPPORTED_VERSION,
    &INVALID_NAME,
    &DUPLICATE_NAME,
    &INVALID_SKILL_REF,
    &DUPLICATE_SKILL,
    &NO_AGENT_WORKLOAD,
    &MULTIPLE_AGENT_WORKLOADS,
    &UNSUPPORTED_WORKLOAD_KIND,
    &OUT_OF_RANGE,
    &EMPTY_VALUE,
    &NO_PRIMARY_CONTAINER,
    &MULTIPLE_PRIMARY_CONTAINERS,
    &RESERVED_ENV_VAR,
    &INVALID_ENV_NAME,
    &PLAINTEXT_SECRET,
    &EMPTY_SECRET_REF,
    &MISSING_PACKAGE_ROOT,
    &MISSING_SHARED_SOURCE,
    &INVALID_MOUNT,
];

/// Top-level keys. `triggers` is read by the trigger-binding rules (`triggers.rs`).
pub const ROOT_KEYS: &[&str] = &[
    "astrolift_version",
    "name",
    "brief",
    "skills",
    "workloads",
    "environment",
    "secrets",
    "package",
    "triggers",
];
const WORKLOAD_KEYS: &[&str] = &[
    "name",
    "kind",
    "run_family",
    "max_retries",
    "tool_timeout_seconds",
    "result_ttl_hours",
    "containers",
];
const CONTAINER_KEYS: &[&str] = &["name", "is_primary", "image_ref"];
const PACKAGE_KEYS: &[&str] = &["root", "include", "exclude", "executables", "shared"];
const SHARED_KEYS: &[&str] = &["source", "mount"];
const AGENT_KIND: &str = "agent";

/// One validated manifest: the model, and where its `name` is (for the
/// repository-wide uniqueness rule).
#[derive(Debug, Clone)]
pub struct NativeManifest {
    pub agent: AgentManifest,
    pub name_span: Option<Span>,
}

/// Reads and validates one discovered manifest. `None` when the file cannot
/// be read at all (the reason is a diagnostic).
pub fn read_manifest(
    tree: &dyn SourceTree,
    limits: &Limits,
    discovered: &DiscoveredAgent,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<NativeManifest> {
    let path = discovered.manifest.as_str();
    let text = files::read_text(tree, path, limits.manifest_file, diagnostics)?;
    let (mut file, root) = TomlFile::parse(path, &text);
    let mut reader = ManifestReader {
        file: &mut file,
        tree,
        limits,
        dir: paths::parent(path).to_owned(),
    };
    let manifest = reader.read(root.get_ref(), discovered);
    diagnostics.append(&mut file.diagnostics);
    Some(manifest)
}

struct ManifestReader<'f, 'i, 't> {
    file: &'f mut TomlFile<'i>,
    tree: &'t dyn SourceTree,
    limits: &'t Limits,
    /// Repo-relative directory of the manifest.
    dir: String,
}

impl<'i> ManifestReader<'_, 'i, '_> {
    fn read(&mut self, table: &DeTable<'i>, discovered: &DiscoveredAgent) -> NativeManifest {
        self.file.check_keys(table, ROOT_KEYS, "astrolift.toml");
        self.check_version(table);
        let (name, name_span) = self.name(table);
        let package = self.package(table);
        let brief = self.brief(table);
        let (skills, reference_spans) = self.skills(table, &package.root);
        let workload = self.workloads(table);
        let environment = self.environment(table);
        let secrets = self.secrets(table);
        let root = triggers::SampleRoot {
            tree: self.tree,
            dir: &self.dir,
        };
        let bindings = triggers::read_triggers(self.file, table, Some(root));
        let agent = AgentManifest {
            manifest: discovered.manifest.clone(),
            dir: self.dir.clone(),
            name,
            alias: discovered.alias.clone(),
            enabled: discovered.enabled,
            brief,
            skills,
            workload,
            environment,
            secrets,
            package,
            triggers: bindings.specs,
            reference_spans,
            trigger_spans: bindings.spans,
        };
        NativeManifest { agent, name_span }
    }

    fn check_version(&mut self, table: &DeTable<'i>) {
        if table.get("astrolift_version").is_none() {
            self.file
                .missing(0..0, "astrolift_version", "astrolift.toml");
            return;
        }
        if let Some((version, range)) = self.file.int(table, "astrolift_version")
            && version != FORMAT_VERSION
        {
            self.file
                .report(
                    &UNSUPPORTED_VERSION,
                    range,
                    format!("unsupported `astrolift_version = {version}`"),
                )
                .help = Some(format!(
                "this version reads `astrolift_version = {FORMAT_VERSION}`"
            ));
        }
    }

    fn name(&mut self, table: &DeTable<'i>) -> (String, Option<Span>) {
        if table.get("name").is_none() {
            self.file.missing(0..0, "name", "astrolift.toml");
            return (String::new(), None);
        }
        let Some((name, range)) = self.file.str(table, "name") else {
            return (String::new(), None);
        };
        if !paths::is_slug(name) {
            let fix = paths::plain_slug(name).map(|slug| {
                let description = format!("rename the agent to `{slug}`");
                Fix::one(
                    description,
                    self.file.edit(range.clone(), format!("\"{slug}\"")),
                )
            });
            let diagnostic = self.file.report(
                &INVALID_NAME,
                range.clone(),
                format!("agent name `{name}` is not a slug"),
            );
            diagnostic.help = Some(SLUG_RULE.to_owned());
            diagnostic.fix = fix;
        }
        (name.to_owned(), Some(self.file.span(range)))
    }

    fn brief(&mut self, table: &DeTable<'i>) -> Option<crate::model::Brief> {
        let (value, range) = self.file.str(table, "brief")?;
        let relative = paths::check_path_field(self.file, value, range.clone(), "`brief`")?;
        let path = paths::join(&self.dir, &relative);
        brief::read_brief(self.file, self.tree, self.limits, &path, range)
    }

    // ----- skills -----

    /// The skill references in order, and where each remote one is written.
    fn skills(
        &mut self,
        table: &DeTable<'i>,
        package_root: &str,
    ) -> (Vec<SkillRef>, BTreeMap<String, Span>) {
        let mut spans = BTreeMap::new();
        let Some((array, _)) = self.file.array(table, "skills") else {
            return (Vec::new(), spans);
        };
        let mut skills: Vec<SkillRef> = Vec::with_capacity(array.len());
        // A set, not a scan of `skills`: 100,000 references stay linear.
        let mut seen: HashSet<SkillIdentity> = HashSet::with_capacity(array.len());
        let mut previous_end: Option<usize> = None;
        for item in array.iter() {
            let end = previous_end.replace(item.span().end);
            let Some(skill) = self.skill_ref(item.get_ref(), item.span(), package_root) else {
                continue;
            };
            if !seen.insert(skill_identity(&skill)) {
                let fix = end.and_then(|end| self.remove_array_item(end, item.span()));
                let diagnostic = self.file.report(
                    &DUPLICATE_SKILL,
                    item.span(),
                    "this skill is already referenced; this reference is dropped",
                );
                diagnostic.help = Some(
                    "remove the repeated reference; the first one keeps its place in the order"
                        .to_owned(),
                );
                diagnostic.fix = fix;
                continue;
            }
            if let Some(reference) = skill.remote_reference() {
                spans.insert(reference, self.file.span(item.span()));
            }
            skills.push(skill);
        }
        (skills, spans)
    }

    /// Removes an array item that is not the first: from the end of the
    /// item before it (`previous_end`) to its own end, so the separator goes
    /// with it. Not when a comment stands between them (it would go too).
    fn remove_array_item(&self, previous_end: usize, item: Range<usize>) -> Option<Fix> {
        let between = self.file.index.text().get(previous_end..item.start)?;
        if between.contains('#') || !between.contains(',') {
            return None;
        }
        let edit = self.file.edit(previous_end..item.end, "");
        Some(Fix::one("remove the repeated reference", edit))
    }

    fn skill_ref(
        &mut self,
        value: &DeValue<'i>,
        range: Range<usize>,
        package_root: &str,
    ) -> Option<SkillRef> {
        match value {
            DeValue::Table(table) => self.local_table_ref(table, range, package_root),
            DeValue::String(text) => self.string_ref(text, range, package_root),
            other => {
                let found = other.type_str();
                self.invalid_skill_ref(
                    range,
                    format!("a skill reference must be a string or a one-key table, found {found}"),
                );
                None
            }
        }
    }

    /// `{ local_name = "skills/path" }`.
    fn local_table_ref(
        &mut self,
        table: &DeTable<'i>,
        range: Range<usize>,
        package_root: &str,
    ) -> Option<SkillRef> {
        let mut entries = table.iter();
        let (Some((key, value)), None) = (entries.next(), entries.next()) else {
            self.invalid_skill_ref(
                range,
                "a local skill table must have exactly one key: `{ local_name = \"skills/path\" }`"
                    .to_owned(),
            );
            return None;
        };
        let local_name = key.get_ref().to_string();
        if !paths::is_slug(&local_name) {
            self.file
                .report(
                    &INVALID_SKILL_REF,
                    key.span(),
                    format!("local skill name `{local_name}` is not a slug"),
                )
                .help = Some(SLUG_RULE.to_owned());
            return None;
        }
        let Some(path) = value.get_ref().as_str() else {
            let found = value.get_ref().type_str();
            self.invalid_skill_ref(
                value.span(),
                format!("`{local_name}` must name a skill directory as a string, found {found}"),
            );
            return None;
        };
        self.local_ref(local_name, path, value.span(), package_root)
    }

    fn string_ref(
        &mut self,
        text: &str,
        range: Range<usize>,
        package_root: &str,
    ) -> Option<SkillRef> {
        if text.starts_with("./") {
            let relative = paths::check_path_field(self.file, text, range.clone(), "skill path")?;
            let local_name = paths::file_name(&relative).to_owned();
            return self.local_ref(local_name, text, range, package_root);
        }
        match parse_remote_ref(text) {
            Ok(skill) => Some(skill),
            Err(reason) => {
                let help = if !text.contains('@') && !text.contains(':') {
                    format!(
                        "a local skill is written `\"./{text}\"` or `{{ name = \"{text}\" }}`; a catalogue skill `\"name@1.2.0\"`; an organization skill `\"alias/path/to/skill@main\"`"
                    )
                } else {
                    "write `\"./skills/path\"`, `\"name@1.2.0\"` or `\"alias/path/to/skill@ref\"`"
                        .to_owned()
                };
                self.invalid_skill_ref(
                    range,
                    format!("`{text}` is not a skill reference: {reason}"),
                )
                .help = Some(help);
                None
            }
        }
    }

    /// A local skill directory, relative to the package root.
    fn local_ref(
        &mut self,
        local_name: String,
        path: &str,
        range: Range<usize>,
        package_root: &str,
    ) -> Option<SkillRef> {
        let relative = paths::check_path_field(self.file, path, range.clone(), "skill path")?;
        let dir = paths::join(package_root, &relative);
        let skill_md = paths::join(&dir, skill::SKILL_FILE);
        let skill = if self.tree.is_file(&skill_md) {
            skill::read_local_skill(self.tree, self.limits, &dir, &mut self.file.diagnostics)
        } else {
            let what = if self.tree.is_dir(&dir) {
                "has no SKILL.md"
            } else {
                "does not exist"
            };
            self.file
                .report(&skill::MISSING_SKILL, range, format!("local skill directory `{dir}` {what}"))
                .help = Some("local skill paths are relative to the package root (`[package] root`, default the manifest's directory)".to_owned());
            None
        };
        Some(SkillRef::Local {
            local_name,
            dir,
            skill,
        })
    }

    fn invalid_skill_ref(&mut self, range: Range<usize>, message: String) -> &mut Diagnostic {
        self.file.report(&INVALID_SKILL_REF, range, message)
    }

    // ----- workloads -----

    fn workloads(&mut self, table: &DeTable<'i>) -> Option<Workload> {
        let entries = self.file.table_array(table, "workloads");
        let mut agent: Option<Workload> = None;
        for (entry, entry_range) in entries {
            let Some(workload) = self.workload(entry, entry_range) else {
                continue;
            };
            if agent.is_some() {
                let range = entry.get("kind").map_or(0..0, |k| k.span());
                self.file
                    .report(
                        &MULTIPLE_AGENT_WORKLOADS,
                        range,
                        "a second workload with `kind = \"agent\"`",
                    )
                    .help = Some("an agent manifest defines exactly one agent workload".to_owned());
                continue;
            }
            agent = Some(workload);
        }
        if agent.is_none() && !self.has_agent_kind(table) {
            let range = key_span(table, "workloads").unwrap_or(0..0);
            self.file
                .report(&NO_AGENT_WORKLOAD, range, "no workload has `kind = \"agent\"`")
                .help = Some("add `[[workloads]]` with `name`, `kind = \"agent\"` and one primary `[[workloads.containers]]`".to_owned());
        }
        agent
    }

    /// True when some workload says `kind = "agent"` (even one that failed
    /// other checks), so a broken agent workload is not also reported missing.
    fn has_agent_kind(&self, table: &DeTable<'i>) -> bool {
        let Some(DeValue::Array(items)) = table.get("workloads").map(|w| w.get_ref()) else {
            return false;
        };
        items.iter().any(|item| {
            item.get_ref()
                .as_table()
                .and_then(|t| t.get("kind"))
                .and_then(|k| k.get_ref().as_str())
                == Some(AGENT_KIND)
        })
    }

    /// Checks one workload; returns it only when it is the agent kind.
    fn workload(&mut self, entry: &DeTable<'i>, entry_range: Range<usize>) -> Option<Workload> {
        self.file
            .check_keys(entry, WORKLOAD_KEYS, "a [[workloads]] entry");
        let name = self.required_str(entry, "name", entry_range.clone(), "a [[workloads]] entry");
        let kind = self.required_str(entry, "kind", entry_range.clone(), "a [[workloads]] entry");
        let run_family = self.non_empty_str(entry, "run_family");
        let max_retries = self
            .bounded_int(entry, "max_retries", 0)
            .and_then(|n| u32::try_from(n).ok());
        let tool_timeout_seconds = self
            .bounded_int(entry, "tool_timeout_seconds", 1)
            .and_then(|n| u64::try_from(n).ok());
        let result_ttl_hours = self
            .bounded_int(entry, "result_ttl_hours", 1)
            .and_then(|n| u64::try_from(n).ok());
        let is_agent = kind.as_deref() == Some(AGENT_KIND);
        let containers = self.containers(entry, entry_range, is_agent);
        let kind = kind?;
        if kind != AGENT_KIND {
            let range = entry.get("kind").map_or(0..0, |k| k.span());
            self.file
                .report(
                    &UNSUPPORTED_WORKLOAD_KIND,
                    range,
                    format!("workload kind `{kind}` is not supported here"),
                )
                .help = Some(
                "an agent manifest defines exactly one workload, with `kind = \"agent\"`"
                    .to_owned(),
            );
            return None;
        }
        Some(Workload {
            name: name.unwrap_or_default(),
            run_family,
            max_retries,
            tool_timeout_seconds,
            result_ttl_hours,
            containers,
        })
    }

    /// The workload's containers; the one-primary rule applies to the agent workload.
    fn containers(
        &mut self,
        workload: &DeTable<'i>,
        workload_range: Range<usize>,
        is_agent: bool,
    ) -> Vec<Container> {
        let mut containers = Vec::new();
        let mut primaries = 0;
        for (entry, entry_range) in self.file.table_array(workload, "containers") {
            self.file
                .check_keys(entry, CONTAINER_KEYS, "a [[workloads.containers]] entry");
            let name = self.non_empty_str(entry, "name").unwrap_or_default();
            let image_ref = self.required_str(
                entry,
                "image_ref",
                entry_range.clone(),
                "a [[workloads.containers]] entry",
            );
            let is_primary = self.file.bool(entry, "is_primary");
            if let Some((true, range)) = is_primary.clone() {
                primaries += 1;
                if primaries > 1 {
                    self.file
                        .report(
                            &MULTIPLE_PRIMARY_CONTAINERS,
                            range,
                            "a second container with `is_primary = true`",
                        )
                        .help = Some("exactly one container of the workload is primary".to_owned());
                }
            }
            containers.push(Container {
                name,
                is_primary: is_primary.is_some_and(|(b, _)| b),
                image_ref: image_ref.unwrap_or_default(),
            });
        }
        if is_agent && primaries == 0 {
            let range = key_span(workload, "containers").unwrap_or(workload_range);
            self.file
                .report(
                    &NO_PRIMARY_CONTAINER,
                    range,
                    "no container has `is_primary = true`",
                )
                .help = Some(
                "add `[[workloads.containers]]` with `is_primary = true` and an `image_ref`"
                    .to_owned(),
            );
        }
        containers
    }

    /// A required, non-empty string.
    fn required_str(
        &mut self,
        table: &DeTable<'i>,
        key: &str,
        at: Range<usize>,
        context: &str,
    ) -> Option<String> {
        if table.get(key).is_none() {
            self.file.missing(at, key, context);
            return None;
        }
        self.non_empty_str(table, key)
    }

    /// An optional string that must not be empty when present.
    fn non_empty_str(&mut self, table: &DeTable<'i>, key: &str) -> Option<String> {
        let (value, range) = self.file.str(table, key)?;
        if value.trim().is_empty() {
            self.file
                .report(&EMPTY_VALUE, range, format!("`{key}` must not be empty"));
            return None;
        }
        Some(value.to_owned())
    }

    /// An optional integer that must be at least `min`.
    fn bounded_int(&mut self, table: &DeTable<'i>, key: &str, min: i64) -> Option<i64> {
        let (value, range) = self.file.int(table, key)?;
        if value < min {
            let rule = if min == 0 { "≥ 0" } else { "> 0" };
            self.file.report(
                &OUT_OF_RANGE,
                range,
                format!("`{key}` is {value}; it must be {rule}"),
            );
            return None;
        }
        Some(value)
    }

    // ----- environment and secrets -----

    fn environment(&mut self, table: &DeTable<'i>) -> BTreeMap<String, String> {
        let mut environment = BTreeMap::new();
        let Some((env, _)) = self.file.table(table, "environment") else {
            return environment;
        };
        for (key, _) in env.iter() {
            let name = key.get_ref().as_ref();
            if !self.check_env_name(name, key.span(), "[environment]") {
                continue;
            }
            let value = self.file.str(env, name).map(|(v, _)| v.to_owned());
            let entry_end = env.get(name).map(|item| item.span().end);
            if self.refused_as_reserved("[environment]", "value", name, key.span(), entry_end) {
                continue;
            }
            if let Some(value) = value {
                environment.insert(name.to_owned(), value);
            }
        }
        environment
    }

    /// Whether `name`, a key of `section`, is a reserved runtime variable: then it is
    /// reported ([`refuse_reserved`], with help) and the caller drops the entry.
    fn refused_as_reserved(
        &mut self,
        section: &str,
        what: &str,
        name: &str,
        key: Range<usize>,
        entry_end: Option<usize>,
    ) -> bool {
        let message = format!("`{name}` is a reserved runtime variable; this {what} is ignored");
        let refused = refuse_reserved(
            self.file,
            &RESERVED_ENV_VAR,
            section,
            name,
            key,
            entry_end,
            message,
        );
        let Some(diagnostic) = refused else {
            return false;
        };
        diagnostic.help = Some(format!(
            "the dispatcher sets it for every run; remove it from {section}"
        ));
        true
    }

    fn secrets(&mut self, table: &DeTable<'i>) -> BTreeMap<String, String> {
        let mut secrets = BTreeMap::new();
        let Some((section, _)) = self.file.table(table, "secrets") else {
            return secrets;
        };
        for (key, item) in section.iter() {
            let name = key.get_ref().as_ref();
            let entry_end = Some(item.span().end);
            if self.refused_as_reserved("[secrets]", "secret", name, key.span(), entry_end) {
                continue;
            }
            let valid_name = self.check_env_name(name, key.span(), "[secrets]");
            // `str` reports a non-string by type only, never by value.
            let Some((value, range)) = self.file.str(section, name) else {
                continue;
            };
            match value.strip_prefix(SECRET_SCHEME) {
                Some(rest) if !rest.trim().is_empty() => {
                    if valid_name {
                        secrets.insert(name.to_owned(), value.to_owned());
                    }
                }
                Some(_) => {
                    self.file
                        .report(
                            &EMPTY_SECRET_REF,
                            range,
                            format!("`{name}` is `secret://` with no secret name"),
                        )
                        .help = Some(format!("write `{name} = \"secret://agents/<name>\"`"));
                }
                None => {
                    // Never echo the value: it may be a real credential.
                    self.file
                        .report(&PLAINTEXT_SECRET, range, format!("`{name}` in [secrets] is a plaintext value, not a `secret://` reference"))
                        .help = Some(format!("store the value in the secret store and write `{name} = \"secret://agents/<name>\"`; rotate the credential if it was committed"));
                }
            }
        }
        secrets
    }

    /// Checks `[A-Za-z_][A-Za-z0-9_]*`; reports and returns false otherwise.
    fn check_env_name(&mut self, name: &str, range: Range<usize>, context: &str) -> bool {
        let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            self.file
                .report(
                    &INVALID_ENV_NAME,
                    range,
                    format!("`{name}` in {context} is not a valid variable name"),
                )
                .help = Some(
                "use letters, digits and `_`, not starting with a digit, such as `LOG_LEVEL`"
                    .to_owned(),
            );
        }
        valid
    }

    // ----- package -----

    fn package(&mut self, table: &DeTable<'i>) -> PackageSpec {
        let mut spec = PackageSpec {
            declared: false,
            root: self.dir.clone(),
            include: vec!["**".to_owned()],
            exclude: DEFAULT_EXCLUDES.iter().map(|s| (*s).to_owned()).collect(),
            executables: Vec::new(),
            shared: Vec::new(),
        };
        let Some((package, package_range)) = self.file.table(table, "package") else {
            return spec;
        };
        spec.declared = true;
        self.file.check_keys(package, PACKAGE_KEYS, "[package]");
        if let Some(root) = self.package_root(package, package_range) {
            spec.root = root;
        }
        for (key, field) in [
            ("include", &mut spec.include),
            ("exclude", &mut spec.exclude),
            ("executables", &mut spec.executables),
        ] {
            let what = format!("`[package] {key}` glob");
            if let Some(patterns) = paths::glob_list_patterns(self.file, package, key, &what) {
                *field = patterns;
            }
        }
        spec.shared = self.shared_mounts(package);
        spec
    }

    fn package_root(
        &mut self,
        package: &DeTable<'i>,
        _package_range: Range<usize>,
    ) -> Option<String> {
        let (value, range) = self.file.str(package, "root")?;
        let relative =
            paths::check_path_field(self.file, value, range.clone(), "`[package] root`")?;
        let root = paths::join(&self.dir, &relative);
        if !self.tree.is_dir(&root) {
            self.file
                .report(&MISSING_PACKAGE_ROOT, range, format!("package root `{root}` is not a directory of the repository"))
                .help = Some("`root` is relative to the manifest's directory; `\".\"` is the manifest's directory".to_owned());
            return None;
        }
        Some(root)
    }

    fn shared_mounts(&mut self, package: &DeTable<'i>) -> Vec<SharedMount> {
        let mut mounts = Vec::new();
        for (entry, entry_range) in self.file.table_array(package, "shared") {
            self.file
                .check_keys(entry, SHARED_KEYS, "a [[package.shared]] entry");
            let source = self.shared_source(entry, entry_range.clone());
            let mount = self.shared_mount(entry, entry_range);
            if let (Some(source), Some(mount)) = (source, mount) {
                mounts.push(SharedMount { source, mount });
            }
        }
        mounts
    }

    fn shared_source(&mut self, entry: &DeTable<'i>, entry_range: Range<usize>) -> Option<String> {
        if entry.get("source").is_none() {
            self.file
                .missing(entry_range, "source", "a [[package.shared]] entry");
            return None;
        }
        let (value, range) = self.file.str(entry, "source")?;
        let source = paths::check_path_field(self.file, value, range.clone(), "`source`")?;
        if source.is_empty() || !(self.tree.is_file(&source) || self.tree.is_dir(&source)) {
            self.file
                .report(
                    &MISSING_SHARED_SOURCE,
                    range,
                    format!("shared source `{value}` does not exist in the repository"),
                )
                .help =
                Some("`source` is relative to the repository root, not to the manifest".to_owned());
            return None;
        }
        Some(source)
    }

    fn shared_mount(&mut self, entry: &DeTable<'i>, entry_range: Range<usize>) -> Option<String> {
        if entry.get("mount").is_none() {
            self.file
                .missing(entry_range, "mount", "a [[package.shared]] entry");
            return None;
        }
        let (value, range) = self.file.str(entry, "mount")?;
        let mount = paths::check_path_field(self.file, value, range.clone(), "`mount`")?;
        if mount.is_empty() {
            self.file
                .report(
                    &INVALID_MOUNT,
                    range,
                    format!("mount `{value}` is the package root, not a path inside it"),
                )
                .help =
                Some("mount the source at a subdirectory, such as `shared/schemas`".to_owned());
            return None;
        }
        Some(mount)
    }
}

/// What makes two skill references the same skill: the local directory,
/// the catalogue name, or the organization repository and path, whatever
/// version or ref they ask for.
#[derive(Debug, PartialEq, Eq, Hash)]
enum SkillIdentity {
    Local(String),
    Catalogue(String),
    Org(String, String),
}

fn skill_identity(skill: &SkillRef) -> SkillIdentity {
    match skill {
        SkillRef::Local { dir, .. } => SkillIdentity::Local(dir.clone()),
        SkillRef::Catalogue { name, .. } => SkillIdentity::Catalogue(name.clone()),
        SkillRef::Org {
            repo_alias, path, ..
        } => SkillIdentity::Org(repo_alias.clone(), path.clone()),
    }
}
