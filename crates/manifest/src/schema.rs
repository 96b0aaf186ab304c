//! JSON Schemas of the formats, for editors (Taplo for TOML, the YAML
//! language server for YAML) and other tools.
//!
//! The structs here are *schema models*: they mirror each format's shape so
//! `schemars` can generate its schema. They document the format; they do not
//! validate it (the spanned walkers in `native`, `federation`, `config`,
//! `workspace` and `triggers` do, with positions and every problem at once).
//! Tests keep the model's keys equal to the walkers' key lists, and the
//! checked-in `schemas/*.json` equal to what [`all`] generates:
//! `UPDATE_SCHEMAS=1 cargo test -p astrolift-manifest schema` rewrites them.
#![allow(dead_code)] // The models exist for their derived schemas only.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator};

/// `^secret://…`: a reference into the secret store, never a plaintext value.
const SECRET_REF: &str = r"^secret://\S+$";
/// A slug: 1–64 of a–z, 0–9 and `-`, no leading, trailing or double hyphen.
const SLUG: &str = r"^[a-z0-9]+(-[a-z0-9]+)*$";
/// A duration: an integer and one unit, `s`, `m`, `h` or `d` (`90s`, `2h`).
const DURATION: &str = r"^[0-9]+[smhd]$";

/// A native agent manifest: `astrolift.toml` (docs/reference.md §5.1).
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "astrolift.toml",
    description = "An Astrolift agent manifest: one agent workload plus the files of its package."
)]
pub struct NativeManifestSchema {
    /// The format version. Only 1 exists.
    #[schemars(range(min = 1, max = 1))]
    astrolift_version: i64,
    /// The agent's name: a slug, unique within the repository.
    #[schemars(regex(pattern = SLUG), length(min = 1, max = 64))]
    name: String,
    /// Path of the brief (Markdown), relative to this file. Relative links to sibling files become context files.
    brief: Option<String>,
    /// Skills in order: `{ local_name = "skills/path" }` or `"./skills/path"` (local), `"name@version"` (built-in catalogue), `"repo-alias/path/to/skill@ref"` (organization skill repo).
    skills: Option<Vec<SkillRefSchema>>,
    /// Exactly one workload with `kind = "agent"`.
    workloads: Option<Vec<WorkloadSchema>>,
    /// Plain environment variables. Reserved runtime variables are ignored with a warning.
    environment: Option<BTreeMap<String, String>>,
    /// Secret references: `NAME = "secret://…"`. Plaintext values are an error.
    secrets: Option<BTreeMap<String, SecretRefSchema>>,
    /// Which files make the agent's package.
    package: Option<PackageSchema>,
    /// Trigger bindings: webhooks that dispatch this agent.
    triggers: Option<Vec<TriggerSchema>>,
}

