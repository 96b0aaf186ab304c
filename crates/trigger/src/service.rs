//! [`TriggerService`]: stored bindings in, HTTP-shaped answers out. The one
//! piece `serve`, the trigger Lambda and the webhook function's GitHub
//! fan-out share; it does no HTTP itself.
//!
//! # `handle` (`POST /triggers/{trigger_id}`, docs/reference.md §10)
//! | Status | When | Body |
//! |---|---|---|
//! | 202 | dispatched | `{"dispatch_id","trigger_id","agent","snapshot","status":"queued","duplicate":false}` |
//! | 200 | a duplicate (same idempotency key; for a timestamped signature, the same timestamp and signature) | the same, with the first dispatch's id and `"duplicate":true` |
//! | 204 | filtered out | `{}` |
//! | 401 | bad, missing or malformed signature or token; a missing, malformed or stale timestamp | `{"error","trigger_id"}` |
//! | 404 | no such binding; a `github` binding (those are fed by the App's webhook, never by this route); a binding whose agent is not `active` | `{"error","trigger_id"}` |
//! | 409 | the binding's `env_spec` is not an env spec of its agent's project (any more) | `{"error","trigger_id"}` |
//! | 413 | body over `Limits::trigger_body`, checked before the signature (signed or not) | `{"error","trigger_id"}` |
//! | 400 | body not JSON; `Idempotency-Key` or `X-GitHub-Delivery` over `Limits::idempotency_key` bytes or not visible ASCII | `{"error","trigger_id"}` |
//! | 422 | the filter or mapping failed | `{"error","trigger_id","stage"}` (the jq error in `error`) |
//! | 500 | the secret does not exist or may not be read, the binding does not compile, the agent's package or prompts cannot be read (nothing recorded), or the dispatch was recorded but not queued | `{"error","trigger_id"}` |
//! | 503 | every jq evaluation slot is taken, the local dispatch outbox is full, or the state store, blob store or Secrets Manager is unreachable; [`Answer::retry_after`] gives the `Retry-After` | `{"error","trigger_id"}` |
//!
//! Error bodies never carry a secret value, and never name a `secret://`
//! reference, an environment variable or an expected header: they carry
//! [`TriggerError::public_message`] and fixed texts for store and queue
//! failures. The log line of each refusal has the full error.
//!
//! # Secrets and trust
//! A binding's secrets are resolved for the project of its agent's
//! registration (`Agent::project_id`). GitHub-sourced bindings apply the
//! trust policy of [`crate::trust`]: an untrusted event does not dispatch
//! (a `403` fan-out result) unless the binding sets `allow_untrusted`.
//!
//! # Dispatch and the queue
//! The dispatch's content is read first (the snapshot, the prompt texts in
//! the package, a presigned package URL: [`ContentSource`]); when it cannot
//! be read (the package cannot be delivered) the answer is 500 (503 when the
//! blob store may come back) and nothing is recorded. The record, holding the
//! message v1 ([`astrolift_dispatch::message`]), is written next (conditional on the
//! idempotency key), then the same [`DispatchMessage`] is published. The record (conditional on the idempotency key), then the
//! [`DispatchMessage`] is published. A duplicate creates nothing: no record and
//! no message. If publishing fails after the record was written, the answer
//! is 500 with the `dispatch_id`, and the `pending` record stays in state for
//! the control plane to reconcile (a retry of the request is a duplicate).
//!
//! # Compiled bindings
//! Each binding's programs are compiled once per `(trigger_id, snapshot)` and
//! kept; a binding whose definition changed under the same snapshot is
//! recompiled too. [`TriggerService::compilations`] counts compilations.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use astrolift_dispatch::Answer;
use astrolift_dispatch::content::{ContentError, ContentSource, RecordOnlyContent, env_spec_parts};
use astrolift_dispatch::dispatch::Origin;
use astrolift_dispatch::dispatch::{
    DispatchError, DispatchQueue, DispatchRequest, delivery_key, record_and_queue,
};
use astrolift_dispatch::execution::{StageMessage, dispatch_stage_message};
use astrolift_dispatch::layers::attach_layers;
use astrolift_dispatch::message::Source;
use astrolift_dispatch::report::{ReportSubject, ResultReporter, report_target};
use astrolift_dispatch::step_functions::StepFunctions;
use astrolift_forge::webhook::Envelope;
use astrolift_manifest::Limits;
use astrolift_manifest::triggers::Verify;
use astrolift_store::state::{
    Agent, AgentKey, AgentStatus, EnvSpec, TriggerBinding, env_spec_for_project,
};
use astrolift_store::{StateStore, StoreError};
use http::HeaderMap;
use serde_json::{Value, json};

