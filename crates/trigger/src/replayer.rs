//! Replaying a changed binding's kept requests (docs/reference.md §9, "Trigger replay"):
//! each request evaluated through the registered binding and through the head's, in the jq
//! sandbox, nothing dispatched, and the two outcomes compared ([`crate::replay`]).
//!
//! # Bounds
//! - At most [`MAX_REPLAYED_BINDINGS`] bindings per replay; the rest are named, not replayed.
//! - Per binding, at most [`MAX_KEPT_REQUESTS`] requests, each evaluated once through the
//!   registered binding and once through the head's: at most 20 bounded evaluations of each
//!   binding, whatever the bodies hold (every evaluation has the sandbox's time, stack,
//!   memory and output limits).
//! - Evaluations run one at a time, so a replay holds at most one of the process's
//!   evaluation slots and live traffic keeps the others. A request that finds every slot
//!   taken is counted `skipped`, not waited for.
//!
//! # What is shown
//! Kept bodies are tenant data and a check run is read by everyone who can read the pull
//! request: by default a replay names paths with the value's type and length, and an error
//! by its stage only (a jq error's text can quote the body). Values, payloads and error
//! texts are shown only for a binding whose registered version sets `replay_values = true`,
//! on a private repository ([`ReplayOptions::private`]): a pull request cannot reveal them by
//! adding the key.

use astrolift_manifest::Limits;
use astrolift_manifest::Span;
use astrolift_manifest::triggers::TriggerSpec;
use astrolift_store::StateStore;
use astrolift_store::state::{KeptOutcome, KeptRequest, MAX_KEPT_REQUESTS, TriggerBinding};
use serde::Serialize;
use serde_json::Value;

use crate::error::TriggerError;
use crate::evaluate::{self, CompiledBinding, evaluate_verified};
use crate::replay::{Outcome, ReplayCounts, Replayed, replay};

/// The most changed bindings one replay evaluates; the rest are named.
pub const MAX_REPLAYED_BINDINGS: usize = 8;

/// A registered binding and the head's version of it.
#[derive(Debug, Clone, Copy)]
pub struct ReplayTarget<'a> {
    pub registered: &'a TriggerBinding,
    pub head: &'a TriggerSpec,
    /// The head's name of the binding's agent.
    pub agent: &'a str,
    /// Where the head writes the binding (what a warning annotates).
    pub span: Option<Span>,
}

/// How a replay runs.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// The newest requests replayed per binding, at most [`MAX_KEPT_REQUESTS`].
    pub last: usize,
    /// Whether the repository is private: values are shown for its bindings that set
    /// `replay_values = true`.
    pub private: bool,
    /// Now: expired requests are not replayed.
    pub now: i64,
}

/// A replay of changed bindings.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TriggerReplay {
    pub bindings: Vec<BindingReplay>,
    /// Changed bindings that were not replayed, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_replayed: Vec<NotReplayed>,
}

impl TriggerReplay {
    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty() && self.not_replayed.is_empty()
    }
}

/// A changed binding that was not replayed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotReplayed {
    pub trigger_id: String,
    pub trigger: String,
    pub manifest: String,
    pub reason: String,
}

/// One binding's replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BindingReplay {
    pub trigger_id: String,
    /// The trigger's name.
    pub trigger: String,
    pub manifest: String,
    pub agent: String,
    /// Where the head writes the binding.
    #[serde(skip)]
    pub span: Option<Span>,
    /// Kept requests replayed (newest first).
    pub replayed: usize,
    /// Of those, the ones the registered binding dispatches.
    pub dispatched: usize,
    pub counts: ReplayCounts,
    /// Requests not replayed because every evaluation slot was taken.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped: usize,
    /// Whether values are shown.
    pub values: bool,
    /// Each request whose outcome is not `unchanged`, newest first.
    pub requests: Vec<RequestReplay>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl BindingReplay {
    /// How many requests that dispatched the head errors on or filters out.
    pub fn lost_dispatches(&self) -> usize {
        self.requests
            .iter()
            .filter(|r| r.replayed.loses_a_dispatch())
            .count()
    }
}

/// One kept request's replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestReplay {
    /// When it came (Unix seconds).
    pub received_at: i64,
    /// What the binding did with it then.
    pub kept_outcome: KeptOutcome,
    #[serde(flatten)]
    pub replayed: Replayed,
    /// The payloads, only when values are shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payloads: Option<Payloads>,
}

/// The payloads of a request through both bindings (`null`: none).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Payloads {
    pub registered: Value,
    pub head: Value,
}

