//! Dependency layers built by the packager agent (docs/reference.md "Dependency layers").
//!
//! - [`request_layers`]: after a sync registered agents whose packages need layers
//!   (`astrolift_sync::Report::layer_needs`), dispatch the deployment's packager agent
//!   (`ASTROLIFT_PACKAGER_AGENT`) once per layer key that has no build, or whose last build
//!   failed, with `{"artifact_ref","dependency_files"}`; a key already built or being
//!   built is reused with no dispatch.
//! - [`parse_packager_result`]: the packager's terminal callback result, checked against
//!   its bounds before anything is recorded (the callback answers 400 otherwise), and
//!   [`record_packager_result`], which makes the layer build `ready` or `failed`.
//! - [`attach_layers`]: what a dispatch of an agent with layers carries in
//!   `package.layers` (a presigned URL per layer), or the refusal of a dispatch of an
//!   agent whose layers are pending or failed.

use astrolift_store::state::{
    Agent, AgentStatus, Layer, LayerBuild, LayerRequest, LayerStatus, StateStore, TaskStatus,
    UnixSeconds,
};
use astrolift_store::{StoreError, StoreResult};
use serde_json::{Value, json};

use crate::content::{ContentError, ContentSource};
use crate::dispatch::{DispatchError, DispatchQueue, DispatchRequest, Origin, new_dispatch};
pub use crate::message::PACKAGER_AGENT_ENV;
use crate::message::{DispatchContent, LayerRef, PACKAGER_TRIGGER_PREFIX, Source};
/// The most layers one result may list.
pub const MAX_LAYERS: usize = 16;
/// The longest `layer_id`, `name` or `artifact_ref` accepted.
pub const MAX_LAYER_FIELD: usize = 256;
/// The longest `mount_path` accepted.
pub const MAX_MOUNT_PATH: usize = 512;
/// The longest `error` accepted.
pub const MAX_LAYER_ERROR: usize = 4096;

/// Where an agent's dependency layers are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerState {
    /// Its package needs no layer.
    None,
    /// Needed, not built yet: the packager dispatch it waits for, if one was sent.
    Pending { dispatch_id: Option<String> },
    /// Built.
    Ready(Vec<Layer>),
    /// The last build failed, with why.
    Failed(String),
}

impl LayerState {
    /// `None` for [`LayerState::None`], else `pending`, `ready` or `failed`: the `layers`
    /// field of `agents list --format json`.
    pub fn name(&self) -> Option<&'static str> {
        match self {
            LayerState::None => None,
            LayerState::Pending { .. } => Some("pending"),
            LayerState::Ready(_) => Some("ready"),
            LayerState::Failed(_) => Some("failed"),
        }
    }
}

/// The layer state of `agent`: its build's, `Pending` with no dispatch when its key has no
/// build yet.
pub async fn agent_layer_state(state: &dyn StateStore, agent: &Agent) -> StoreResult<LayerState> {
    let Some(key) = agent.layer_key.as_deref() else {
        return Ok(LayerState::None);
    };
    Ok(match state.layers().get_layer_build(key).await? {
        None => LayerState::Pending { dispatch_id: None },
        Some(build) => match build.status {
            LayerStatus::Pending => LayerState::Pending {
                dispatch_id: build.dispatch_id,
            },
            LayerStatus::Ready => LayerState::Ready(build.layers),
            LayerStatus::Failed => LayerState::Failed(build.error.unwrap_or_default()),
        },
    })
}