use crate::error::TriggerError;
use crate::evaluate::{CompiledBinding, Outcome, evaluate_verified, within_limit};
use crate::idempotency::idempotency_key;
use crate::keep::{Answered, keep};
use crate::secrets::SecretResolver;
use crate::trust::{Trust, judge};
use crate::verify::{now_seconds, verify_request};

/// One GitHub-sourced binding's answer to an event.
#[derive(Debug, Clone, PartialEq)]
pub struct FanOutResult {
    /// The binding; empty when the bindings could not be listed at all.
    pub trigger_id: String,
    pub response: Answer,
}

/// A compiled binding and what it was compiled from.
#[derive(Debug)]
struct CacheEntry {
    snapshot_hash: String,
    definition: Value,
    compiled: Arc<CompiledBinding>,
}

/// Evaluates and dispatches stored trigger bindings (see the module docs).
#[derive(Debug)]
pub struct TriggerService {
    state: Arc<dyn StateStore>,
    secrets: Arc<dyn SecretResolver>,
    queue: Arc<dyn DispatchQueue>,
    content: Arc<dyn ContentSource>,
    callback_base: Option<String>,
    reporter: Option<Arc<dyn ResultReporter>>,
    /// The Step Functions engine of workflow runs, when configured (docs/reference.md §5.6).
    engine: Option<StepFunctions>,
    limits: Limits,
    compiled: Mutex<HashMap<String, CacheEntry>>,
    compilations: AtomicU64,
}

/// A binding that may dispatch: the binding, its agent and its programs.
struct Ready {
    binding: TriggerBinding,
    agent: Agent,
    compiled: Arc<CompiledBinding>,
}

impl TriggerService {
    pub fn new(
        state: Arc<dyn StateStore>,
        secrets: Arc<dyn SecretResolver>,
        queue: Arc<dyn DispatchQueue>,
        limits: Limits,
    ) -> Self {
        Self {
            state,
            secrets,
            queue,
            content: Arc::new(RecordOnlyContent { lenient: true }),
            callback_base: None,
            reporter: None,
            engine: None,
            limits,
            compiled: Mutex::new(HashMap::new()),
            compilations: AtomicU64::new(0),
        }
    }

    /// Reads each dispatch's content (snapshot, prompts, package URL) from
    /// `content`; every binary passes a [`astrolift_dispatch::content::BlobContent`]. The
    /// default, for library tests of evaluation, describes the package from
    /// the agent record alone (see [`RecordOnlyContent`]).
    pub fn with_content(mut self, content: Arc<dyn ContentSource>) -> Self {
        self.content = content;
        self
    }

    /// Sends dispatch messages to `queue` instead.
    pub fn with_queue(mut self, queue: Arc<dyn DispatchQueue>) -> Self {
        self.queue = queue;
        self
    }

    /// `ASTROLIFT_CALLBACK_BASE_URL`: each dispatch's callback URL is
    /// `<base>/callbacks/<task_id>`; `None`, no callback route.
    pub fn with_callback_base(mut self, base: Option<String>) -> Self {
        self.callback_base = base.filter(|b| !b.trim().is_empty());
        self
    }

    /// Reports the terminal results of dispatches whose trigger sets `report` to GitHub
    /// through `reporter` ([`astrolift_dispatch::report`]); without one they are logged as not reported.
    pub fn with_reporter(mut self, reporter: Option<Arc<dyn ResultReporter>>) -> Self {
        self.reporter = reporter;
        self
    }

    /// Runs workflow stages on Step Functions: a stage's callback answers its task token
    /// ([`astrolift_dispatch::execution`]) instead of advancing its run.
    pub fn with_engine(mut self, engine: Option<StepFunctions>) -> Self {
        self.engine = engine;
        self
    }

    /// One `POST /callbacks/{task_id}` ([`astrolift_dispatch::callback`]): the report recorded on the
    /// service's state, a workflow stage's run advanced with the service's queue, content
    /// and callback route.
    pub async fn callback(&self, task_id: &str, headers: &HeaderMap, body: &[u8]) -> Answer {
        let dispatcher = astrolift_dispatch::workflow::RecordingDispatcher {
            state: self.state.as_ref(),
            queue: Some(self.queue.as_ref()),
            content: self.content.as_ref(),
            callback_base: self.callback_base.as_deref(),
        };
        let context = astrolift_dispatch::callback::CallbackContext {
            state: self.state.as_ref(),
            dispatcher: &dispatcher,
            limits: &self.limits,
            now: now_seconds(),
            reporter: self.reporter.as_deref(),
            engine: self.engine.as_ref(),
        };
        astrolift_dispatch::callback::handle_callback(context, task_id, headers, body).await
    }