/// Replays each of `targets` (the first [`MAX_REPLAYED_BINDINGS`]; the rest are named) over
/// its kept requests, read for `repository` only.
pub async fn replay_bindings(
    state: &dyn StateStore,
    repository: &str,
    targets: &[ReplayTarget<'_>],
    options: ReplayOptions,
    limits: &Limits,
) -> TriggerReplay {
    let mut replay = TriggerReplay::default();
    for (index, target) in targets.iter().enumerate() {
        let not_replayed = |reason: String| NotReplayed {
            trigger_id: target.registered.trigger_id.clone(),
            trigger: target.registered.name.clone(),
            manifest: target.registered.manifest_path.clone(),
            reason,
        };
        if index >= MAX_REPLAYED_BINDINGS {
            let reason = format!("a check replays at most {MAX_REPLAYED_BINDINGS} bindings");
            replay.not_replayed.push(not_replayed(reason));
            continue;
        }
        let last = options.last.min(MAX_KEPT_REQUESTS);
        let kept = state
            .kept_requests()
            .list_kept_requests(&target.registered.trigger_id, repository, options.now, last)
            .await;
        let kept = match kept {
            Ok(kept) => kept,
            Err(error) => {
                tracing::warn!(trigger_id = %target.registered.trigger_id, %error, "kept requests unreadable");
                replay.not_replayed.push(not_replayed(
                    "its kept requests could not be read".to_owned(),
                ));
                continue;
            }
        };
        match replay_binding(target, &kept, options, limits).await {
            Ok(binding) => replay.bindings.push(binding),
            Err(reason) => replay.not_replayed.push(not_replayed(reason)),
        }
    }
    replay
}

/// Replays `kept` through `target`'s registered and head bindings; `Err` names why it
/// cannot (a binding that does not compile).
pub async fn replay_binding(
    target: &ReplayTarget<'_>,
    kept: &[KeptRequest],
    options: ReplayOptions,
    limits: &Limits,
) -> Result<BindingReplay, String> {
    let registered = CompiledBinding::from_binding(target.registered)
        .map_err(|error| format!("the registered binding does not compile: {error}"))?;
    let head = CompiledBinding::from_spec(target.head.name.clone(), target.head.clone())
        .map_err(|error| format!("the head's binding does not compile: {error}"))?;
    // The registered binding decides: a pull request cannot reveal values by setting the key.
    let values = options.private && registered.spec.replay_values;
    let mut requests = Vec::new();
    let mut classes = Vec::new();
    let mut skipped = 0;
    let mut dispatched = 0;
    for request in kept {
        let (Some(old), Some(new)) = (
            outcome(&registered, request, values, limits).await,
            outcome(&head, request, values, limits).await,
        ) else {
            skipped += 1;
            continue;
        };
        dispatched += usize::from(matches!(old, Outcome::Dispatched(_)));
        let replayed = replay(&old, &new);
        classes.push(replayed.clone());
        if replayed != Replayed::Unchanged {
            requests.push(RequestReplay {
                received_at: request.received_at,
                kept_outcome: request.outcome,
                replayed,
                payloads: values.then(|| Payloads {
                    registered: payload_of(&old),
                    head: payload_of(&new),
                }),
            });
        }
    }
    Ok(BindingReplay {
        trigger_id: target.registered.trigger_id.clone(),
        trigger: target.registered.name.clone(),
        manifest: target.registered.manifest_path.clone(),
        agent: target.agent.to_owned(),
        span: target.span,
        replayed: classes.len(),
        dispatched,
        counts: ReplayCounts::of(&classes),
        skipped,
        values,
        requests,
    })
}

/// What `binding` does with `request`; `None` when every evaluation slot was taken. An
/// error is described by its stage only unless `values` (see the module docs).
async fn outcome(
    binding: &CompiledBinding,
    request: &KeptRequest,
    values: bool,
    limits: &Limits,
) -> Option<Outcome> {
    if binding.spec.source == astrolift_manifest::triggers::TriggerSource::Github
        && !matches_event(binding, request)
    {
        return Some(Outcome::Filtered);
    }
    match evaluate_verified(binding, request.body.as_bytes(), limits).await {
        Ok(evaluate::Outcome::Filtered) => Some(Outcome::Filtered),
        Ok(evaluate::Outcome::Dispatch { payload }) => {
            Some(Outcome::Dispatched(payload.unwrap_or(Value::Null)))
        }
        Err(TriggerError::Busy) => None,
        Err(error) => Some(Outcome::Error(error_text(&error, values))),
    }
}

/// Whether a kept GitHub event is one of `binding`'s `events`.
fn matches_event(binding: &CompiledBinding, request: &KeptRequest) -> bool {
    let Some(event) = request.headers.get("x-github-event") else {
        return false;
    };
    let action = serde_json::from_str::<Value>(&request.body)
        .ok()
        .and_then(|body| {
            body.get("action")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    binding.matches_event(event, action.as_deref())
}

/// The error as a check run shows it: its stage, and its text only when values are shown.
fn error_text(error: &TriggerError, values: bool) -> String {
    match error {
        TriggerError::MappingFailed { stage, .. } if !values => format!("the {stage} failed"),
        TriggerError::BadJson(_) if !values => "the kept body is not JSON".to_owned(),
        other => other.to_string(),
    }
}

fn payload_of(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Dispatched(payload) => payload.clone(),
        Outcome::Filtered | Outcome::Error(_) => Value::Null,
    }
}

/// `2026-12-07 14:05 UTC`; the Unix seconds for a time outside the calendar.
pub fn utc_minute(at: i64) -> String {
    match jiff::Timestamp::from_second(at) {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M UTC").to_string(),
        Err(_) => at.to_string(),
    }
}