/// Puts `agent`'s layers into `content.package.layers`, each with a URL presigned now.
/// An agent whose layers are pending (naming the packager dispatch they wait for) or failed
/// is refused ([`ContentError::LayersPending`], [`ContentError::LayersFailed`]) unless
/// `allow_pending`, and then goes without them.
pub async fn attach_layers(
    state: &dyn StateStore,
    source: &dyn ContentSource,
    agent: &Agent,
    content: &mut DispatchContent,
    allow_pending: bool,
    now: UnixSeconds,
) -> Result<(), ContentError> {
    let layers = match agent_layer_state(state, agent).await? {
        LayerState::None => return Ok(()),
        LayerState::Ready(layers) => layers,
        _ if allow_pending => return Ok(()),
        LayerState::Pending { dispatch_id } => {
            return Err(ContentError::LayersPending {
                agent: agent.key().to_string(),
                dispatch_id,
            });
        }
        LayerState::Failed(error) => {
            return Err(ContentError::LayersFailed {
                agent: agent.key().to_string(),
                error,
            });
        }
    };
    let mut refs = Vec::with_capacity(layers.len());
    for layer in layers {
        let presigned = source.layer_url(&layer.digest, now).await?;
        let (url, expires_at) = presigned.unzip();
        refs.push(LayerRef {
            layer_id: layer.layer_id,
            name: layer.name,
            digest: layer.digest,
            mount_path: layer.mount_path,
            url,
            expires_at,
        });
    }
    if let Some(package) = content.package.as_mut() {
        package.layers = refs;
    }
    Ok(())
}

/// What [`request_layers`] needs besides the requests.
#[derive(Clone, Copy)]
pub struct PackagerContext<'a> {
    pub state: &'a dyn StateStore,
    pub queue: &'a dyn DispatchQueue,
    pub content: &'a dyn ContentSource,
    /// `ASTROLIFT_PACKAGER_AGENT`, if set.
    pub packager: Option<&'a str>,
    pub callback_base: Option<&'a str>,
    pub now: UnixSeconds,
}

impl std::fmt::Debug for PackagerContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackagerContext")
            .field("packager", &self.packager)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

/// What became of one [`LayerRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerOutcome {
    /// Its key's layers are built: reused, no dispatch.
    Reused,
    /// A packager run for its key is under way: no new dispatch.
    InFlight,
    /// The packager was dispatched.
    Dispatched { dispatch_id: String },
    /// `ASTROLIFT_PACKAGER_AGENT` is unset, or names no active agent of the project.
    NoPackager { reason: String },
    /// The dispatch failed; the build is `failed` (the next sync retries).
    Failed { error: String },
}

