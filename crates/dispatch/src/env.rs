//! `render_runtime_env`: the container environment of one dispatch, exactly
//! as the runtime environment table of docs/reference.md §11 says.
//!
//! | Variable | Absent when |
//! |---|---|
//! | `ASTROLIFT_TRIGGER_PAYLOAD` | the payload is empty (`None`, `null` or `{}`): never the string `null` |
//! | `ASTROLIFT_TASK_ID`, `ASTROLIFT_CONTROLLER_URL`, `ASTROLIFT_WORKSPACE` | never |
//! | `AGENT_CALLBACK_URL` + `ASTROLIFT_CLUSTER_KEY` | no callback route; the key is minted fresh (OS CSPRNG) on every render |
//! | `ASTROLIFT_BRIEF_ID` (the brief's path), `ASTROLIFT_BRIEF_HASH` (its sha256) | the snapshot has no brief |
//! | `ASTROLIFT_PAYLOAD_URL`, `ASTROLIFT_PAYLOAD_HASH` (the archive digest) | the package ships inline (no URL given) |
//! | `AGENT_SYSTEM`, `AGENT_PROMPT` | listener mode |
//! | `ASTROLIFT_SNAPSHOT_URL`, `_INTERVAL`, `_LOCAL_PATH` | not a VNC runtime, or no blob store |
//! | `ASTROLIFT_TMUX_SESSION` | not a VNC runtime |
//!
//! Then the manifest's `[environment]` (from the snapshot) is merged last,
//! minus the reserved names ([`RESERVED_ENV`]); each one dropped gives an
//! [`EnvWarning`]. Secret references pass the same filter ([`without_reserved`]), so
//! no manifest-controlled source ever sets a reserved name. The texts of the brief, skills and tools are inputs: this
//! function reads no file and no network; its only effect is the CSPRNG.

use std::collections::BTreeMap;

use astrolift_manifest::native::RESERVED_ENV;
use serde::Deserialize;
use serde_json::Value;

use crate::prompts::{PromptTexts, compose_prompts, non_empty_payload};

/// The parts of the agent snapshot (`astrolift.snapshot/v1` or `/v2`) rendering reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SnapshotView {
    pub name: String,
    #[serde(default)]
    pub brief: Option<BriefView>,
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// Secret name to `secret://` reference.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// The skill references, in resolved order, as the snapshot has them.
    #[serde(default)]
    pub skills: Vec<Value>,
    pub payload: PayloadView,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct BriefView {
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct PayloadView {
    /// `sha256:<hex>` of the package archive.
    pub digest: String,
    /// Archive bytes.
    #[serde(default)]
    pub size: u64,
    /// `true` when the package ships inline (an agent without `[package]`).
    #[serde(default)]
    pub inline: bool,
}

impl SnapshotView {
    /// Reads the view from the snapshot's JSON.
    pub fn from_json(snapshot: &Value) -> Result<Self, serde_json::Error> {
        SnapshotView::deserialize(snapshot)
    }
}

/// The dispatch being rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchContext {
    /// The task's id (`ASTROLIFT_TASK_ID`).
    pub task_id: String,
    /// The mapped payload; `None`, `null` and `{}` are all the empty payload.
    pub payload: Option<Value>,
}

/// How the runtime is set up for this dispatch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuntimeOptions {
    pub controller_url: String,
    pub workspace: String,
    /// Where a one-shot pod reports its result; `None`: no callback route.
    pub callback_url: Option<String>,
    /// The runtime idles in listener mode instead of running once.
    pub listener_mode: bool,
    /// A (presigned) URL of the package archive; `None`: the package ships inline.
    pub payload_url: Option<String>,
    /// Set for a VNC runtime.
    pub vnc: Option<VncOptions>,
    pub prompts: PromptTexts,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VncOptions {
    pub tmux_session: String,
    /// `None` when no blob store is configured.
    pub snapshot: Option<SnapshotUpload>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotUpload {
    pub url: String,
    pub interval_seconds: u64,
    pub local_path: String,
}

/// A manifest `[environment]` entry that was dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvWarning {
    pub name: String,
    pub message: String,
}

