//! `astrolift.agents.toml`: the federation file that selects a monorepo's agents
//! (docs/reference.md §5.2).

use std::collections::HashMap;

use globset::GlobSet;
use toml::de::DeTable;

use crate::diagnostic::{Code, Diagnostic, Fix, Severity, Span};
use crate::paths::{self, SLUG_RULE};
use crate::toml_walk::TomlFile;

/// The federation file's path, at the repository root.
pub const FEDERATION_FILE: &str = "astrolift.agents.toml";
/// The one `schema` this version reads.
pub const SCHEMA_V1: &str = "astrolift.agent.federation/v1";
/// `include` when the file has none: the legacy discovery selection.
pub const DEFAULT_INCLUDE: &[&str] = &["astrolift.toml", "agents/*/astrolift.toml"];

pub const UNSUPPORTED_SCHEMA: Code = Code::new(
    "federation/unsupported-schema",
    Severity::Error,
    "`schema` is not `astrolift.agent.federation/v1`.",
);
pub const INVALID_NAME: Code = Code::new(
    "federation/invalid-name",
    Severity::Error,
    "The federation `name` is not a slug.",
);
pub const MISSING_MANIFEST: Code = Code::new(
    "federation/missing-manifest",
    Severity::Error,
    "An `[[agents]]` entry names a manifest that does not exist.",
);
pub const DUPLICATE_MANIFEST: Code = Code::new(
    "federation/duplicate-manifest",
    Severity::Error,
    "Two `[[agents]]` entries name the same manifest.",
);
pub const INVALID_ALIAS: Code = Code::new(
    "federation/invalid-alias",
    Severity::Error,
    "An `[[agents]]` alias is not a slug.",
);
pub const DUPLICATE_ALIAS: Code = Code::new(
    "federation/duplicate-alias",
    Severity::Error,
    "Two `[[agents]]` entries use the same alias.",
);
pub const EXCLUDED_MANIFEST: Code = Code::new(
    "federation/excluded-manifest",
    Severity::Notice,
    "A listed manifest matches an `exclude` glob, so it is not selected (exclusions win).",
);
pub const UNLISTED_MANIFEST: Code = Code::new(
    "federation/unlisted-manifest",
    Severity::Notice,
    "A manifest matches `include` but is not listed, and `auto_register_new` is false.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[
    &UNSUPPORTED_SCHEMA,
    &INVALID_NAME,
    &MISSING_MANIFEST,
    &DUPLICATE_MANIFEST,
    &INVALID_ALIAS,
    &DUPLICATE_ALIAS,
    &EXCLUDED_MANIFEST,
    &UNLISTED_MANIFEST,
];

const ROOT_KEYS: &[&str] = &[
    "schema",
    "name",
    "include",
    "exclude",
    "auto_register_new",
    "agents",
    "workspaces",
    "workflows",
];
const AGENT_KEYS: &[&str] = &["manifest", "alias", "enabled"];

/// One `[[agents]]` entry that checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FederatedAgent {
    /// Repo-relative, normalized.
    pub manifest: String,
    pub alias: Option<String>,
    pub enabled: bool,
    /// The span of the `manifest` value, for diagnostics about the entry.
    pub manifest_span: Span,
}

/// The federation file, read as far as it checks out.
#[derive(Debug, Clone)]
pub struct Federation {
    pub name: Option<String>,
    pub include: GlobSet,
    pub exclude: GlobSet,
    pub auto_register_new: bool,
    /// Listed entries, in file order; entries with a bad path are dropped.
    pub agents: Vec<FederatedAgent>,
    /// `workspaces = [globs]`, when the file has the key.
    pub workspaces: Option<GlobSet>,
    /// `workflows = [globs]`, when the file has the key (else `workflows/*.toml`).
    pub workflows: Option<GlobSet>,
}

/// Parses the federation file's text; every problem lands in `diagnostics`.
pub fn parse(text: &str, diagnostics: &mut Vec<Diagnostic>) -> Federation {
    let (mut file, root) = TomlFile::parse(FEDERATION_FILE, text);
    let table = root.get_ref();
    file.check_keys(table, ROOT_KEYS, "astrolift.agents.toml");
    check_schema(&mut file, table);
    let name = federation_name(&mut file, table);
    let include = match paths::glob_list_field(&mut file, table, "include", "`include` glob") {
        Some((_, set)) => set,
        None => default_include(),
    };
    let exclude = paths::glob_list_field(&mut file, table, "exclude", "`exclude` glob")
        .map(|(_, set)| set)
        .unwrap_or_else(GlobSet::empty);
    let auto_register_new = file
        .bool(table, "auto_register_new")
        .is_some_and(|(b, _)| b);
    let workspaces = paths::glob_list_field(&mut file, table, "workspaces", "`workspaces` glob")
        .map(|(_, set)| set);
    let workflows = paths::glob_list_field(&mut file, table, "workflows", "`workflows` glob")
        .map(|(_, set)| set);
    let agents = listed_agents(&mut file, table);
    diagnostics.append(&mut file.diagnostics);
    Federation {
        name,
        include,
        exclude,
        auto_register_new,
        agents,
        workspaces,
        workflows,
    }
}