/// Dispatches the packager for each request whose layer key has no build or a failed
/// one (once per key), in order. A store failure ends it with `Err`; every other
/// failure is an outcome.
pub async fn request_layers(
    context: PackagerContext<'_>,
    requests: &[LayerRequest],
) -> StoreResult<Vec<LayerOutcome>> {
    let mut outcomes: Vec<LayerOutcome> = Vec::with_capacity(requests.len());
    for (index, request) in requests.iter().enumerate() {
        let earlier = requests[..index]
            .iter()
            .position(|r| r.layer_key == request.layer_key);
        let outcome = match earlier.and_then(|at| outcomes.get(at)) {
            Some(LayerOutcome::Dispatched { .. }) => LayerOutcome::InFlight,
            Some(done) => done.clone(),
            None => request_one(context, request).await?,
        };
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

async fn request_one(
    context: PackagerContext<'_>,
    request: &LayerRequest,
) -> StoreResult<LayerOutcome> {
    let build = context
        .state
        .layers()
        .get_layer_build(&request.layer_key)
        .await?;
    match build.as_ref().map(|b| b.status) {
        Some(LayerStatus::Ready) => return Ok(LayerOutcome::Reused),
        Some(LayerStatus::Pending) => return Ok(LayerOutcome::InFlight),
        Some(LayerStatus::Failed) | None => {}
    }
    let packager = match find_packager(context, request).await? {
        Ok(packager) => packager,
        Err(reason) => return Ok(LayerOutcome::NoPackager { reason }),
    };
    let attempts = build.as_ref().map_or(0, |b| b.attempts) + 1;
    let dispatch = match packager_dispatch(context, request, &packager, attempts).await {
        Ok(dispatch) => dispatch,
        Err(error) => return Ok(LayerOutcome::Failed { error }),
    };
    let mut pending = LayerBuild {
        layer_key: request.layer_key.clone(),
        status: LayerStatus::Pending,
        layers: Vec::new(),
        error: None,
        dispatch_id: Some(dispatch.id.clone()),
        repository: request.repository.clone(),
        manifest_path: request.manifest_path.clone(),
        artifact_ref: request.artifact_ref.clone(),
        attempts,
        updated_at: context.now,
        version: build.as_ref().map_or(1, |b| b.version + 1),
    };
    let expected = build.as_ref().map(|b| b.version);
    match context
        .state
        .layers()
        .put_layer_build(&pending, expected)
        .await
    {
        Ok(()) => {}
        // Another sync claimed the key first: its packager run builds the layers.
        Err(StoreError::Conflict(_)) => return Ok(LayerOutcome::InFlight),
        Err(error) => return Err(error),
    }
    let dispatch_id = dispatch.id.clone();
    match context
        .queue
        .record_and_publish(context.state, dispatch)
        .await
    {
        Ok(_) => Ok(LayerOutcome::Dispatched { dispatch_id }),
        Err(error) => {
            let error = error.to_string();
            let expected = pending.version;
            pending.status = LayerStatus::Failed;
            pending.error = Some(error.clone());
            pending.version += 1;
            context
                .state
                .layers()
                .put_layer_build(&pending, Some(expected))
                .await?;
            Ok(LayerOutcome::Failed { error })
        }
    }
}

/// The packager agent for `request`'s project, or why there is none.
async fn find_packager(
    context: PackagerContext<'_>,
    request: &LayerRequest,
) -> StoreResult<Result<Agent, String>> {
    let Some(name) = context.packager.map(str::trim).filter(|n| !n.is_empty()) else {
        return Ok(Err(format!("{PACKAGER_AGENT_ENV} is not set")));
    };
    let found = context.state.find_agents(&request.project_id, name).await?;
    Ok(found
        .into_iter()
        .find(|agent| agent.status == AgentStatus::Active)
        .ok_or_else(|| {
            format!(
                "{PACKAGER_AGENT_ENV}={name} names no active agent of project {}",
                request.project_id
            )
        }))
}

/// The packager dispatch for `request` (not written): its payload is
/// `{"artifact_ref","dependency_files"}`, its idempotency key
/// `packager:<layer key>:attempt:<n>`.
async fn packager_dispatch(
    context: PackagerContext<'_>,
    request: &LayerRequest,
    packager: &Agent,
    attempts: u32,
) -> Result<astrolift_store::state::Dispatch, String> {
    let content = context
        .content
        .content(packager, context.now)
        .await
        .map_err(|e| e.to_string())?;
    let payload = packager_payload(request);
    let dispatch = new_dispatch(&DispatchRequest {
        source: Source::Packager {
            agent: format!("{}:{}", request.repository, request.manifest_path),
            layer_key: request.layer_key.clone(),
        },
        repository: &packager.repository,
        manifest_path: &packager.manifest_path,
        snapshot_hash: &packager.snapshot_hash,
        idempotency_key: Some(format!(
            "{PACKAGER_TRIGGER_PREFIX}{}:attempt:{attempts}",
            request.layer_key
        )),
        payload: Some(&payload),
        origin: &Origin::TRUSTED,
        env_spec: None,
        config: None,
        content: &content,
        callback_base: context.callback_base,
        now: context.now,
    });
    dispatch.map_err(|e: DispatchError| e.to_string())
}

/// `{"artifact_ref": "sha256:<hex>", "dependency_files": [{"path","sha256"}...]}`.
pub fn packager_payload(request: &LayerRequest) -> Value {
    json!({
        "artifact_ref": request.artifact_ref,
        "dependency_files": request.dependency_files,
    })
}

/// The layer key of a packager dispatch's record id (`packager:<key>`), if it is one.
pub fn packager_layer_key(trigger_id: &str) -> Option<&str> {
    trigger_id.strip_prefix(PACKAGER_TRIGGER_PREFIX)
}

/// A packager's terminal result, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackagerResult {
    /// `{"status":"ok","layers":[...]}` on a `succeeded` report.
    Layers(Vec<Layer>),
    /// `{"status":"error","error":...}`, or a `failed` or `cancelled` report.
    Failed(String),
}

/// Checks a packager's terminal report (`status`, and `result` as JSON text): the packager's
/// return format plus `layers` (docs/reference.md §16). `Err` says what is malformed (the callback answers 400
/// and records nothing).
pub fn parse_packager_result(
    status: TaskStatus,
    result: Option<&str>,
) -> Result<PackagerResult, String> {
    let value: Option<Value> = result
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| format!("result is not JSON: {e}"))?;
    if status != TaskStatus::Succeeded {
        let error = value
            .as_ref()
            .and_then(|v| v.get("error"))
            .and_then(Value::as_str)
            .map(|e| bounded("error", e, MAX_LAYER_ERROR))
            .transpose()?
            .unwrap_or_else(|| format!("the packager run was {}", status.as_str()));
        return Ok(PackagerResult::Failed(error));
    }
    let object = value
        .as_ref()
        .and_then(Value::as_object)
        .ok_or("the packager's result must be an object with a `status`")?;
    match object.get("status").and_then(Value::as_str) {
        Some("ok") => {}
        Some("error") => {
            let error = object
                .get("error")
                .and_then(Value::as_str)
                .ok_or("an error result needs an `error` string")?;
            return Ok(PackagerResult::Failed(bounded(
                "error",
                error,
                MAX_LAYER_ERROR,
            )?));
        }
        _ => return Err("the packager's result `status` must be \"ok\" or \"error\"".to_owned()),
    }
    if let Some(artifact_ref) = object.get("artifact_ref") {
        let text = artifact_ref
            .as_str()
            .ok_or("`artifact_ref` must be a string")?;
        bounded("artifact_ref", text, MAX_LAYER_FIELD)?;
    }
    let layers = object
        .get("layers")
        .and_then(Value::as_array)
        .ok_or("an ok result needs a `layers` array")?;
    if layers.len() > MAX_LAYERS {
        return Err(format!(
            "the result lists {} layers; at most {MAX_LAYERS} are accepted",
            layers.len()
        ));
    }
    layers
        .iter()
        .enumerate()
        .map(|(index, layer)| parse_layer(layer).map_err(|e| format!("layers[{index}]: {e}")))
        .collect::<Result<Vec<_>, _>>()
        .map(PackagerResult::Layers)
}