    /// One message of the stage queue (docs/reference.md §5.6): the stage attempt a Step
    /// Functions execution waits on, dispatched with the service's queue, content and
    /// callback route ([`astrolift_dispatch::execution::dispatch_stage_message`]). `Err`
    /// when a retry of the message may succeed (a store, the queue or Step Functions
    /// unavailable); a body that is not a stage message, or a service without the engine,
    /// is logged and dropped.
    pub async fn stage_message(&self, body: &str) -> Result<(), String> {
        let Some(engine) = &self.engine else {
            tracing::warn!(
                "a stage message, but ASTROLIFT_WORKFLOW_ENGINE is not stepfunctions: dropped"
            );
            return Ok(());
        };
        let message: StageMessage = match serde_json::from_str(body) {
            Ok(message) => message,
            Err(error) => {
                tracing::warn!(%error, "not a stage message: dropped");
                return Ok(());
            }
        };
        let dispatcher = astrolift_dispatch::workflow::RecordingDispatcher {
            state: self.state.as_ref(),
            queue: Some(self.queue.as_ref()),
            content: self.content.as_ref(),
            callback_base: self.callback_base.as_deref(),
        };
        let state = self.state.as_ref();
        match dispatch_stage_message(
            state,
            &dispatcher,
            engine,
            &message,
            now_seconds(),
            &self.limits,
        )
        .await
        {
            Ok(outcome) => {
                tracing::info!(run_id = %message.run_id, stage = %message.stage, ?outcome, "stage message");
                Ok(())
            }
            Err(error) => {
                tracing::warn!(run_id = %message.run_id, stage = %message.stage, %error, "a stage message was not dispatched");
                Err(error.to_string())
            }
        }
    }

    /// How many times a binding's programs were compiled since `new`.
    pub fn compilations(&self) -> u64 {
        self.compilations.load(Ordering::Relaxed)
    }