fn default_include() -> GlobSet {
    paths::glob_set(
        DEFAULT_INCLUDE
            .iter()
            .filter_map(|p| paths::compile_glob(p).ok()),
    )
}

fn check_schema<'i>(file: &mut TomlFile<'i>, table: &DeTable<'i>) {
    match file.str(table, "schema") {
        Some((SCHEMA_V1, _)) => {}
        Some((other, range)) => {
            let message = format!("unsupported federation schema `{other}`");
            file.report(&UNSUPPORTED_SCHEMA, range, message).help =
                Some(format!("write `schema = \"{SCHEMA_V1}\"`"));
        }
        None if table.get("schema").is_none() => {
            let line = format!("schema = \"{SCHEMA_V1}\"{}", file.index.newline());
            let fix = Fix::one("add the `schema` line", file.edit(0..0, line));
            file.missing(0..0, "schema", "astrolift.agents.toml");
            if let Some(missing) = file.diagnostics.last_mut() {
                missing.fix = Some(fix);
            }
        }
        None => {}
    }
}

fn federation_name<'i>(file: &mut TomlFile<'i>, table: &DeTable<'i>) -> Option<String> {
    if table.get("name").is_none() {
        file.missing(0..0, "name", "astrolift.agents.toml");
        return None;
    }
    let (name, range) = file.str(table, "name")?;
    if !paths::is_slug(name) {
        file.report(
            &INVALID_NAME,
            range,
            format!("federation name `{name}` is not a slug"),
        )
        .help = Some(SLUG_RULE.to_owned());
    }
    Some(name.to_owned())
}

fn listed_agents<'i>(file: &mut TomlFile<'i>, table: &DeTable<'i>) -> Vec<FederatedAgent> {
    let mut agents = Vec::new();
    let mut seen_manifests: HashMap<String, Span> = HashMap::new();
    let mut seen_aliases: HashMap<String, Span> = HashMap::new();
    for (entry, entry_range) in file.table_array(table, "agents") {
        file.check_keys(entry, AGENT_KEYS, "an [[agents]] entry");
        let alias = entry_alias(file, entry, &mut seen_aliases);
        let enabled = file.bool(entry, "enabled").is_none_or(|(b, _)| b);
        let Some((manifest, range)) = file.str(entry, "manifest") else {
            if entry.get("manifest").is_none() {
                file.missing(entry_range, "manifest", "an [[agents]] entry");
            }
            continue;
        };
        let Some(manifest) = paths::check_path_field(file, manifest, range.clone(), "`manifest`")
        else {
            continue;
        };
        let manifest_span = file.span(range.clone());
        if let Some(first) = seen_manifests.get(&manifest) {
            let line = first.line;
            file.report(
                &DUPLICATE_MANIFEST,
                range,
                format!("`{manifest}` is already listed on line {line}"),
            )
            .help = Some("remove one of the two [[agents]] entries".to_owned());
            continue;
        }
        seen_manifests.insert(manifest.clone(), manifest_span);
        agents.push(FederatedAgent {
            manifest,
            alias,
            enabled,
            manifest_span,
        });
    }
    agents
}

fn entry_alias<'i>(
    file: &mut TomlFile<'i>,
    entry: &DeTable<'i>,
    seen: &mut HashMap<String, Span>,
) -> Option<String> {
    let (alias, range) = file.str(entry, "alias")?;
    if !paths::is_slug(alias) {
        file.report(
            &INVALID_ALIAS,
            range,
            format!("alias `{alias}` is not a slug"),
        )
        .help = Some(SLUG_RULE.to_owned());
        return None;
    }
    let span = file.span(range.clone());
    if let Some(first) = seen.get(alias) {
        let line = first.line;
        file.report(
            &DUPLICATE_ALIAS,
            range,
            format!("alias `{alias}` is already used on line {line}"),
        )
        .help = Some("every alias in astrolift.agents.toml must be unique".to_owned());
        return None;
    }
    seen.insert(alias.to_owned(), span);
    Some(alias.to_owned())
}
