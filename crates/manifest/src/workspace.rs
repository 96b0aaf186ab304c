//! Workspace manifests (docs/reference.md §5.4).
//!
//! A workspace manifest is YAML: `metadata` (slug, version, surface
//! compatibility, display) and `spec` (agent and sub-agents, skills, tool
//! selection, credentials, env, permissions, persistence, output surface).
//! Every block is a closed set: unknown keys are errors with a did-you-mean,
//! enumerations accept only their listed values.
//!
//! Product decisions beyond the seed:
//! - Top-level `apiVersion` and `kind` are accepted as free strings, so
//!   manifests written in the Kubernetes style validate.
//! - `spec.mounts` and `spec.seedFiles` (the seed's "mounts and seed files",
//!   specified elsewhere) are accepted as opaque values and not validated.
//! - `metadata.slug` and `metadata.version` are required: together they are
//!   the `slug@version` audit pin.
//! - `metadata.display.*` has no runtime effect and is typed only.
//!
//! Discovery (a root `astrolift.workspace.yaml` and `workspaces/*.yaml`, or
//! the federation file's `workspaces` globs) is [`crate::discovery`]'s.

use std::collections::BTreeSet;
use std::ops::Range;

use serde::Serialize;

use crate::diagnostic::{Code, Diagnostic, Fix, Severity};
use crate::files;
use crate::limits::Limits;
use crate::paths::{SLUG_RULE, is_slug};
use crate::reserved_env::RESERVED_ENV;
use crate::tree::SourceTree;
use crate::yaml::{Mapping, Value, YamlFile, entry};

pub const INVALID_SLUG: Code = Code::new(
    "workspace/invalid-slug",
    Severity::Error,
    "A slug that is not kebab-case.",
);
pub const INVALID_VERSION: Code = Code::new(
    "workspace/invalid-version",
    Severity::Error,
    "`metadata.version` is not a semantic version, or a skill `version` is not a semver requirement.",
);
pub const SURFACE_COMPAT_DEFAULT: Code = Code::new(
    "workspace/surface-compat-default",
    Severity::Notice,
    "`metadata.surfaceCompat` is omitted; it defaults to both surfaces.",
);
pub const UNKNOWN_VALUE: Code = Code::new(
    "workspace/unknown-value",
    Severity::Error,
    "A value outside a closed set (surfaceCompat, toolSelection kind/providerKind, credential kind, permission, outputSurface kind).",
);
pub const EMPTY_SURFACE_COMPAT: Code = Code::new(
    "workspace/empty-surface-compat",
    Severity::Error,
    "`metadata.surfaceCompat` lists no surface, so the manifest could boot nowhere.",
);
pub const DUPLICATE: Code = Code::new(
    "workspace/duplicate",
    Severity::Error,
    "Two entries with the same slug or name in one list.",
);
pub const MISSING_TOOL_NAME: Code = Code::new(
    "workspace/missing-tool-name",
    Severity::Error,
    "A `kind: tool` tool selection without `toolName`.",
);
pub const UNEXPECTED_TOOL_NAME: Code = Code::new(
    "workspace/unexpected-tool-name",
    Severity::Error,
    "A `kind: provider` tool selection with `toolName`: a provider selects all its tools.",
);
pub const INVALID_INTERPOLATION: Code = Code::new(
    "workspace/invalid-interpolation",
    Severity::Error,
    "A `${…}` parameter other than `${input.<name>}` in `resourceId`, or an unterminated `${`.",
);
pub const INVALID_CREDENTIAL_NAME: Code = Code::new(
    "workspace/invalid-credential-name",
    Severity::Error,
    "A credential `name` that is not UPPER_SNAKE_CASE.",
);
pub const UNDECLARED_CREDENTIAL: Code = Code::new(
    "workspace/undeclared-credential",
    Severity::Error,
    "`${credential.NAME}` in `spec.env` names no declared credential.",
);
pub const INVALID_ENV_NAME: Code = Code::new(
    "workspace/invalid-env-name",
    Severity::Error,
    "An env `name` that is not a valid variable name.",
);
pub const RESERVED_ENV_VAR: Code = Code::new(
    "workspace/reserved-env",
    Severity::Warning,
    "`spec.env` sets a variable the dispatcher owns; it is ignored.",
);
pub const INVALID_PERSISTENCE_PATH: Code = Code::new(
    "workspace/invalid-persistence-path",
    Severity::Error,
    "A persistence path that is empty, absolute or contains `..`.",
);
pub const MISSING_PORT: Code = Code::new(
    "workspace/missing-port",
    Severity::Error,
    "An output surface other than `none` without `port`.",
);
pub const INVALID_PORT: Code = Code::new(
    "workspace/invalid-port",
    Severity::Error,
    "A `port` outside 1–65535.",
);
pub const INVALID_HEALTH_PATH: Code = Code::new(
    "workspace/invalid-health-path",
    Severity::Error,
    "A `healthPath` that does not start with `/`.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[
    &INVALID_SLUG,
    &INVALID_VERSION,
    &SURFACE_COMPAT_DEFAULT,
    &UNKNOWN_VALUE,
    &EMPTY_SURFACE_COMPAT,
    &DUPLICATE,
    &MISSING_TOOL_NAME,
    &UNEXPECTED_TOOL_NAME,
    &INVALID_INTERPOLATION,
    &INVALID_CREDENTIAL_NAME,
    &UNDECLARED_CREDENTIAL,
    &INVALID_ENV_NAME,
    &RESERVED_ENV_VAR,
    &INVALID_PERSISTENCE_PATH,
    &MISSING_PORT,
    &INVALID_PORT,
    &INVALID_HEALTH_PATH,
];

