//! The dispatch message v1 (`astrolift.dispatch/v1`, JSON Schema
//! `schemas/dispatch.schema.json`, docs/reference.md "Dispatch message"):
//! everything a platform controller needs to start one agent run.
//!
//! [`build_message`] is the one function that makes a message; every path
//! that creates a dispatch (a generic trigger, a GitHub-sourced trigger,
//! `astrolift dispatch`, workflow stages) goes through
//! [`crate::dispatch::new_dispatch`], which calls it, keeps the message in
//! the dispatch record and hands the same message to the queue.
//! Its prompts are [`compose_prompts`]'s ([`crate::prompts`]).

use std::collections::BTreeMap;

use astrolift_store::state::{EnvSpec, UnixSeconds};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::env::{SnapshotView, without_reserved};
use crate::prompts::{PromptTexts, Prompts, compose_prompts, non_empty_payload, tool_slugs};

/// The value of the message's `schema` field.
pub const DISPATCH_SCHEMA_V1: &str = "astrolift.dispatch/v1";

/// The `trigger_id` of a dispatch asked for by hand (`astrolift dispatch`).
pub const MANUAL_TRIGGER: &str = "manual";
/// The record id (`trigger_id`) prefix of a packager dispatch: `packager:<layer key>`
/// (docs/reference.md §16).
pub const PACKAGER_TRIGGER_PREFIX: &str = "packager:";
/// The `trigger_id` of a comment command's dispatch: this prefix and the comment's id.
pub const COMMENT_TRIGGER_PREFIX: &str = "comment:";
/// The variable naming the packager agent (an agent name, looked up in the project of
/// the agent that needs layers).
pub const PACKAGER_AGENT_ENV: &str = "ASTROLIFT_PACKAGER_AGENT";

/// One dispatch, as sent to the dispatch queue and kept in the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchMessage {
    /// Always [`DISPATCH_SCHEMA_V1`].
    pub schema: String,
    pub dispatch_id: String,
    /// The task's GUID (`ASTROLIFT_TASK_ID`; the callback route's `{task_id}`).
    pub task_id: String,
    pub idempotency_key: String,
    /// Unix seconds.
    pub created_at: UnixSeconds,
    pub source: Source,
    pub agent: AgentRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_spec: Option<EnvSpecRef>,
    /// The mapped payload or `--input`; absent for the empty payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    pub package: PackageRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brief: Option<BriefRef>,
    pub prompts: Prompts,
    /// The snapshot's skill references, in resolved order.
    pub skill_refs: Vec<Value>,
    /// Tool slugs: the skills' `allowed-tools` in resolved order, each once.
    pub tools: Vec<String>,
    /// The manifest's `[environment]`, less the reserved names.
    pub environment: BTreeMap<String, String>,
    /// Secret name to `secret://` reference; never a value.
    pub secrets: BTreeMap<String, String>,
    /// The env spec's config manifest, when it selects one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback: Option<CallbackRef>,
    pub trusted: bool,
    /// The GitHub sender's login (GitHub events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
}

impl DispatchMessage {
    /// The binding that fired, for a trigger dispatch.
    pub fn trigger_id(&self) -> Option<&str> {
        match &self.source {
            Source::Trigger { trigger_id } => Some(trigger_id),
            _ => None,
        }
    }
}

/// What caused the dispatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// A trigger binding fired (generic or GitHub-sourced).
    Trigger { trigger_id: String },
    /// `astrolift dispatch`.
    Manual,
    /// A workflow stage.
    Workflow { workflow_run: String, stage: String },
    /// The packager agent, building the dependency layers of `agent`
    /// (`owner/name:manifest`) for `layer_key` (docs/reference.md "Dependency layers").
    Packager { agent: String, layer_key: String },
    /// A `/astrolift dispatch` command in a pull request's comment `comment_id` (docs/reference.md
    /// "Previews"): line `line` (from 1) of the comment's command lines.
    Comment { comment_id: u64, line: u32 },
}