/// A `secret://…` reference.
#[derive(Debug, JsonSchema)]
struct SecretRefSchema(#[schemars(regex(pattern = SECRET_REF))] String);

/// A skill reference: a string, or a one-key table `{ local_name = "skills/path" }`.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
enum SkillRefSchema {
    /// `"./skills/path"`, `"name@version"` or `"repo-alias/path/to/skill@ref"`.
    Reference(String),
    /// `{ local_name = "skills/path" }`.
    #[schemars(extend("minProperties" = 1, "maxProperties" = 1))]
    Local(BTreeMap<String, String>),
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WorkloadSchema {
    name: String,
    /// `agent` for the agent workload.
    kind: String,
    run_family: Option<String>,
    #[schemars(range(min = 0))]
    max_retries: Option<i64>,
    #[schemars(range(min = 1))]
    tool_timeout_seconds: Option<i64>,
    #[schemars(range(min = 1))]
    result_ttl_hours: Option<i64>,
    /// Exactly one container has `is_primary = true`.
    containers: Option<Vec<ContainerSchema>>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ContainerSchema {
    name: String,
    is_primary: Option<bool>,
    #[schemars(length(min = 1))]
    image_ref: String,
}

/// `[package]`: paths are relative, POSIX, without `..`.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PackageSchema {
    /// The package's virtual chroot, relative to the manifest.
    root: Option<String>,
    /// Globs; default `**`.
    include: Option<Vec<String>>,
    /// Globs; default VCS, cache and dependency paths.
    exclude: Option<Vec<String>>,
    /// Globs of files packaged with mode 0755.
    executables: Option<Vec<String>>,
    /// Repo-root paths mounted inside the package.
    shared: Option<Vec<SharedMountSchema>>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SharedMountSchema {
    /// Repo-root relative source.
    source: String,
    /// Package-relative destination.
    mount: String,
}

/// `[[triggers]]`: a webhook binding.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TriggerSchema {
    /// Unique within the agent.
    #[schemars(regex(pattern = SLUG), length(min = 1, max = 64))]
    name: String,
    source: TriggerSourceSchema,
    /// GitHub only: `event` or `event.action`.
    #[schemars(inner(regex(pattern = r"^[a-z_]+(\.[a-z_]+)?$")))]
    events: Option<Vec<String>>,
    /// Required for `generic` triggers.
    verify: Option<VerifySchema>,
    /// jq; must yield a boolean.
    filter: Option<String>,
    /// jq; must yield an object or null.
    payload: Option<String>,
    /// The environment spec to dispatch with.
    env_spec: Option<String>,
    /// GitHub only: also fire for fork pull requests and for senders who are
    /// not an `OWNER`, `MEMBER` or `COLLABORATOR`. Default false.
    allow_untrusted: Option<bool>,
    /// GitHub only: report the terminal result back as a comment on the issue or pull
    /// request, or as a check run on the pull request's head.
    report: Option<ReportSchema>,
    /// A folder of sample requests (`NAME.json`, each with an optional
    /// `NAME.expected.json`), relative to the manifest's directory; at most 100 samples.
    samples: Option<String>,
    /// How many accepted requests are kept for replay. Default 20; 0 keeps none.
    #[schemars(range(min = 0, max = 20))]
    keep_deliveries: Option<u32>,
    /// A pull request's replay may show payload values (private repositories only).
    /// Default false.
    replay_values: Option<bool>,
}

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ReportSchema {
    /// A comment (`issues`, `issue_comment`, `pull_request` events).
    Comment,
    /// A check run (`pull_request` events).
    Check,
}

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TriggerSourceSchema {
    /// `POST /triggers/{id}` from any HTTP sender.
    Generic,
    /// GitHub events of the repository.
    Github,
}

#[derive(Debug, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum VerifySchema {
    /// HMAC-SHA256 of the body in `header`, after an optional `prefix`.
    HmacSha256 {
        header: String,
        prefix: Option<String>,
        #[schemars(regex(pattern = SECRET_REF))]
        secret: String,
        /// Replay protection: the header with the Unix time in seconds; the
        /// signature then covers `"{timestamp}.{body}"`.
        timestamp_header: Option<String>,
        /// How far the timestamp may be from now (with `timestamp_header`). Default 300.
        #[schemars(range(min = 1, max = 86400))]
        tolerance_seconds: Option<u64>,
    },
    /// `X-Hub-Signature-256` with the App's webhook secret.
    Github,
    /// A constant-time comparison of `header` with the secret.
    Token {
        header: String,
        #[schemars(regex(pattern = SECRET_REF))]
        secret: String,
    },
}

/// The federation file: `astrolift.agents.toml`.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "astrolift.agents.toml",
    description = "Selects the agents of a monorepo; replaces default discovery."
)]
pub struct FederationSchema {
    schema: FederationVersion,
    #[schemars(regex(pattern = SLUG))]
    name: Option<String>,
    /// Globs of manifests.
    include: Option<Vec<String>>,
    /// Globs of manifests; exclusions win.
    exclude: Option<Vec<String>>,
    /// Add matching manifests that are not listed.
    auto_register_new: Option<bool>,
    agents: Option<Vec<FederatedAgentSchema>>,
    /// Globs of workspace manifests (replace `astrolift.workspace.yaml` and `workspaces/*.yaml`).
    workspaces: Option<Vec<String>>,
    /// Globs of workflow files (replace `workflows/*.toml`).
    workflows: Option<Vec<String>>,
}