/// `metadata.surfaceCompat` values.
pub const SURFACES: &[&str] = &["workflow", "agent-session"];
/// `spec.toolSelection[].kind` values.
pub const TOOL_SELECTION_KINDS: &[&str] = &["provider", "tool"];
/// `spec.toolSelection[].providerKind` values. The seed's list is cut off
/// after its examples; extend the set here (and only here).
pub const PROVIDER_KINDS: &[&str] = &["mcp_server", "catalog", "org_database_explorer"];
/// `spec.credentials[].kind` values.
pub const CREDENTIAL_KINDS: &[&str] = &[
    "llm-provider",
    "scm-token",
    "oauth-bearer",
    "mcp-auth",
    "wallet-entry",
    "generic-secret",
];
/// `spec.permissions.tools.allow`/`deny` values.
pub const TOOLSETS: &[&str] = &["read", "write", "exec", "web", "mcp", "delegate"];
/// `spec.outputSurface.kind` values. The seed's list is cut off; extend here.
pub const OUTPUT_SURFACE_KINDS: &[&str] = &["web", "vnc", "none"];

pub(crate) const TOP_KEYS: &[&str] = &["apiVersion", "kind", "metadata", "spec"];
const METADATA_KEYS: &[&str] = &["slug", "version", "surfaceCompat", "display"];
const DISPLAY_KEYS: &[&str] = &[
    "title",
    "blurb",
    "icon",
    "category",
    "sortOrder",
    "badges",
    "ctaText",
    "hidden",
    "curated",
];
pub(crate) const SPEC_KEYS: &[&str] = &[
    "agent",
    "skills",
    "toolSelection",
    "credentials",
    "env",
    "permissions",
    "persistence",
    "outputSurface",
    "mounts",
    "seedFiles",
];
const AGENT_KEYS: &[&str] = &["slug", "stage", "role", "subAgents"];
const SUB_AGENT_KEYS: &[&str] = &["slug", "alias", "defaultModel"];
const SKILL_KEYS: &[&str] = &["slug", "version"];
const TOOL_SELECTION_KEYS: &[&str] = &["kind", "providerKind", "resourceId", "toolName"];
const CREDENTIAL_KEYS: &[&str] = &["name", "kind", "sourceRef", "required"];
const ENV_KEYS: &[&str] = &["name", "value"];
const PERMISSIONS_KEYS: &[&str] = &["tools"];
const PERMISSION_TOOLS_KEYS: &[&str] = &["allow", "deny"];
const PERSISTENCE_KEYS: &[&str] = &["paths"];
const OUTPUT_SURFACE_KEYS: &[&str] = &["kind", "port", "healthPath", "autoOpen"];