impl Source {
    /// The `trigger_id` kept on the record: the binding's id, `manual`,
    /// `workflow:<run>:<stage>`, `packager:<layer key>` or `comment:<comment id>`.
    pub fn record_id(&self) -> String {
        match self {
            Source::Trigger { trigger_id } => trigger_id.clone(),
            Source::Manual => MANUAL_TRIGGER.to_owned(),
            Source::Workflow {
                workflow_run,
                stage,
            } => format!("workflow:{workflow_run}:{stage}"),
            Source::Packager { layer_key, .. } => {
                format!("{PACKAGER_TRIGGER_PREFIX}{layer_key}")
            }
            Source::Comment { comment_id, .. } => format!("{COMMENT_TRIGGER_PREFIX}{comment_id}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRef {
    pub name: String,
    /// `owner/name`.
    pub repository: String,
    /// Path of its manifest in the repository.
    pub manifest: String,
    /// sha256 (hex) of the agent snapshot: the version that runs.
    pub snapshot: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvSpecRef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
}

impl EnvSpecRef {
    /// The reference to a stored env spec.
    pub fn of(spec: &EnvSpec) -> Self {
        EnvSpecRef {
            name: spec.name.clone(),
            agent_type: spec.agent_type.clone(),
            runtime: spec.runtime.clone(),
        }
    }
}

/// One layer in a dispatch message's `package.layers`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerRef {
    pub layer_id: String,
    pub name: String,
    /// `sha256:<hex>` of the layer's `tar.gz`.
    pub digest: String,
    /// Where the runtime mounts it.
    pub mount_path: String,
    /// Presigned GET URL of `layers/sha256/<hex>.tar.gz`; absent with no blob store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<UnixSeconds>,
}

/// The agent package: a presigned URL (with its expiry), or inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageRef {
    /// `sha256:<hex>` of the archive.
    pub digest: String,
    /// Archive bytes.
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Unix seconds after which `url` no longer downloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<UnixSeconds>,
    /// `true` when the package ships inline (no URL).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inline: bool,
    /// Its dependency layers, for the runtime to mount (docs/reference.md "Dependency
    /// layers"); absent when it has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerRef>,
}

impl PackageRef {
    /// A package that ships inline.
    pub fn inline(digest: impl Into<String>, size: u64) -> Self {
        PackageRef {
            digest: digest.into(),
            size,
            url: None,
            expires_at: None,
            inline: true,
            layers: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BriefRef {
    /// The brief's path in the repository (`ASTROLIFT_BRIEF_ID`).
    pub id: String,
    /// Its sha256 (`ASTROLIFT_BRIEF_HASH`).
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackRef {
    /// `<ASTROLIFT_CALLBACK_BASE_URL>/callbacks/<task_id>`.
    pub url: String,
}

/// The callback URL of `task_id` under the configured base, if any.
pub fn callback_url(base: Option<&str>, task_id: &str) -> Option<String> {
    let base = base.map(str::trim).filter(|b| !b.is_empty())?;
    Some(format!(
        "{}/callbacks/{task_id}",
        base.trim_end_matches('/')
    ))
}

/// What a dispatch of one agent version carries whatever caused it: read
/// from its snapshot, its package (prompt texts) and the blob store (URL).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DispatchContent {
    pub snapshot: SnapshotView,
    pub package: Option<PackageRef>,
    pub prompts: PromptTexts,
}

/// Everything [`build_message`] reads.
#[derive(Debug, Clone)]
pub struct MessageParts<'a> {
    pub dispatch_id: &'a str,
    pub task_id: &'a str,
    pub idempotency_key: &'a str,
    pub created_at: UnixSeconds,
    pub source: &'a Source,
    pub repository: &'a str,
    pub manifest_path: &'a str,
    pub snapshot_hash: &'a str,
    pub env_spec: Option<&'a EnvSpecRef>,
    pub config: Option<&'a Value>,
    /// Already reduced by [`non_empty_payload`].
    pub payload: Option<&'a Value>,
    pub content: &'a DispatchContent,
    pub callback_base: Option<&'a str>,
    pub sender: Option<&'a str>,
    pub trusted: bool,
}

/// The message v1 of one dispatch (the only constructor of messages).
pub fn build_message(parts: &MessageParts<'_>) -> DispatchMessage {
    let snapshot = &parts.content.snapshot;
    let payload = non_empty_payload(parts.payload).cloned();
    let package = parts.content.package.clone().unwrap_or_else(|| {
        PackageRef::inline(snapshot.payload.digest.clone(), snapshot.payload.size)
    });
    // The warnings surface where the environment is rendered (`render_dispatch`).
    let mut dropped = Vec::new();
    let environment = without_reserved("[environment]", &snapshot.environment, &mut dropped);
    let secrets = without_reserved("[secrets]", &snapshot.secrets, &mut dropped);
    DispatchMessage {
        schema: DISPATCH_SCHEMA_V1.to_owned(),
        dispatch_id: parts.dispatch_id.to_owned(),
        task_id: parts.task_id.to_owned(),
        idempotency_key: parts.idempotency_key.to_owned(),
        created_at: parts.created_at,
        source: parts.source.clone(),
        agent: AgentRef {
            name: snapshot.name.clone(),
            repository: parts.repository.to_owned(),
            manifest: parts.manifest_path.to_owned(),
            snapshot: parts.snapshot_hash.to_owned(),
        },
        env_spec: parts.env_spec.cloned(),
        prompts: compose_prompts(&parts.content.prompts, &snapshot.name, payload.as_ref()),
        payload,
        package,
        brief: snapshot.brief.as_ref().map(|b| BriefRef {
            id: b.path.clone(),
            hash: b.sha256.clone(),
        }),
        skill_refs: snapshot.skills.clone(),
        tools: tool_slugs(&parts.content.prompts),
        environment,
        secrets,
        config: parts.config.cloned(),
        callback: callback_url(parts.callback_base, parts.task_id).map(|url| CallbackRef { url }),
        trusted: parts.trusted,
        sender: parts.sender.map(str::to_owned),
    }
}
