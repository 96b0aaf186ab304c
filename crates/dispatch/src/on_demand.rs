//! A dispatch a person asks for, of one agent version: `astrolift dispatch AGENT` and the
//! pull-request comment `/astrolift dispatch AGENT` (docs/reference.md §4 and "Previews").
//! Both go through [`dispatch_on_demand`]: the snapshot's content, the agent's layers, the
//! env spec's parts, then the conditional record and the queue message.
//!
//! A preview runs as the agent its record describes (`Preview::as_agent`), and
//! may use only an env spec marked for previews ([`preview_may_use`]): an unmerged change
//! never gets production secrets.

use astrolift_store::StateStore;
use astrolift_store::state::{Agent, AgentStatus, EnvSpec, UnixSeconds};
use serde_json::Value;

use crate::content::{ContentError, ContentSource, env_spec_parts};
use crate::dispatch::{
    DispatchError, DispatchQueue, DispatchRequest, DispatchResult, Origin, record_and_queue,
};
use crate::layers::attach_layers;
use crate::message::Source;
use crate::prompts::non_empty_payload;

/// The code of the refusal of an env spec not marked for previews.
pub const NOT_FOR_PREVIEWS: &str = "preview/env-spec-not-for-previews";

/// One dispatch of `agent`, asked for by a person.
#[derive(Debug, Clone)]
pub struct OnDemand<'a> {
    pub agent: &'a Agent,
    /// The env spec it runs with, already checked for the agent's project (and, for a
    /// preview, by [`preview_may_use`]).
    pub env_spec: Option<&'a EnvSpec>,
    /// The `--input` object; `None` or `null` for no payload.
    pub input: Option<&'a Value>,
    /// `None`: every call is a new dispatch.
    pub idempotency_key: Option<String>,
    pub source: Source,
    pub origin: &'a Origin,
    /// Dispatch without layers that are pending or failed (`--allow-pending-layers`).
    pub allow_pending_layers: bool,
    /// `ASTROLIFT_CALLBACK_BASE_URL`, when a callback route is configured.
    pub callback_base: Option<&'a str>,
    pub now: UnixSeconds,
}

/// Why an on-demand dispatch was not made.
#[derive(Debug, thiserror::Error)]
pub enum OnDemandError {
    /// Only an active agent runs.
    #[error("{agent} is {status}: only an active agent can be dispatched")]
    NotActive { agent: String, status: &'static str },
    /// Its content (snapshot, package URL, layers, config) cannot be delivered.
    #[error("cannot dispatch {agent}: {source}")]
    Content {
        agent: String,
        #[source]
        source: ContentError,
    },
    #[error(transparent)]
    Dispatch(#[from] DispatchError),
}

/// Records and queues the dispatch `request` asks for.
pub async fn dispatch_on_demand(
    state: &dyn StateStore,
    content_source: &dyn ContentSource,
    queue: &dyn DispatchQueue,
    request: &OnDemand<'_>,
) -> Result<DispatchResult, OnDemandError> {
    let agent = request.agent;
    if agent.status != AgentStatus::Active {
        return Err(OnDemandError::NotActive {
            agent: agent.key().to_string(),
            status: agent.status.as_str(),
        });
    }
    queue.has_room().await?;
    let content_error = |source| OnDemandError::Content {
        agent: agent.key().to_string(),
        source,
    };
    let now = request.now;
    let mut content = content_source
        .content(agent, now)
        .await
        .map_err(content_error)?;
    // The message names the agent as its record does: a preview runs as `<agent>-pr<N>`
    // (for a registered agent the record's name is the snapshot's).
    content.snapshot.name.clone_from(&agent.name);
    let allow_pending = request.allow_pending_layers;
    attach_layers(
        state,
        content_source,
        agent,
        &mut content,
        allow_pending,
        now,
    )
    .await
    .map_err(content_error)?;
    let (env_spec, config) = env_spec_parts(content_source, state, request.env_spec, now)
        .await
        .map_err(content_error)?;
    let dispatch = DispatchRequest {
        source: request.source.clone(),
        repository: &agent.repository,
        manifest_path: &agent.manifest_path,
        snapshot_hash: &agent.snapshot_hash,
        idempotency_key: request.idempotency_key.clone(),
        payload: non_empty_payload(request.input),
        origin: request.origin,
        env_spec,
        config: config.as_ref(),
        content: &content,
        callback_base: request.callback_base,
        now,
    };
    Ok(record_and_queue(state, queue, &dispatch).await?)
}

/// Refuses, for a preview, an env spec not marked `previews` (`env-spec upsert … --previews`).
pub fn preview_may_use(spec: &EnvSpec) -> Result<(), NotForPreviews> {
    if spec.previews {
        Ok(())
    } else {
        Err(NotForPreviews {
            env_spec: spec.name.clone(),
        })
    }
}

/// An env spec a preview may not use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{NOT_FOR_PREVIEWS}: env spec {env_spec} is not for previews; a preview runs unmerged \
     code, so only an env spec upserted with `--previews` may be given to one"
)]
pub struct NotForPreviews {
    pub env_spec: String,
}