/// A validated workspace manifest (best effort when it has errors).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceManifest {
    /// Repo-relative path of the YAML file.
    pub path: String,
    pub metadata: Metadata,
    pub spec: Spec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub slug: String,
    pub version: String,
    /// Declared surfaces, or both when omitted.
    pub surface_compat: Vec<String>,
    /// False when `surfaceCompat` was omitted (and defaulted).
    pub surface_compat_declared: bool,
    pub display: Option<Display>,
}

/// `metadata.display`: UX framing, no runtime effect.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Display {
    pub title: Option<String>,
    pub blurb: Option<String>,
    pub icon: Option<String>,
    pub category: Option<String>,
    pub sort_order: Option<i64>,
    pub badges: Vec<String>,
    pub cta_text: Option<String>,
    pub hidden: bool,
    pub curated: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    pub agent: Option<AgentSpec>,
    pub skills: Vec<SkillPin>,
    pub tool_selection: Vec<ToolSelection>,
    pub credentials: Vec<Credential>,
    pub env: Vec<EnvVar>,
    pub permissions: Permissions,
    /// `None` when `spec.persistence` is absent; an empty list snapshots chat history only.
    pub persistence: Option<Vec<String>>,
    pub output_surface: Option<OutputSurface>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSpec {
    pub slug: String,
    pub stage: Option<String>,
    pub role: Option<String>,
    pub sub_agents: Vec<SubAgent>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubAgent {
    pub slug: String,
    pub alias: Option<String>,
    /// `defaultModel` as given: string keys to string values (`kind`, `modelLane`, …).
    pub default_model: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SkillPin {
    pub slug: String,
    /// A semver requirement (`^1`, `~1.2.3`); `None` tracks the catalogue's current version.
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSelection {
    pub kind: String,
    pub provider_kind: String,
    pub resource_id: String,
    pub tool_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Credential {
    pub name: String,
    pub kind: String,
    pub source_ref: String,
    pub required: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Permissions {
    pub allow: Option<Vec<String>>,
    pub deny: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputSurface {
    pub kind: String,
    pub port: Option<u16>,
    pub health_path: String,
    pub auto_open: bool,
}

/// Reads and validates the workspace manifest at `path`.
pub fn validate_workspace(
    tree: &dyn SourceTree,
    path: &str,
    limits: &Limits,
) -> (Option<WorkspaceManifest>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    match files::read_text(tree, path, limits.manifest_file, &mut diagnostics) {
        Some(text) => validate_workspace_text(path, &text, limits),
        None => (None, diagnostics),
    }
}

/// Validates workspace-manifest text already read.
pub fn validate_workspace_text(
    path: &str,
    text: &str,
    limits: &Limits,
) -> (Option<WorkspaceManifest>, Vec<Diagnostic>) {
    let (mut file, root) = YamlFile::parse(path, text, limits);
    let manifest = root.and_then(|root| {
        let map = file.as_map(&root, "a workspace manifest")?;
        Some(read_manifest(&mut file, map, root.range.clone()))
    });
    let mut diagnostics = file.diagnostics;
    crate::diagnostic::sort(&mut diagnostics);
    (manifest, diagnostics)
}

fn read_manifest(file: &mut YamlFile<'_>, root: &Mapping, at: Range<usize>) -> WorkspaceManifest {
    file.check_keys(root, TOP_KEYS, "a workspace manifest");
    for key in ["apiVersion", "kind"] {
        file.str(root, key);
    }
    let metadata = match file.map(root, "metadata") {
        Some((map, range)) => metadata(file, map, range),
        None => {
            if entry(root, "metadata").is_none() {
                file.missing(at.start..at.start, "metadata", "a workspace manifest");
            }
            Metadata::default()
        }
    };
    let spec = file
        .map(root, "spec")
        .map(|(map, _)| spec(file, map))
        .unwrap_or_default();
    WorkspaceManifest {
        path: file.path.clone(),
        metadata,
        spec,
    }
}

fn metadata(file: &mut YamlFile<'_>, map: &Mapping, at: Range<usize>) -> Metadata {
    file.check_keys(map, METADATA_KEYS, "`metadata`");
    let slug = required_slug(file, map, at.clone(), "`metadata`");
    let version = match file.required_str(map, "version", at.clone(), "`metadata`") {
        Some((version, range)) => {
            if let Err(error) = semver::Version::parse(version) {
                file.report(
                    &INVALID_VERSION,
                    range,
                    format!("`metadata.version` `{version}` is not a semantic version: {error}"),
                )
                .help = Some("write MAJOR.MINOR.PATCH, such as `2.0.0`".to_owned());
            }
            version.to_owned()
        }
        None => String::new(),
    };
    let (surface_compat, surface_compat_declared) = surface_compat(file, map, at);
    let display = file
        .map(map, "display")
        .map(|(display, _)| read_display(file, display));
    Metadata {
        slug,
        version,
        surface_compat,
        surface_compat_declared,
        display,
    }
}

/// The fix of an omitted `surfaceCompat`: declare what omitting it means
/// (both surfaces), on a line of its own before the first key of a block
/// `metadata` mapping that starts at `first_key` (not in a flow mapping,
/// where the layout would be a guess).
fn add_surface_compat(file: &YamlFile<'_>, first_key: usize) -> Option<Fix> {
    let line_start = file.index.line_start(first_key);
    let indent = file.index.text().get(line_start..first_key)?;
    if indent.is_empty() || !indent.bytes().all(|b| b == b' ') {
        return None;
    }
    let line = format!(
        "{indent}surfaceCompat: [{}]{}",
        SURFACES.join(", "),
        file.index.newline()
    );
    let edit = file.index.edit(&file.path, line_start..line_start, line);
    Some(Fix::one("declare `surfaceCompat` with both surfaces", edit))
}

fn surface_compat(file: &mut YamlFile<'_>, map: &Mapping, at: Range<usize>) -> (Vec<String>, bool) {
    let both = || SURFACES.iter().map(|s| (*s).to_owned()).collect();
    let Some((_, value)) = entry(map, "surfaceCompat") else {
        let fix = add_surface_compat(file, at.start);
        let diagnostic = file.report(
            &SURFACE_COMPAT_DEFAULT,
            at.start..at.start,
            "`metadata.surfaceCompat` is omitted, so the manifest boots on both `workflow` and `agent-session`",
        );
        diagnostic.help =
            Some("new manifests should declare `surfaceCompat` explicitly".to_owned());
        diagnostic.fix = fix;
        return (both(), false);
    };
    let Some(items) = file.str_seq(map, "surfaceCompat") else {
        return (both(), true);
    };
    if items.is_empty() {
        file.report(
            &EMPTY_SURFACE_COMPAT,
            value.range.clone(),
            "`surfaceCompat` lists no surface",
        )
        .help = Some("list `workflow`, `agent-session` or both".to_owned());
    }
    let surfaces = items
        .into_iter()
        .filter(|(value, range)| {
            closed_value(file, value, range.clone(), SURFACES, "surfaceCompat")
        })
        .map(|(value, _)| value)
        .collect();
    (surfaces, true)
}

fn read_display(file: &mut YamlFile<'_>, map: &Mapping) -> Display {
    file.check_keys(map, DISPLAY_KEYS, "`metadata.display`");
    let mut text = |key: &str| file.str(map, key).map(|(s, _)| s.to_owned());
    let (title, blurb, icon, category, cta_text) = (
        text("title"),
        text("blurb"),
        text("icon"),
        text("category"),
        text("ctaText"),
    );
    Display {
        title,
        blurb,
        icon,
        category,
        sort_order: file.int(map, "sortOrder").map(|(n, _)| n),
        badges: file
            .str_seq(map, "badges")
            .unwrap_or_default()
            .into_iter()
            .map(|(b, _)| b)
            .collect(),
        cta_text,
        hidden: file.bool(map, "hidden").is_some_and(|(b, _)| b),
        curated: file.bool(map, "curated").is_some_and(|(b, _)| b),
    }
}

fn spec(file: &mut YamlFile<'_>, map: &Mapping) -> Spec {
    file.check_keys(map, SPEC_KEYS, "`spec`");
    let credentials = credentials(file, map);
    let declared: BTreeSet<String> = credentials.iter().map(|c| c.name.clone()).collect();
    Spec {
        agent: file
            .map(map, "agent")
            .map(|(agent, range)| read_agent(file, agent, range)),
        skills: skills(file, map),
        tool_selection: tool_selection(file, map),
        env: env(file, map, &declared),
        credentials,
        permissions: file
            .map(map, "permissions")
            .map(|(p, _)| permissions(file, p))
            .unwrap_or_default(),
        persistence: file
            .map(map, "persistence")
            .map(|(p, _)| persistence(file, p)),
        output_surface: file
            .map(map, "outputSurface")
            .map(|(o, range)| output_surface(file, o, range)),
    }
}

fn read_agent(file: &mut YamlFile<'_>, map: &Mapping, at: Range<usize>) -> AgentSpec {
    file.check_keys(map, AGENT_KEYS, "`spec.agent`");
    let slug = required_slug(file, map, at, "`spec.agent`");
    let stage = file.str(map, "stage").map(|(s, _)| s.to_owned());
    let role = file.str(map, "role").map(|(s, _)| s.to_owned());
    let mut seen = Seen::default();
    let mut sub_agents = Vec::new();
    for (sub, range) in file.map_seq(map, "subAgents") {
        file.check_keys(sub, SUB_AGENT_KEYS, "a sub-agent");
        let slug = required_slug(file, sub, range.clone(), "a sub-agent");
        seen.check(file, &slug, range, "sub-agent slug");
        let alias = file.str(sub, "alias").map(|(s, _)| s.to_owned());
        let default_model = file
            .map(sub, "defaultModel")
            .map(|(m, _)| string_pairs(file, m))
            .unwrap_or_default();
        sub_agents.push(SubAgent {
            slug,
            alias,
            default_model,
        });
    }
    AgentSpec {
        slug,
        stage,
        role,
        sub_agents,
    }
}

/// A mapping of string values, kept in order (`defaultModel`).
fn string_pairs(file: &mut YamlFile<'_>, map: &Mapping) -> Vec<(String, String)> {
    map.iter()
        .filter_map(|(key, value)| {
            let Value::Str(key) = &key.value else {
                return None;
            };
            let value = file.as_str(value, &format!("`defaultModel.{key}`"))?;
            Some((key.clone(), value.to_owned()))
        })
        .collect()
}

fn skills(file: &mut YamlFile<'_>, map: &Mapping) -> Vec<SkillPin> {
    let mut seen = Seen::default();
    let mut out = Vec::new();
    for (skill, range) in file.map_seq(map, "skills") {
        file.check_keys(skill, SKILL_KEYS, "a skill");
        let slug = required_slug(file, skill, range.clone(), "a skill");
        seen.check(file, &slug, range, "skill slug");
        let version = file.str(skill, "version").map(|(req, range)| {
            if let Err(error) = semver::VersionReq::parse(req) {
                file.report(
                    &INVALID_VERSION,
                    range,
                    format!("skill version `{req}` is not a semver pin or range: {error}"),
                )
                .help = Some("write a pin or range such as `1.2.3`, `^1` or `~1.2.3`".to_owned());
            }
            req.to_owned()
        });
        out.push(SkillPin { slug, version });
    }
    out
}

fn tool_selection(file: &mut YamlFile<'_>, map: &Mapping) -> Vec<ToolSelection> {
    let mut out = Vec::new();
    for (item, range) in file.map_seq(map, "toolSelection") {
        let context = "a tool selection";
        file.check_keys(item, TOOL_SELECTION_KEYS, context);
        let kind = required_closed(
            file,
            item,
            "kind",
            range.clone(),
            context,
            TOOL_SELECTION_KINDS,
        );
        let provider_kind = required_closed(
            file,
            item,
            "providerKind",
            range.clone(),
            context,
            PROVIDER_KINDS,
        );
        let resource_id = match file.required_str(item, "resourceId", range.clone(), context) {
            Some((id, id_range)) => {
                check_input_parameters(file, id, id_range);
                id.to_owned()
            }
            None => String::new(),
        };
        let tool_name = file.str(item, "toolName").map(|(s, r)| (s.to_owned(), r));
        match (kind.as_str(), &tool_name) {
            ("tool", None) => {
                file.report(
                    &MISSING_TOOL_NAME,
                    range,
                    "a `kind: tool` selection needs `toolName`",
                )
                .help = Some(
                    "name the one tool to select, or use `kind: provider` for all its tools"
                        .to_owned(),
                );
            }
            ("provider", Some((_, name_range))) => {
                file.report(
                    &UNEXPECTED_TOOL_NAME,
                    name_range.clone(),
                    "`toolName` applies only to `kind: tool`; a provider selects all its tools",
                );
            }
            _ => {}
        }
        out.push(ToolSelection {
            kind,
            provider_kind,
            resource_id,
            tool_name: tool_name.map(|(name, _)| name),
        });
    }
    out
}

/// `resourceId` may hold `${input.<name>}` parameters and nothing else in `${…}`.
fn check_input_parameters(file: &mut YamlFile<'_>, value: &str, range: Range<usize>) {
    for placeholder in placeholders(value) {
        let ok = placeholder
            .as_deref()
            .and_then(|p| p.strip_prefix("input."))
            .is_some_and(is_identifier);
        if !ok {
            let shown = placeholder.map_or_else(
                || "an unterminated `${`".to_owned(),
                |p| format!("`${{{p}}}`"),
            );
            file.report(
                &INVALID_INTERPOLATION,
                range.clone(),
                format!(
                    "`resourceId` holds {shown}; only `${{input.<name>}}` parameters are allowed"
                ),
            );
        }
    }
}

/// The contents of each `${…}` in `value`; `None` for an unterminated one.
fn placeholders(value: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                out.push(Some(after[..end].to_owned()));
                rest = &after[end + 1..];
            }
            None => {
                out.push(None);
                break;
            }
        }
    }
    out
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn credentials(file: &mut YamlFile<'_>, map: &Mapping) -> Vec<Credential> {
    let mut seen = Seen::default();
    let mut out = Vec::new();
    for (item, range) in file.map_seq(map, "credentials") {
        let context = "a credential";
        file.check_keys(item, CREDENTIAL_KEYS, context);
        let name = match file.required_str(item, "name", range.clone(), context) {
            Some((name, name_range)) => {
                if !is_upper_snake(name) {
                    file.report(
                        &INVALID_CREDENTIAL_NAME,
                        name_range.clone(),
                        format!("credential name `{name}` is not UPPER_SNAKE_CASE"),
                    )
                    .help = Some(
                        "use A–Z, 0–9 and `_`, starting with a letter, such as `GITHUB_TOKEN`"
                            .to_owned(),
                    );
                }
                seen.check(file, name, name_range, "credential name");
                name.to_owned()
            }
            None => String::new(),
        };
        let kind = required_closed(file, item, "kind", range.clone(), context, CREDENTIAL_KINDS);
        let source_ref = file
            .required_str(item, "sourceRef", range, context)
            .map(|(s, _)| s.to_owned())
            .unwrap_or_default();
        let required = file.bool(item, "required").is_some_and(|(b, _)| b);
        out.push(Credential {
            name,
            kind,
            source_ref,
            required,
        });
    }
    out
}

fn env(file: &mut YamlFile<'_>, map: &Mapping, credentials: &BTreeSet<String>) -> Vec<EnvVar> {
    let mut seen = Seen::default();
    let mut out = Vec::new();
    for (item, range) in file.map_seq(map, "env") {
        let context = "an env entry";
        file.check_keys(item, ENV_KEYS, context);
        let Some((name, name_range)) = file.required_str(item, "name", range.clone(), context)
        else {
            continue;
        };
        let value = file.required_str(item, "value", range, context);
        if !is_identifier(name) || name.contains('-') {
            file.report(
                &INVALID_ENV_NAME,
                name_range.clone(),
                format!("`{name}` is not a valid environment variable name"),
            );
        }
        seen.check(file, name, name_range.clone(), "env name");
        if RESERVED_ENV.contains(&name) {
            file.report(
                &RESERVED_ENV_VAR,
                name_range,
                format!("`{name}` is set by the dispatcher; this entry is ignored"),
            );
            continue;
        }
        let Some((value, value_range)) = value else {
            continue;
        };
        for placeholder in placeholders(value).into_iter().flatten() {
            let Some(credential) = placeholder.strip_prefix("credential.") else {
                continue;
            };
            if !credentials.contains(credential) {
                file.report(&UNDECLARED_CREDENTIAL, value_range.clone(), format!("`${{credential.{credential}}}` names no credential declared in `spec.credentials`"))
                    .help = Some(format!("declare `{credential}` under `spec.credentials`, or fix the name"));
            }
        }
        out.push(EnvVar {
            name: name.to_owned(),
            value: value.to_owned(),
        });
    }
    out
}

fn permissions(file: &mut YamlFile<'_>, map: &Mapping) -> Permissions {
    file.check_keys(map, PERMISSIONS_KEYS, "`spec.permissions`");
    let Some((tools, _)) = file.map(map, "tools") else {
        return Permissions::default();
    };
    file.check_keys(tools, PERMISSION_TOOLS_KEYS, "`spec.permissions.tools`");
    let mut list = |key: &str| {
        file.str_seq(tools, key).map(|items| {
            items
                .into_iter()
                .filter(|(value, range)| closed_value(file, value, range.clone(), TOOLSETS, key))
                .map(|(value, _)| value)
                .collect::<Vec<_>>()
        })
    };
    let allow = list("allow");
    let deny = list("deny").unwrap_or_default();
    Permissions { allow, deny }
}

fn persistence(file: &mut YamlFile<'_>, map: &Mapping) -> Vec<String> {
    file.check_keys(map, PERSISTENCE_KEYS, "`spec.persistence`");
    let mut out = Vec::new();
    for (path, range) in file.str_seq(map, "paths").unwrap_or_default() {
        let problem = if path.is_empty() {
            Some("is empty")
        } else if path.starts_with('/') {
            Some("is absolute")
        } else if path.split('/').any(|part| part == "..") {
            Some("contains `..`")
        } else {
            None
        };
        match problem {
            Some(problem) => {
                file.report(
                    &INVALID_PERSISTENCE_PATH,
                    range,
                    format!("persistence path `{path}` {problem}"),
                )
                .help = Some("paths are relative to /workspace/ and stay inside it".to_owned());
            }
            None => out.push(path),
        }
    }
    out
}

fn output_surface(file: &mut YamlFile<'_>, map: &Mapping, at: Range<usize>) -> OutputSurface {
    let context = "`spec.outputSurface`";
    file.check_keys(map, OUTPUT_SURFACE_KEYS, context);
    let kind = required_closed(file, map, "kind", at.clone(), context, OUTPUT_SURFACE_KINDS);
    let port = match file.int(map, "port") {
        Some((port, range)) => match u16::try_from(port).ok().filter(|p| *p > 0) {
            Some(port) => Some(port),
            None => {
                file.report(
                    &INVALID_PORT,
                    range,
                    format!("port {port} is outside 1–65535"),
                );
                None
            }
        },
        None => None,
    };
    if port.is_none() && entry(map, "port").is_none() && !kind.is_empty() && kind != "none" {
        file.report(
            &MISSING_PORT,
            at,
            format!("an output surface of kind `{kind}` needs `port`"),
        );
    }
    let health_path = match file.str(map, "healthPath") {
        Some((path, range)) => {
            if !path.starts_with('/') {
                file.report(
                    &INVALID_HEALTH_PATH,
                    range,
                    format!("`healthPath` `{path}` must start with `/`"),
                );
            }
            path.to_owned()
        }
        None => "/".to_owned(),
    };
    OutputSurface {
        kind,
        port,
        health_path,
        auto_open: file.bool(map, "autoOpen").is_some_and(|(b, _)| b),
    }
}

/// A required kebab-case `slug`.
fn required_slug(
    file: &mut YamlFile<'_>,
    map: &Mapping,
    at: Range<usize>,
    context: &str,
) -> String {
    let Some((slug, range)) = file.required_str(map, "slug", at, context) else {
        return String::new();
    };
    if !is_slug(slug) {
        file.report(
            &INVALID_SLUG,
            range,
            format!("slug `{slug}` is not kebab-case"),
        )
        .help = Some(SLUG_RULE.to_owned());
    }
    slug.to_owned()
}

/// A required string from a closed set; "" when absent or outside the set.
fn required_closed(
    file: &mut YamlFile<'_>,
    map: &Mapping,
    key: &str,
    at: Range<usize>,
    context: &str,
    allowed: &[&str],
) -> String {
    match file.required_str(map, key, at, context) {
        Some((value, range)) if closed_value(file, value, range.clone(), allowed, key) => {
            value.to_owned()
        }
        _ => String::new(),
    }
}

/// True when `value` is in `allowed`; otherwise reports `workspace/unknown-value`.
fn closed_value(
    file: &mut YamlFile<'_>,
    value: &str,
    range: Range<usize>,
    allowed: &[&str],
    what: &str,
) -> bool {
    if allowed.contains(&value) {
        return true;
    }
    let help = match crate::toml_walk::closest(value, allowed) {
        Some(best) => format!("did you mean `{best}`? allowed: {}", allowed.join(", ")),
        None => format!("allowed: {}", allowed.join(", ")),
    };
    file.report(
        &UNKNOWN_VALUE,
        range,
        format!("`{value}` is not a valid `{what}`"),
    )
    .help = Some(help);
    false
}

fn is_upper_snake(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !name.ends_with('_')
        && !name.contains("__")
}

/// Names seen so far in one list, to report duplicates.
#[derive(Default)]
struct Seen(BTreeSet<String>);

impl Seen {
    fn check(&mut self, file: &mut YamlFile<'_>, name: &str, range: Range<usize>, what: &str) {
        if !name.is_empty() && !self.0.insert(name.to_owned()) {
            file.report(&DUPLICATE, range, format!("duplicate {what} `{name}`"));
        }
    }
}