/// A workflow: `workflows/*.toml` (docs/reference.md §5.6).
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "Astrolift workflow",
    description = "Stages of this repository's agents, each run once the stages it needs succeeded."
)]
pub struct WorkflowSchema {
    schema: WorkflowVersion,
    /// A slug, unique in the repository.
    #[schemars(regex(pattern = SLUG), length(min = 1, max = 64))]
    name: String,
    description: Option<String>,
    /// 1 to 64 stages.
    #[schemars(length(min = 1, max = 64))]
    stages: Vec<WorkflowStageSchema>,
}

#[derive(Debug, JsonSchema)]
enum WorkflowVersion {
    #[serde(rename = "astrolift.workflow/v1")]
    V1,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WorkflowStageSchema {
    /// A slug, unique in the workflow.
    #[schemars(regex(pattern = SLUG), length(min = 1, max = 64))]
    name: String,
    /// An agent name or federation alias of this repository (enabled).
    agent: String,
    /// `"name@1.2.0"` or `"alias/path/to/skill@ref"`, added after the agent's own skills.
    skills: Option<Vec<String>>,
    /// Names of stages of this workflow that must succeed first; no cycles.
    needs: Option<Vec<String>>,
    /// jq over `{input, stages: {NAME: {result}}}`; must yield an object, null, {} or nothing.
    payload: Option<String>,
    /// An env spec of the agent's project.
    env_spec: Option<String>,
    /// How long the stage may take: `<integer><unit>` (s, m, h, d), 30s to 7d. Default 24h.
    #[schemars(regex(pattern = DURATION))]
    timeout: Option<String>,
    /// The longest the stage may go without a `running` callback: a duration shorter than `timeout`.
    #[schemars(regex(pattern = DURATION))]
    heartbeat: Option<String>,
    /// How often a failed or timed-out stage is dispatched again (30 s, then doubling). Default 0.
    #[schemars(range(min = 0, max = 5))]
    retries: Option<i64>,
}

#[derive(Debug, JsonSchema)]
enum FederationVersion {
    #[serde(rename = "astrolift.agent.federation/v1")]
    V1,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FederatedAgentSchema {
    /// Repo-relative path of an `astrolift.toml`.
    manifest: String,
    /// Unique across the file.
    alias: Option<String>,
    /// A disabled agent is validated but not registered. Default true.
    enabled: Option<bool>,
}

/// A modular config manifest.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "Astrolift config manifest",
    description = "Prompts, skills, assets, environment and secrets, split across files with `include`. Includes deep-merge in order; later files win; arrays are replaced."
)]
pub struct ConfigSchema {
    /// Files to merge first, relative to this file, in order.
    include: Option<Vec<String>>,
    /// `[skills.<slug>]` tables, composed in order.
    skills: Option<BTreeMap<String, ConfigSkillSchema>>,
    assets: Option<ConfigAssetsSchema>,
    environment: Option<ConfigEnvironmentSchema>,
    secrets: Option<BTreeMap<String, ConfigSecretSchema>>,
    /// Deprecated: a compatibility alias computed from the first skill. Do not author it.
    #[schemars(extend("deprecated" = true))]
    skill_slug: Option<String>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConfigSkillSchema {
    /// UTF-8 prompt file, relative to the declaring file.
    system_prompt_file: Option<String>,
    tools: Option<Vec<String>>,
    files: Option<Vec<String>>,
    /// Marked executable in the assembled result.
    scripts: Option<Vec<String>>,
    /// Marked executable in the assembled result.
    binaries: Option<Vec<String>>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConfigAssetsSchema {
    files: Option<Vec<String>>,
}

/// `tool_preset`, `allow_install` and plain string variables.
#[derive(Debug, JsonSchema)]
struct ConfigEnvironmentSchema {
    tool_preset: Option<String>,
    allow_install: Option<bool>,
    #[serde(flatten)]
    variables: BTreeMap<String, String>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConfigSecretSchema {
    #[schemars(regex(pattern = SECRET_REF))]
    secret_name: String,
}

/// A workspace manifest (docs/reference.md §5.4).
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(
    title = "Astrolift workspace manifest",
    description = "The environment contract an agent runs against: sub-agents, skills, tools, credentials, permissions, persistence, preview surface."
)]
pub struct WorkspaceSchema {
    api_version: Option<String>,
    kind: Option<String>,
    metadata: WsMetadata,
    spec: Option<WsSpec>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WsMetadata {
    #[schemars(regex(pattern = SLUG))]
    slug: String,
    /// A semantic version: MAJOR.MINOR.PATCH.
    version: String,
    /// Omitted means both, with a notice.
    #[schemars(length(min = 1))]
    surface_compat: Option<Vec<WsSurface>>,
    display: Option<WsDisplay>,
}

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum WsSurface {
    Workflow,
    AgentSession,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WsDisplay {
    title: Option<String>,
    blurb: Option<String>,
    icon: Option<String>,
    category: Option<String>,
    sort_order: Option<i64>,
    badges: Option<Vec<String>>,
    cta_text: Option<String>,
    hidden: Option<bool>,
    curated: Option<bool>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WsSpec {
    agent: Option<WsAgent>,
    skills: Option<Vec<WsSkill>>,
    tool_selection: Option<Vec<WsToolSelection>>,
    credentials: Option<Vec<WsCredential>>,
    env: Option<Vec<WsEnv>>,
    permissions: Option<WsPermissions>,
    persistence: Option<WsPersistence>,
    output_surface: Option<WsOutputSurface>,
    /// Mounts (specified elsewhere; not validated here).
    mounts: Option<serde_json::Value>,
    /// Seed files (specified elsewhere; not validated here).
    seed_files: Option<serde_json::Value>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WsAgent {
    #[schemars(regex(pattern = SLUG))]
    slug: String,
    stage: Option<String>,
    role: Option<String>,
    sub_agents: Option<Vec<WsSubAgent>>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WsSubAgent {
    #[schemars(regex(pattern = SLUG))]
    slug: String,
    alias: Option<String>,
    default_model: Option<BTreeMap<String, String>>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WsSkill {
    #[schemars(regex(pattern = SLUG))]
    slug: String,
    /// A semver pin or range, such as `^1` or `~1.2.3`.
    version: Option<String>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WsToolSelection {
    kind: WsToolSelectionKind,
    provider_kind: WsProviderKind,
    /// May hold `${input.<name>}` parameters.
    resource_id: String,
    /// Required for `kind: tool`.
    tool_name: Option<String>,
}

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum WsToolSelectionKind {
    Provider,
    Tool,
}

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum WsProviderKind {
    McpServer,
    Catalog,
    OrgDatabaseExplorer,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WsCredential {
    #[schemars(regex(pattern = r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$"))]
    name: String,
    kind: WsCredentialKind,
    source_ref: String,
    /// Default false.
    required: Option<bool>,
}

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum WsCredentialKind {
    LlmProvider,
    ScmToken,
    OauthBearer,
    McpAuth,
    WalletEntry,
    GenericSecret,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WsEnv {
    name: String,
    /// May reference `${credential.NAME}` of a declared credential.
    value: String,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WsPermissions {
    tools: Option<WsPermissionTools>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WsPermissionTools {
    allow: Option<Vec<WsToolset>>,
    deny: Option<Vec<WsToolset>>,
}

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum WsToolset {
    Read,
    Write,
    Exec,
    Web,
    Mcp,
    Delegate,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WsPersistence {
    /// Relative to /workspace/: no leading `/` and no `..` component.
    #[schemars(inner(regex(pattern = r"^[^/]")))]
    paths: Option<Vec<String>>,
}

#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WsOutputSurface {
    kind: WsOutputSurfaceKind,
    /// Required unless `kind: none`.
    #[schemars(range(min = 1, max = 65535))]
    port: Option<i64>,
    /// Default `/`.
    #[schemars(regex(pattern = r"^/"))]
    health_path: Option<String>,
    auto_open: Option<bool>,
}

#[derive(Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum WsOutputSurfaceKind {
    Web,
    Vnc,
    None,
}

/// A generated schema: the file name under `schemas/` and its JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedSchema {
    pub file_name: &'static str,
    pub json: String,
}

fn generate<T: JsonSchema>(file_name: &'static str, id: &str) -> GeneratedSchema {
    let mut schema: Schema = SchemaGenerator::default().into_root_schema_for::<T>();
    schema.insert(
        "$id".to_owned(),
        serde_json::Value::String(format!("https://astrolift.dev/schemas/{id}")),
    );
    let mut value = schema.to_value();
    drop_null(&mut value);
    let json = serde_json::to_string_pretty(&value).unwrap_or_default() + "\n";
    GeneratedSchema { file_name, json }
}

/// Removes the `null` alternative schemars gives every `Option` field: in
/// these formats an optional key is omitted, never null (TOML has no null,
/// and the YAML walker rejects one).
fn drop_null(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".to_owned(), only);
                }
            }
            if let Some(Value::Array(any_of)) = map.get("anyOf") {
                let rest: Vec<Value> = any_of
                    .iter()
                    .filter(|s| s.get("type").is_none_or(|t| t != "null"))
                    .cloned()
                    .collect();
                if let [only] = rest.as_slice() {
                    let only = only.clone();
                    map.remove("anyOf");
                    if let Value::Object(inner) = only {
                        map.extend(inner);
                    }
                }
            }
            map.values_mut().for_each(drop_null);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null),
        _ => {}
    }
}

/// Every schema, in a stable order.
pub fn all() -> Vec<GeneratedSchema> {
    vec![
        generate::<NativeManifestSchema>(
            "astrolift.toml.schema.json",
            "astrolift.toml.schema.json",
        ),
        generate::<FederationSchema>(
            "astrolift.agents.toml.schema.json",
            "astrolift.agents.toml.schema.json",
        ),
        generate::<ConfigSchema>("config.schema.json", "config.schema.json"),
        generate::<WorkspaceSchema>("workspace.schema.json", "workspace.schema.json"),
        generate::<WorkflowSchema>("workflow.schema.json", "workflow.schema.json"),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn properties(json: &str, pointer: &str) -> BTreeSet<String> {
        let value: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
        value
            .pointer(pointer)
            .and_then(|p| p.as_object())
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn set(keys: &[&str]) -> BTreeSet<String> {
        keys.iter().map(|k| (*k).to_owned()).collect()
    }

    #[test]
    fn models_have_the_walkers_keys() {
        let schemas = all();
        assert_eq!(
            properties(&schemas[0].json, "/properties"),
            set(crate::native::ROOT_KEYS)
        );
        assert_eq!(
            properties(&schemas[3].json, "/properties"),
            set(crate::workspace::TOP_KEYS)
        );
        assert_eq!(
            properties(&schemas[3].json, "/$defs/WsSpec/properties"),
            set(crate::workspace::SPEC_KEYS)
        );
        assert_eq!(
            properties(&schemas[2].json, "/properties"),
            set(crate::config::TOP_KEYS)
        );
        assert_eq!(
            properties(&schemas[0].json, "/$defs/TriggerSchema/properties"),
            set(crate::triggers::TRIGGER_KEYS)
        );
        assert_eq!(
            properties(&schemas[4].json, "/properties"),
            set(crate::workflow::ROOT_KEYS)
        );
        assert_eq!(
            properties(&schemas[4].json, "/$defs/WorkflowStageSchema/properties"),
            set(crate::workflow::STAGE_KEYS)
        );
    }
}
