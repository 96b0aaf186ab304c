//! The resolved environment of an agent: everything that defines it at run
//! time, as one canonical, serialisable snapshot (docs/reference.md §5.4, drift).
//!
//! Built from a workspace manifest and, optionally, the agent's own runtime
//! facts (image, execution policy, environment, secrets) as plain data, so the
//! CLI, the sync pipeline and tests all build it the same way. Canonical:
//! maps are sorted, sets are sets, so two resolutions of the same input
//! serialise to the same bytes and [`crate::drift::drift`] compares by key.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::AgentManifest;
use crate::workspace::{OutputSurface, WorkspaceManifest};

/// The resolved environment of one agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedEnvironment {
    /// `metadata.slug@metadata.version` of the workspace manifest, the audit pin.
    pub manifest: String,
    /// The surfaces the manifest may boot on.
    pub surfaces: BTreeSet<String>,
    /// The primary agent.
    pub agent: Option<ResolvedAgent>,
    /// Sub-agent slug → its alias and default-model override.
    pub sub_agents: BTreeMap<String, ResolvedSubAgent>,
    /// Skill slug → semver requirement (`None` tracks the catalogue's current version).
    pub skills: BTreeMap<String, Option<String>>,
    /// Tool selections, each as `kind:providerKind:resourceId[:toolName]`.
    pub tool_selection: BTreeSet<String>,
    /// Credential name → binding.
    pub credentials: BTreeMap<String, ResolvedCredential>,
    /// Environment variables (values are plain text or `${credential.…}` references).
    pub environment: BTreeMap<String, String>,
    pub permissions: ResolvedPermissions,
    /// Persisted workspace paths; `None` when the manifest has no persistence block.
    pub persistence: Option<BTreeSet<String>>,
    pub output_surface: Option<ResolvedOutputSurface>,
    /// The primary container image.
    pub image: Option<String>,
    /// The execution policy.
    pub policy: Option<ExecutionPolicy>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedAgent {
    pub slug: String,
    pub stage: Option<String>,
    pub role: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedSubAgent {
    pub alias: Option<String>,
    pub default_model: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedCredential {
    pub kind: String,
    pub source_ref: String,
    pub required: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedPermissions {
    /// `None` when no allowlist narrows the agent's own permissions.
    pub allow: Option<BTreeSet<String>>,
    pub deny: BTreeSet<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedOutputSurface {
    pub kind: String,
    pub port: Option<u16>,
    pub health_path: String,
    pub auto_open: bool,
}

/// The workload's execution policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionPolicy {
    pub run_family: Option<String>,
    pub max_retries: Option<u32>,
    pub tool_timeout_seconds: Option<u64>,
    pub result_ttl_hours: Option<u64>,
}

/// What the agent itself contributes, as plain data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentRuntime {
    pub image: Option<String>,
    pub policy: Option<ExecutionPolicy>,
    /// The agent's own `[environment]` (reserved names already removed).
    pub environment: BTreeMap<String, String>,
    /// The agent's `[secrets]`: name → `secret://` reference.
    pub secrets: BTreeMap<String, String>,
}

impl AgentRuntime {
    /// The runtime facts of a validated native agent manifest.
    pub fn from_agent(agent: &AgentManifest) -> Self {
        let workload = agent.workload.as_ref();
        let image = workload
            .and_then(|w| w.containers.iter().find(|c| c.is_primary))
            .map(|c| c.image_ref.clone());
        let policy = workload.map(|w| ExecutionPolicy {
            run_family: w.run_family.clone(),
            max_retries: w.max_retries,
            tool_timeout_seconds: w.tool_timeout_seconds,
            result_ttl_hours: w.result_ttl_hours,
        });
        Self {
            image,
            policy,
            environment: agent.environment.clone(),
            secrets: agent.secrets.clone(),
        }
    }
}

/// The credential kind given to an agent's `[secrets]` entries, which name
/// a secret-store reference and nothing more.
pub const NATIVE_SECRET_KIND: &str = "generic-secret";

impl ResolvedEnvironment {
    /// Resolves a workspace manifest, layered over the agent's runtime facts
    /// when given. The workspace's `spec.env` wins over the agent's
    /// `[environment]`, and its credentials over the agent's `[secrets]`
    /// (which resolve as required `generic-secret` credentials).
    pub fn resolve(workspace: &WorkspaceManifest, agent: Option<&AgentRuntime>) -> Self {
        let mut resolved = agent.map(Self::from_runtime).unwrap_or_default();
        let metadata = &workspace.metadata;
        let spec = &workspace.spec;
        resolved.manifest = format!("{}@{}", metadata.slug, metadata.version);
        resolved.surfaces = metadata.surface_compat.iter().cloned().collect();
        if let Some(agent) = &spec.agent {
            resolved.agent = Some(ResolvedAgent {
                slug: agent.slug.clone(),
                stage: agent.stage.clone(),
                role: agent.role.clone(),
            });
            resolved.sub_agents = agent
                .sub_agents
                .iter()
                .map(|s| {
                    let sub = ResolvedSubAgent {
                        alias: s.alias.clone(),
                        default_model: s.default_model.iter().cloned().collect(),
                    };
                    (s.slug.clone(), sub)
                })
                .collect();
        }
        resolved.skills = spec
            .skills
            .iter()
            .map(|s| (s.slug.clone(), s.version.clone()))
            .collect();
        resolved.tool_selection = spec
            .tool_selection
            .iter()
            .map(|t| {
                let mut key = format!("{}:{}:{}", t.kind, t.provider_kind, t.resource_id);
                if let Some(tool) = &t.tool_name {
                    key.push(':');
                    key.push_str(tool);
                }
                key
            })
            .collect();
        for credential in &spec.credentials {
            let binding = ResolvedCredential {
                kind: credential.kind.clone(),
                source_ref: credential.source_ref.clone(),
                required: credential.required,
            };
            resolved
                .credentials
                .insert(credential.name.clone(), binding);
        }
        for env in &spec.env {
            resolved
                .environment
                .insert(env.name.clone(), env.value.clone());
        }
        resolved.permissions = ResolvedPermissions {
            allow: spec
                .permissions
                .allow
                .as_ref()
                .map(|a| a.iter().cloned().collect()),
            deny: spec.permissions.deny.iter().cloned().collect(),
        };
        resolved.persistence = spec
            .persistence
            .as_ref()
            .map(|p| p.iter().cloned().collect());
        resolved.output_surface = spec.output_surface.as_ref().map(output_surface);
        resolved
    }

    fn from_runtime(runtime: &AgentRuntime) -> Self {
        let credentials = runtime
            .secrets
            .iter()
            .map(|(name, reference)| {
                let binding = ResolvedCredential {
                    kind: NATIVE_SECRET_KIND.to_owned(),
                    source_ref: reference.clone(),
                    required: true,
                };
                (name.clone(), binding)
            })
            .collect();
        Self {
            image: runtime.image.clone(),
            policy: runtime.policy.clone(),
            environment: runtime.environment.clone(),
            credentials,
            ..Self::default()
        }
    }

    /// The canonical JSON text: sorted keys, no insignificant whitespace.
    pub fn canonical_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

fn output_surface(surface: &OutputSurface) -> ResolvedOutputSurface {
    ResolvedOutputSurface {
        kind: surface.kind.clone(),
        port: surface.port,
        health_path: surface.health_path.clone(),
        auto_open: surface.auto_open,
    }
}
