//! [`render_dispatch`]: a recorded dispatch in, the container environment of
//! docs/reference.md §11 out: the call `astrolift render` makes and a platform
//! controller embeds.
//!
//! It reads the dispatch's task (by dispatch id) and record (its message v1: payload,
//! callback route, env spec, secret references), the snapshot and prompt texts through
//! [`BlobContent`] (kept per snapshot, like a dispatch's) with a package URL presigned
//! now, and renders with [`render_runtime_env`]:
//! - `ASTROLIFT_CONTROLLER_URL` and `ASTROLIFT_WORKSPACE` come from [`RenderOptions`];
//! - `AGENT_CALLBACK_URL` is the message's callback URL, and `ASTROLIFT_CLUSTER_KEY` is
//!   minted for this render; its sha256 becomes the task's latest
//!   ([`astrolift_store::state::tasks::record_render`]) before the environment is
//!   returned, so the key of every earlier render is dead;
//! - `ASTROLIFT_PAYLOAD_URL`/`_HASH` only for a package that does not ship inline;
//! - the VNC variables only for a `*-vnc` runtime (the dispatch's env spec), the
//!   `ASTROLIFT_SNAPSHOT_*` ones only with a blob store;
//! - `AGENT_SYSTEM`/`AGENT_PROMPT` not in listener mode;
//! - secrets stay `secret://` references ([`RenderedDispatch::secrets`]): no value is
//!   resolved here.
//!
//! A finished task (succeeded, failed, cancelled) is not rendered again.

use std::collections::BTreeMap;

use astrolift_store::state::tasks::record_render;
use astrolift_store::state::{DispatchTask, UnixSeconds};
use astrolift_store::{StateStore, StoreError};
use sha2::{Digest, Sha256};

use crate::content::{BlobContent, ContentError};
use crate::dispatch::{DispatchError, DispatchMessage, message_of};
use crate::env::{
    DispatchContext, RenderError, RenderedEnv, RuntimeOptions, SnapshotUpload, VncOptions,
    render_runtime_env, without_reserved,
};
use crate::message::DispatchContent;

/// `ASTROLIFT_WORKSPACE` unless the caller chooses another.
pub const DEFAULT_WORKSPACE: &str = "/workspace";
/// `ASTROLIFT_TMUX_SESSION` of a VNC runtime.
pub const TMUX_SESSION: &str = "astrolift";
/// `ASTROLIFT_SNAPSHOT_INTERVAL`: seconds between a VNC session's snapshot uploads.
pub const SNAPSHOT_INTERVAL_SECONDS: u64 = 300;
/// `ASTROLIFT_SNAPSHOT_LOCAL_PATH`: where a VNC session writes its snapshot before uploading.
pub const SNAPSHOT_LOCAL_PATH: &str = "/tmp/astrolift-snapshot.tar.gz";
/// The suffix of a VNC runtime's name (`claude-code-vnc`).
pub const VNC_RUNTIME_SUFFIX: &str = "-vnc";

/// How a render is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// `ASTROLIFT_CONTROLLER_URL`: the control plane's base URL.
    pub controller_url: String,
    /// `ASTROLIFT_WORKSPACE` ([`DEFAULT_WORKSPACE`] by default).
    pub workspace: String,
    /// The runtime idles in listener mode: no `AGENT_SYSTEM`/`AGENT_PROMPT`.
    pub listener: bool,
}

/// One render of a dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedDispatch {
    pub dispatch_id: String,
    pub task_id: String,
    /// The variables (the cluster key among them) and the warnings for dropped
    /// `[environment]` and `[secrets]` entries.
    pub env: RenderedEnv,
    /// Secret name to `secret://` reference, for the controller to resolve; never a value,
    /// never a reserved name.
    pub secrets: BTreeMap<String, String>,
}