fn parse_layer(value: &Value) -> Result<Layer, String> {
    let field = |name: &str, max: usize| -> Result<String, String> {
        let text = value
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("`{name}` must be a string"))?;
        if text.is_empty() {
            return Err(format!("`{name}` is empty"));
        }
        bounded(name, text, max)
    };
    let layer = Layer {
        layer_id: field("layer_id", MAX_LAYER_FIELD)?,
        name: field("name", MAX_LAYER_FIELD)?,
        mount_path: field("mount_path", MAX_MOUNT_PATH)?,
        digest: field("digest", MAX_LAYER_FIELD)?,
    };
    check_mount_path(&layer.mount_path)?;
    if !is_sha256_digest(&layer.digest) {
        return Err("`digest` must be sha256:<64 lowercase hex digits>".to_owned());
    }
    Ok(layer)
}

fn bounded(name: &str, text: &str, max: usize) -> Result<String, String> {
    if text.len() > max {
        return Err(format!(
            "`{name}` is {} bytes; at most {max} are accepted",
            text.len()
        ));
    }
    Ok(text.to_owned())
}

/// An absolute, normalised path: starts with `/`, no empty, `.` or `..` segment, no
/// trailing `/` (except `/` itself, which is refused: a layer never covers the root), no
/// control character or backslash.
fn check_mount_path(path: &str) -> Result<(), String> {
    let refuse = |why: &str| Err(format!("`mount_path` {path:?} {why}"));
    let Some(rest) = path.strip_prefix('/') else {
        return refuse("must be absolute");
    };
    if path.chars().any(|c| c.is_control() || c == '\\') {
        return refuse("holds a control character or a backslash");
    }
    if rest
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return refuse("must be normalised (no empty, `.` or `..` segment, no trailing `/`)");
    }
    Ok(())
}