    /// How many compiled bindings are cached.
    pub fn cached_bindings(&self) -> usize {
        self.compiled.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// `POST /triggers/{trigger_id}`: see the module docs for every status.
    pub async fn handle(&self, trigger_id: &str, headers: &HeaderMap, body: &[u8]) -> Answer {
        let ready = match self.load(trigger_id).await {
            Ok(Some(ready)) => ready,
            Ok(None) => {
                let unknown = TriggerError::UnknownTrigger(trigger_id.to_owned());
                return trigger_error_response(trigger_id, &unknown);
            }
            Err(response) => return response,
        };
        // Over the limit is 413 before the signature, signed or not (as `serve` answers).
        if let Err(error) = within_limit(body, &self.limits) {
            return trigger_error_response(trigger_id, &error);
        }
        let verify = ready.compiled.spec.verify.clone().unwrap_or(Verify::Github);
        let verified = match verify_request(
            &verify,
            headers,
            body,
            self.secrets.as_ref(),
            &ready.agent.project_id,
        )
        .await
        {
            Ok(verified) => verified,
            Err(error) => return trigger_error_response(trigger_id, &error),
        };
        let key = match idempotency_key(
            headers,
            trigger_id,
            body,
            verified.replay_key.as_deref(),
            self.limits.idempotency_key,
        ) {
            Ok(key) => key,
            Err(error) => return trigger_error_response(trigger_id, &error),
        };
        let outcome = evaluate_verified(&ready.compiled, body, &self.limits).await;
        let answer = self.finish(&ready, outcome, &key, &Origin::TRUSTED).await;
        // A generic request's programs read only its body: no header is kept.
        self.keep(&ready, &answer, BTreeMap::new(), body, &key)
            .await;
        answer
    }

    /// The GitHub-sourced bindings of `repository` whose `events` match,
    /// evaluated without verification (the App verified the delivery) and
    /// dispatched under the delivery id. One entry per matching binding of an
    /// active agent; one entry with an empty `trigger_id` when the bindings
    /// could not be listed.
    pub async fn fan_out_github(&self, delivery: &GithubDelivery<'_>) -> Vec<FanOutResult> {
        // A keyed read of this repository's bindings of this event: no binding of another
        // repository or another event is read.
        let bindings = match self
            .state
            .list_event_trigger_bindings(delivery.repository, delivery.event_name)
            .await
        {
            Ok(bindings) => bindings,
            Err(error) => {
                return vec![FanOutResult {
                    trigger_id: String::new(),
                    response: store_error_response("", &error),
                }];
            }
        };
        let mut results = Vec::new();
        // Judged once per delivery, and only when a binding matches.
        let mut trust = None;
        for binding in bindings.into_iter().filter(|b| b.source == "github") {
            let trigger_id = binding.trigger_id.clone();
            if let Some(response) = self.fan_out_one(binding, delivery, &mut trust).await {
                results.push(FanOutResult {
                    trigger_id,
                    response,
                });
            }
        }
        results
    }

    /// One binding of a fan-out; `None` when it does not match the event or
    /// its agent is not active. An untrusted event is a 403 unless the
    /// binding allows untrusted events.
    async fn fan_out_one(
        &self,
        binding: TriggerBinding,
        event: &GithubDelivery<'_>,
        trust: &mut Option<Trust>,
    ) -> Option<Answer> {
        let trigger_id = binding.trigger_id.clone();
        // The event is matched on the (cached) compiled binding first: the agent is loaded
        // only for bindings that match.
        let compiled = match self.compiled(&binding) {
            Ok(compiled) => compiled,
            Err(error) => return Some(trigger_error_response(&trigger_id, &error)),
        };
        if !compiled.matches_event(event.event_name, event.action) {
            return None;
        }
        let ready = match self.ready(binding).await {
            Ok(Some(ready)) => ready,
            Ok(None) => return None,
            Err(response) => return Some(response),
        };
        let trust = trust.get_or_insert_with(|| judge(event.envelope));
        if !trust.trusted && !ready.compiled.spec.allow_untrusted {
            tracing::info!(
                trigger_id,
                sender = trust.sender.as_deref().unwrap_or(""),
                reason = %trust.reason,
                "untrusted GitHub event: not dispatched"
            );
            return Some(Answer {
                status: 403,
                body: json!({
                    "error": format!("untrusted event ({}); the binding does not set allow_untrusted", trust.reason),
                    "trigger_id": trigger_id,
                }),
            });
        }
        let report = ready.compiled.spec.report.and_then(|kind| {
            report_target(kind, &ready.binding.repository, event.report_subject())
        });
        let origin = Origin {
            sender: trust.sender.clone(),
            trusted: trust.trusted,
            report,
        };
        let outcome = evaluate_verified(&ready.compiled, event.body, &self.limits).await;
        let key = delivery_key(&trigger_id, event.delivery_id);
        let answer = self.finish(&ready, outcome, &key, &origin).await;
        let headers = BTreeMap::from([("x-github-event".to_owned(), event.event_name.to_owned())]);
        self.keep(&ready, &answer, headers, event.body, &key).await;
        Some(answer)
    }

    /// Keeps an answered request for replay ([`crate::keep`]).
    async fn keep(
        &self,
        ready: &Ready,
        answer: &Answer,
        headers: BTreeMap<String, String>,
        body: &[u8],
        key: &str,
    ) {
        let answered = Answered {
            binding: &ready.binding,
            compiled: &ready.compiled,
            answer,
            headers,
            body,
            key,
            at: std::time::SystemTime::now(),
        };
        keep(self.state.as_ref(), answered).await;
    }

    /// The generic binding `trigger_id`, if it exists and its agent is
    /// active, with its programs. GitHub-sourced bindings are not found here.
    async fn load(&self, trigger_id: &str) -> Result<Option<Ready>, Answer> {
        match self.state.get_trigger_binding(trigger_id).await {
            Ok(Some(binding)) if binding.source != "github" => self.ready(binding).await,
            Ok(_) => Ok(None),
            Err(error) => Err(store_error_response(trigger_id, &error)),
        }
    }

    /// `binding` with its agent (when active) and its compiled programs.
    async fn ready(&self, binding: TriggerBinding) -> Result<Option<Ready>, Answer> {
        let key = AgentKey::new(&binding.repository, &binding.manifest_path);
        let agent = match self.state.get_agent(&key).await {
            Ok(Some(agent)) if agent.status == AgentStatus::Active => agent,
            Ok(_) => return Ok(None),
            Err(error) => return Err(store_error_response(&binding.trigger_id, &error)),
        };
        let compiled = self
            .compiled(&binding)
            .map_err(|error| trigger_error_response(&binding.trigger_id, &error))?;
        Ok(Some(Ready {
            binding,
            agent,
            compiled,
        }))
    }

    /// The cached programs of `binding`, compiled on first use.
    fn compiled(&self, binding: &TriggerBinding) -> Result<Arc<CompiledBinding>, TriggerError> {
        if let Ok(cache) = self.compiled.lock()
            && let Some(entry) = cache.get(&binding.trigger_id)
            && entry.snapshot_hash == binding.snapshot_hash
            && entry.definition == binding.definition
        {
            return Ok(entry.compiled.clone());
        }
        let compiled = Arc::new(CompiledBinding::from_binding(binding)?);
        self.compilations.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut cache) = self.compiled.lock() {
            cache.insert(
                binding.trigger_id.clone(),
                CacheEntry {
                    snapshot_hash: binding.snapshot_hash.clone(),
                    definition: binding.definition.clone(),
                    compiled: compiled.clone(),
                },
            );
        }
        Ok(compiled)
    }

