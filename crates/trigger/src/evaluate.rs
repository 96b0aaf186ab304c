//! `evaluate`: verify, size-check, parse, filter, map.

use std::sync::Arc;

use astrolift_manifest::limits::Limits;
use astrolift_manifest::triggers::{TriggerSource, TriggerSpec, Verify};
use astrolift_store::state::TriggerBinding;
use http::HeaderMap;
use serde_json::Value;

use crate::error::{Stage, TriggerError};
use crate::secrets::SecretResolver;
use crate::verify::verify_request;
use astrolift_jq::sandbox::{Job, SandboxError, SandboxedProgram, WorkerResult, run_in_worker};

/// What a request that passed verification turns into.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Dispatch the agent; `None` is the empty payload (the mapping gave
    /// `null`, `{}` or nothing, or the binding has no mapping).
    Dispatch { payload: Option<Value> },
    /// The filter said `false` or gave no output: 204.
    Filtered,
}

/// A binding with its programs compiled once; share it (`Arc`) between requests.
#[derive(Debug, Clone)]
pub struct CompiledBinding {
    /// `trigger_id`, or the trigger name when built from a bare spec.
    pub id: String,
    pub spec: TriggerSpec,
    filter: Option<Arc<SandboxedProgram>>,
    payload: Option<Arc<SandboxedProgram>>,
}

impl CompiledBinding {
    /// Compiles a validated `[[triggers]]` entry under the id `id`.
    pub fn from_spec(id: impl Into<String>, spec: TriggerSpec) -> Result<Self, TriggerError> {
        let compile = |stage: Stage, text: &Option<String>| {
            text.as_deref()
                .map(|text| {
                    SandboxedProgram::compile(text)
                        .map(Arc::new)
                        .map_err(|error| {
                            TriggerError::InvalidBinding(format!("{stage}: {}", error.message))
                        })
                })
                .transpose()
        };
        let filter = compile(Stage::Filter, &spec.filter)?;
        let payload = compile(Stage::Payload, &spec.payload)?;
        if spec.source == TriggerSource::Generic && spec.verify.is_none() {
            return Err(TriggerError::InvalidBinding(
                "a generic trigger without `verify`".to_owned(),
            ));
        }
        Ok(Self {
            id: id.into(),
            spec,
            filter,
            payload,
        })
    }

    /// Compiles a stored binding (its `definition` is the serialized [`TriggerSpec`]).
    pub fn from_binding(binding: &TriggerBinding) -> Result<Self, TriggerError> {
        let spec: TriggerSpec = serde_json::from_value(binding.definition.clone())
            .map_err(|error| TriggerError::InvalidBinding(error.to_string()))?;
        Self::from_spec(binding.trigger_id.clone(), spec)
    }

    /// Whether a GitHub event (`issues`) with its action (`opened`) is one of
    /// this binding's `events` (`issues` or `issues.opened`).
    pub fn matches_event(&self, event: &str, action: Option<&str>) -> bool {
        self.spec.source == TriggerSource::Github
            && self
                .spec
                .events
                .iter()
                .any(|wanted| match wanted.split_once('.') {
                    Some((name, wanted_action)) => name == event && action == Some(wanted_action),
                    None => wanted == event,
                })
    }
}

/// Evaluates one request against `binding`:
/// 1. the size limit `limits.trigger_body` (413), signed or not: a body that would be
///    refused anyway is not worth a MAC, and `serve`, which stops reading at the limit,
///    answers the same;
/// 2. verification (401), before the body is parsed;
/// 3. JSON parsing (400);
/// 4. the filter: exactly one boolean; `false` or no output is [`Outcome::Filtered`] (422 otherwise);
/// 5. the mapping: an object, or `null`/`{}`/nothing for the empty payload (422 otherwise).
///
/// Steps 3–5 run in the jq sandbox ([`astrolift_jq::sandbox`]); when every
/// evaluation slot of the process is taken the answer is
/// [`TriggerError::Busy`] (503). Secrets are those of `project`, the project
/// of the binding's registration.
pub async fn evaluate(
    binding: &CompiledBinding,
    project: &str,
    headers: &HeaderMap,
    body: &[u8],
    secrets: &dyn SecretResolver,
    limits: &Limits,
) -> Result<Outcome, TriggerError> {
    within_limit(body, limits)?;
    let verify = binding.spec.verify.clone().unwrap_or(Verify::Github);
    verify_request(&verify, headers, body, secrets, project).await?;
    evaluate_verified(binding, body, limits).await
}