/// `sha256:` and 64 lowercase hex digits.
pub fn is_sha256_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Records a checked packager result on the build of `layer_key`, if that build is
/// still waiting for `dispatch_id` (a late result of an earlier attempt changes
/// nothing). Returns whether the build changed.
pub async fn record_packager_result(
    state: &dyn StateStore,
    layer_key: &str,
    dispatch_id: &str,
    result: PackagerResult,
    now: UnixSeconds,
) -> StoreResult<bool> {
    let Some(build) = state.layers().get_layer_build(layer_key).await? else {
        return Ok(false);
    };
    if build.status != LayerStatus::Pending || build.dispatch_id.as_deref() != Some(dispatch_id) {
        return Ok(false);
    }
    let expected = build.version;
    let mut next = build;
    next.version += 1;
    next.updated_at = now;
    match result {
        PackagerResult::Layers(layers) => {
            next.status = LayerStatus::Ready;
            next.layers = layers;
            next.error = None;
        }
        PackagerResult::Failed(error) => {
            next.status = LayerStatus::Failed;
            next.error = Some(error);
        }
    }
    state
        .layers()
        .put_layer_build(&next, Some(expected))
        .await?;
    Ok(true)
}

/// Why [`report_packager_dispatch`] recorded nothing.
#[derive(Debug, thiserror::Error)]
pub enum PackagerReportError {
    #[error("no dispatch has the id {0}")]
    NoDispatch(String),
    #[error("dispatch {0} is not a packager dispatch")]
    NotPackager(String),
    #[error("the packager's result is malformed: {0}")]
    Malformed(String),
    #[error("dispatch {dispatch_id} has a terminal status already ({status})")]
    Finished { dispatch_id: String, status: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the callback route does for a packager dispatch, by dispatch id, for an operator
/// (`astrolift layers report`): checks the result, records the task's terminal report,
/// then the layer build. Returns the layer key.
pub async fn report_packager_dispatch(
    state: &dyn StateStore,
    dispatch_id: &str,
    status: TaskStatus,
    result: Option<&Value>,
    now: UnixSeconds,
) -> Result<String, PackagerReportError> {
    let task = state
        .tasks()
        .get_dispatch_task(dispatch_id)
        .await?
        .ok_or_else(|| PackagerReportError::NoDispatch(dispatch_id.to_owned()))?;
    let dispatch = state
        .get_dispatch(&task.idempotency_key)
        .await?
        .ok_or_else(|| PackagerReportError::NoDispatch(dispatch_id.to_owned()))?;
    let layer_key = packager_layer_key(&dispatch.trigger_id)
        .ok_or_else(|| PackagerReportError::NotPackager(dispatch_id.to_owned()))?
        .to_owned();
    let text = result.map(Value::to_string);
    let parsed =
        parse_packager_result(status, text.as_deref()).map_err(PackagerReportError::Malformed)?;
    let report = astrolift_store::state::TaskReport {
        status,
        result: text,
    };
    let outcome =
        astrolift_store::state::tasks::report_task(state.tasks(), &task.task_id, &report, now)
            .await?;
    if let astrolift_store::state::ReportOutcome::AlreadyFinished(task) = outcome {
        return Err(PackagerReportError::Finished {
            dispatch_id: dispatch_id.to_owned(),
            status: task.status.as_str().to_owned(),
        });
    }
    record_packager_result(state, &layer_key, &dispatch.id, parsed, now).await?;
    Ok(layer_key)
}