    /// Turns an evaluation into its answer, recording and queueing a dispatch.
    async fn finish(
        &self,
        ready: &Ready,
        outcome: Result<Outcome, TriggerError>,
        key: &str,
        origin: &Origin,
    ) -> Answer {
        let trigger_id = ready.binding.trigger_id.as_str();
        let payload = match outcome {
            Err(error) => return trigger_error_response(trigger_id, &error),
            Ok(Outcome::Filtered) => {
                tracing::info!(trigger_id, "filtered out");
                return Answer {
                    status: 204,
                    body: json!({}),
                };
            }
            Ok(Outcome::Dispatch { payload }) => payload,
        };
        let env_spec = match self.env_spec(ready).await {
            Ok(env_spec) => env_spec,
            Err(refused) => return refused,
        };
        let now = now_seconds();
        let mut content = match self.content.content(&ready.agent, now).await {
            Ok(content) => content,
            Err(error) => {
                return dispatch_error_response(trigger_id, &DispatchError::Content(error));
            }
        };
        let layers = attach_layers(
            self.state.as_ref(),
            self.content.as_ref(),
            &ready.agent,
            &mut content,
            false,
            now,
        );
        if let Err(error) = layers.await {
            return dispatch_error_response(trigger_id, &DispatchError::Content(error));
        }
        let parts = env_spec_parts(
            self.content.as_ref(),
            self.state.as_ref(),
            env_spec.as_ref(),
            now,
        );
        let (env_spec, config) = match parts.await {
            Ok(parts) => parts,
            Err(error) => {
                return dispatch_error_response(trigger_id, &DispatchError::Content(error));
            }
        };
        let request = DispatchRequest {
            source: Source::Trigger {
                trigger_id: trigger_id.to_owned(),
            },
            repository: &ready.binding.repository,
            manifest_path: &ready.binding.manifest_path,
            snapshot_hash: &ready.agent.snapshot_hash,
            idempotency_key: Some(key.to_owned()),
            payload: payload.as_ref(),
            origin,
            env_spec,
            config: config.as_ref(),
            content: &content,
            callback_base: self.callback_base.as_deref(),
            now,
        };
        let recorded =
            match record_and_queue(self.state.as_ref(), self.queue.as_ref(), &request).await {
                Ok(recorded) => recorded,
                Err(error) => return dispatch_error_response(trigger_id, &error),
            };
        tracing::info!(
            trigger_id,
            dispatch_id = %recorded.id,
            duplicate = !recorded.created,
            "dispatched"
        );
        Answer {
            status: if recorded.created { 202 } else { 200 },
            body: json!({
                "dispatch_id": recorded.id,
                "trigger_id": trigger_id,
                "agent": ready.agent.name,
                "snapshot": ready.agent.snapshot_hash,
                "status": "queued",
                "duplicate": !recorded.created,
            }),
        }
    }
}

impl TriggerService {
    /// The binding's env spec, if it names one; 409 when its agent's project
    /// cannot use it (deleted or moved since the sync that registered the
    /// binding). The body names no env spec; the log line says which and why.
    async fn env_spec(&self, ready: &Ready) -> Result<Option<EnvSpec>, Answer> {
        let Some(name) = ready
            .binding
            .definition
            .get("env_spec")
            .and_then(Value::as_str)
        else {
            return Ok(None);
        };
        let trigger_id = ready.binding.trigger_id.as_str();
        let project_id = ready.agent.project_id.as_str();
        match env_spec_for_project(self.state.as_ref(), name, project_id).await {
            Ok(Ok(spec)) => Ok(Some(spec)),
            Ok(Err(refusal)) => {
                tracing::warn!(trigger_id, env_spec = name, project_id, reason = %refusal, "env spec refused");
                Err(error_response(
                    409,
                    trigger_id,
                    ENV_SPEC_REFUSED,
                    ENV_SPEC_REFUSED,
                ))
            }
            Err(error) => Err(store_error_response(trigger_id, &error)),
        }
    }
}