/// Why a dispatch was not rendered. Nothing was recorded unless the error says so.
#[derive(Debug, thiserror::Error)]
pub enum RenderDispatchError {
    #[error("no dispatch {0}")]
    NotFound(String),
    #[error("dispatch {dispatch_id} is {status} already: there is nothing left to run")]
    Finished {
        dispatch_id: String,
        status: &'static str,
    },
    #[error(transparent)]
    Message(#[from] DispatchError),
    #[error("cannot read what dispatch {dispatch_id} runs: {source}")]
    Content {
        dispatch_id: String,
        source: ContentError,
    },
    #[error(transparent)]
    Key(#[from] RenderError),
    #[error("state store: {0}")]
    Store(#[from] StoreError),
}

/// Renders the dispatch `dispatch_id` (see the module docs).
pub async fn render_dispatch(
    state: &dyn StateStore,
    content: &BlobContent,
    dispatch_id: &str,
    options: &RenderOptions,
    now: UnixSeconds,
) -> Result<RenderedDispatch, RenderDispatchError> {
    let not_found = || RenderDispatchError::NotFound(dispatch_id.to_owned());
    let task = state
        .tasks()
        .get_dispatch_task(dispatch_id)
        .await?
        .ok_or_else(not_found)?;
    refuse_finished(&task)?;
    let dispatch = state
        .get_dispatch(&task.idempotency_key)
        .await?
        .ok_or_else(not_found)?;
    let message = message_of(&dispatch)?;
    let read = content
        .snapshot_dispatch_content(&dispatch.snapshot_hash, now)
        .await
        .map_err(|source| RenderDispatchError::Content {
            dispatch_id: dispatch_id.to_owned(),
            source,
        })?;
    let blobs = content.blob_location();
    let runtime = runtime_options(&message, &read, options, &blobs, &task.task_id);
    let context = DispatchContext {
        task_id: task.task_id.clone(),
        payload: message.payload.clone(),
    };
    let mut env = render_runtime_env(&read.snapshot, &context, &runtime)?;
    let secrets = without_reserved("[secrets]", &message.secrets, &mut env.warnings);
    let key_sha256 = env.vars.get("ASTROLIFT_CLUSTER_KEY").map(|k| key_hash(k));
    match record_render(state.tasks(), &task.task_id, key_sha256.as_deref(), now).await {
        Ok(_) => {}
        Err(StoreError::Conflict(_)) => return Err(finished(state, &task).await),
        Err(other) => return Err(other.into()),
    }
    Ok(RenderedDispatch {
        dispatch_id: dispatch.id,
        task_id: task.task_id,
        env,
        secrets,
    })
}

/// What the message, the content read now and the options say of the runtime.
fn runtime_options(
    message: &DispatchMessage,
    read: &DispatchContent,
    options: &RenderOptions,
    blobs: &str,
    task_id: &str,
) -> RuntimeOptions {
    let runtime_name = message.env_spec.as_ref().and_then(|s| s.runtime.as_deref());
    RuntimeOptions {
        controller_url: options.controller_url.clone(),
        workspace: options.workspace.clone(),
        callback_url: message.callback.as_ref().map(|c| c.url.clone()),
        listener_mode: options.listener,
        payload_url: read.package.as_ref().and_then(|p| p.url.clone()),
        vnc: vnc_options(runtime_name, Some(blobs), task_id),
        prompts: read.prompts.clone(),
    }
}

/// The VNC settings of `runtime` (a `*-vnc` name only); snapshots go under `blobs` (the
/// blob store's location), when there is one.
pub fn vnc_options(
    runtime: Option<&str>,
    blobs: Option<&str>,
    task_id: &str,
) -> Option<VncOptions> {
    runtime.filter(|r| r.ends_with(VNC_RUNTIME_SUFFIX))?;
    Some(VncOptions {
        tmux_session: TMUX_SESSION.to_owned(),
        snapshot: blobs.map(|location| SnapshotUpload {
            url: format!(
                "{}/sessions/{task_id}/snapshot.tar.gz",
                location.trim_end_matches('/')
            ),
            interval_seconds: SNAPSHOT_INTERVAL_SECONDS,
            local_path: SNAPSHOT_LOCAL_PATH.to_owned(),
        }),
    })
}

/// sha256 (hex) of a cluster key: what the task keeps, and what a callback's key is
/// compared by.
pub fn key_hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

fn refuse_finished(task: &DispatchTask) -> Result<(), RenderDispatchError> {
    if task.status.is_terminal() {
        return Err(RenderDispatchError::Finished {
            dispatch_id: task.dispatch_id.clone(),
            status: task.status.as_str(),
        });
    }
    Ok(())
}

/// The error for a task that finished while it was being rendered.
async fn finished(state: &dyn StateStore, task: &DispatchTask) -> RenderDispatchError {
    match state.tasks().get_task(&task.task_id).await {
        Ok(Some(now)) => match refuse_finished(&now) {
            Err(error) => error,
            Ok(()) => StoreError::Unavailable("the task changed while rendering".into()).into(),
        },
        Ok(None) => RenderDispatchError::NotFound(task.dispatch_id.clone()),
        Err(error) => error.into(),
    }
}