/// 413 for a body over `limits.trigger_body` (exactly the limit is accepted).
pub(crate) fn within_limit(body: &[u8], limits: &Limits) -> Result<(), TriggerError> {
    let size = body.len() as u64;
    if size > limits.trigger_body {
        return Err(TriggerError::TooLarge {
            size,
            limit: limits.trigger_body,
        });
    }
    Ok(())
}

/// [`evaluate`] without verification, for requests already verified by the
/// caller (GitHub events that came through the App's webhook).
pub async fn evaluate_verified(
    binding: &CompiledBinding,
    body: &[u8],
    limits: &Limits,
) -> Result<Outcome, TriggerError> {
    within_limit(body, limits)?;
    let mut jobs = Vec::new();
    if let Some(filter) = &binding.filter {
        jobs.push(Job {
            program: filter.clone(),
            max_outputs: 1,
            gate: true,
        });
    }
    if let Some(payload) = &binding.payload {
        jobs.push(Job {
            program: payload.clone(),
            max_outputs: 1,
            gate: false,
        });
    }
    let has_filter = binding.filter.is_some();
    let results = match run_in_worker(body.to_vec(), jobs, &limits.jq()).await {
        WorkerResult::BadJson(reason) => return Err(TriggerError::BadJson(reason)),
        WorkerResult::Busy => return Err(TriggerError::Busy),
        WorkerResult::Ran(results) => results,
    };
    let mut results = results.into_iter();
    if has_filter {
        let outputs = results
            .next()
            .unwrap_or_else(|| Err(SandboxError::Failed("the filter did not run".to_owned())))
            .map_err(|e| TriggerError::sandbox(Stage::Filter, e))?;
        if !filter_verdict(&outputs)? {
            return Ok(Outcome::Filtered);
        }
    }
    let payload = match (binding.payload.is_some(), results.next()) {
        (false, _) => None,
        (true, Some(outputs)) => {
            payload_of(outputs.map_err(|e| TriggerError::sandbox(Stage::Payload, e))?)?
        }
        (true, None) => {
            return Err(TriggerError::sandbox(
                Stage::Payload,
                SandboxError::Failed("the mapping did not run".to_owned()),
            ));
        }
    };
    Ok(Outcome::Dispatch { payload })
}

/// `true` dispatches; `false` or no output filters out; anything else is a 422.
fn filter_verdict(outputs: &[Value]) -> Result<bool, TriggerError> {
    match outputs {
        [] | [Value::Bool(false)] => Ok(false),
        [Value::Bool(true)] => Ok(true),
        [other] => Err(TriggerError::MappingFailed {
            stage: Stage::Filter,
            reason: format!("the filter must yield a boolean, not {}", type_name(other)),
        }),
        _ => Err(TriggerError::MappingFailed {
            stage: Stage::Filter,
            reason: "the filter must yield exactly one boolean".to_owned(),
        }),
    }
}

/// An object is the payload; `null`, `{}` or nothing is the empty payload.
fn payload_of(outputs: Vec<Value>) -> Result<Option<Value>, TriggerError> {
    let mut outputs = outputs.into_iter();
    match outputs.next() {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) if map.is_empty() => Ok(None),
        Some(object @ Value::Object(_)) => Ok(Some(object)),
        Some(other) => Err(TriggerError::MappingFailed {
            stage: Stage::Payload,
            reason: format!(
                "the mapping must yield an object or null, not {}",
                type_name(&other)
            ),
        }),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