/// The 409 body's error when a binding's env spec is not its project's.
pub const ENV_SPEC_REFUSED: &str = "the trigger's env spec is not available to its agent's project";

/// A verified GitHub delivery being fanned out to the GitHub-sourced bindings
/// of `repository` that list `event_name` (and `action`).
#[derive(Debug, Clone, Copy)]
pub struct GithubDelivery<'a> {
    pub repository: &'a str,
    pub event_name: &'a str,
    pub action: Option<&'a str>,
    pub delivery_id: &'a str,
    /// Read once when the delivery was accepted: the trust policy and the
    /// report's target come from it.
    pub envelope: &'a Envelope,
    /// The verified body, the input of each binding's programs.
    pub body: &'a [u8],
}

impl GithubDelivery<'_> {
    fn report_subject(&self) -> ReportSubject<'_> {
        let subject = self.envelope.subject.as_ref();
        ReportSubject {
            installation_id: self.envelope.installation_id,
            number: subject.map(|s| s.number),
            head_sha: subject.and_then(|s| s.head_sha.as_deref()),
        }
    }
}

/// An error answer: `public` in the body, `logged` (the full error, which
/// may name headers, references and variables) in the log line only.
fn error_response(status: u16, trigger_id: &str, public: &str, logged: &str) -> Answer {
    if status >= 500 {
        tracing::error!(trigger_id, status, error = logged, "trigger failed");
    } else {
        tracing::info!(trigger_id, status, error = logged, "trigger refused");
    }
    Answer {
        status,
        body: json!({"error": public, "trigger_id": trigger_id}),
    }
}

/// 503 for a store that may come back, 500 otherwise.
fn store_error_response(trigger_id: &str, error: &StoreError) -> Answer {
    let (status, public) = if error.is_retryable() {
        (503, "the state store is unavailable; retry later")
    } else {
        (500, "the state store failed")
    };
    error_response(status, trigger_id, public, &format!("state store: {error}"))
}

/// The error's own status ([`TriggerError::status`]) and public message.
fn trigger_error_response(trigger_id: &str, error: &TriggerError) -> Answer {
    let mut response = error_response(
        error.status(),
        trigger_id,
        &error.public_message(),
        &error.to_string(),
    );
    if let (TriggerError::MappingFailed { stage, .. }, Value::Object(body)) =
        (error, &mut response.body)
    {
        body.insert("stage".to_owned(), Value::String(stage.to_string()));
    }
    response
}

fn dispatch_error_response(trigger_id: &str, error: &DispatchError) -> Answer {
    let mut response = match error {
        DispatchError::Store(store) => store_error_response(trigger_id, store),
        DispatchError::Full { .. } => error_response(
            503,
            trigger_id,
            "too many dispatches are waiting to be delivered; retry later",
            &error.to_string(),
        ),
        DispatchError::Content(
            ContentError::LayersPending { .. } | ContentError::LayersFailed { .. },
        ) => error_response(
            409,
            trigger_id,
            "the agent's dependency layers are not built yet; retry once the packager has returned them",
            &error.to_string(),
        ),
        DispatchError::Content(content) if content.is_transient() => error_response(
            503,
            trigger_id,
            "the blob store is unavailable; retry later",
            &error.to_string(),
        ),
        DispatchError::Content(_) => error_response(
            500,
            trigger_id,
            "the dispatch's package, prompts or config could not be read",
            &error.to_string(),
        ),
        DispatchError::NotQueued { .. } => error_response(
            500,
            trigger_id,
            "the dispatch was recorded but could not be queued",
            &error.to_string(),
        ),
        other => error_response(
            500,
            trigger_id,
            "the dispatch could not be recorded",
            &other.to_string(),
        ),
    };
    if let (DispatchError::NotQueued { dispatch_id, .. }, Value::Object(body)) =
        (error, &mut response.body)
    {
        body.insert("dispatch_id".to_owned(), Value::String(dispatch_id.clone()));
    }
    response
}