/// The rendered environment and the warnings for dropped manifest entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedEnv {
    pub vars: BTreeMap<String, String>,
    pub warnings: Vec<EnvWarning>,
}

/// The OS CSPRNG failed; nothing was rendered.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot mint the cluster key: {0}")]
pub struct RenderError(String);

/// Renders the environment (see the module docs for every rule).
pub fn render_runtime_env(
    snapshot: &SnapshotView,
    dispatch: &DispatchContext,
    runtime: &RuntimeOptions,
) -> Result<RenderedEnv, RenderError> {
    let mut vars = BTreeMap::new();
    let mut set = |name: &str, value: String| {
        vars.insert(name.to_owned(), value);
    };
    let payload = non_empty_payload(dispatch.payload.as_ref()).map(Value::to_string);
    if let Some(payload) = &payload {
        set("ASTROLIFT_TRIGGER_PAYLOAD", payload.clone());
    }
    set("ASTROLIFT_TASK_ID", dispatch.task_id.clone());
    set("ASTROLIFT_CONTROLLER_URL", runtime.controller_url.clone());
    set("ASTROLIFT_WORKSPACE", runtime.workspace.clone());
    if let Some(callback) = &runtime.callback_url {
        set("AGENT_CALLBACK_URL", callback.clone());
        set("ASTROLIFT_CLUSTER_KEY", mint_cluster_key()?);
    }
    if let Some(brief) = &snapshot.brief {
        set("ASTROLIFT_BRIEF_ID", brief.path.clone());
        set("ASTROLIFT_BRIEF_HASH", brief.sha256.clone());
    }
    if let Some(url) = &runtime.payload_url {
        set("ASTROLIFT_PAYLOAD_URL", url.clone());
        set("ASTROLIFT_PAYLOAD_HASH", snapshot.payload.digest.clone());
    }
    if !runtime.listener_mode {
        let prompts = compose_prompts(&runtime.prompts, &snapshot.name, dispatch.payload.as_ref());
        set("AGENT_SYSTEM", prompts.system);
        set("AGENT_PROMPT", prompts.kickoff);
    }
    if let Some(vnc) = &runtime.vnc {
        set("ASTROLIFT_TMUX_SESSION", vnc.tmux_session.clone());
        if let Some(upload) = &vnc.snapshot {
            set("ASTROLIFT_SNAPSHOT_URL", upload.url.clone());
            set(
                "ASTROLIFT_SNAPSHOT_INTERVAL",
                upload.interval_seconds.to_string(),
            );
            set("ASTROLIFT_SNAPSHOT_LOCAL_PATH", upload.local_path.clone());
        }
    }
    let warnings = merge_manifest_environment(&mut vars, &snapshot.environment);
    Ok(RenderedEnv { vars, warnings })
}

/// Adds the manifest's entries, except reserved names (one warning each).
fn merge_manifest_environment(
    vars: &mut BTreeMap<String, String>,
    environment: &BTreeMap<String, String>,
) -> Vec<EnvWarning> {
    let mut warnings = Vec::new();
    vars.extend(without_reserved(
        "[environment]",
        environment,
        &mut warnings,
    ));
    warnings
}

/// The entries of a manifest-controlled `section` (`[environment]`, `[secrets]`) whose
/// names are not reserved ([`RESERVED_ENV`]); each one dropped adds an [`EnvWarning`].
/// The manifest parser already refuses them; this holds for records written before it did.
pub fn without_reserved(
    section: &str,
    entries: &BTreeMap<String, String>,
    warnings: &mut Vec<EnvWarning>,
) -> BTreeMap<String, String> {
    let mut kept = BTreeMap::new();
    for (name, value) in entries {
        if RESERVED_ENV.contains(&name.as_str()) {
            warnings.push(EnvWarning {
                name: name.clone(),
                message: format!(
                    "{section} sets `{name}`, a runtime variable the dispatcher owns; it is ignored"
                ),
            });
        } else {
            kept.insert(name.clone(), value.clone());
        }
    }
    kept
}

/// 32 bytes from the OS CSPRNG, hex.
fn mint_cluster_key() -> Result<String, RenderError> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| RenderError(e.to_string()))?;
    Ok(hex::encode(key))
}
