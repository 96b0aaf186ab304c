//! One evaluation: the jobs it runs, its result, and the run itself on the
//! current thread (a worker thread, or a worker process's evaluation thread).

use std::sync::Arc;

use jaq_json::Val;

use super::bounds::MAX_OUTPUT_DEPTH;
use super::budget::Budget;
use super::error::{SandboxError, bounded_message};
use super::guarded::SandboxedProgram;

/// One program to run, how many outputs it may yield, and whether it gates
/// the next job (a filter: the next job runs only if this one yields exactly
/// `true`).
#[derive(Debug, Clone)]
pub struct Job {
    pub program: Arc<SandboxedProgram>,
    pub max_outputs: usize,
    pub gate: bool,
}

/// The result of one evaluation.
#[derive(Debug)]
pub enum WorkerResult {
    /// The body is not JSON (400).
    BadJson(String),
    /// Each job's outputs (a job after a gate runs only if the gate passed).
    Ran(Vec<Result<Vec<serde_json::Value>, SandboxError>>),
    /// Every evaluation slot is taken (503 with `Retry-After`).
    Busy,
}

/// What one evaluation needs, in either mode.
#[derive(Debug)]
pub(super) struct Request {
    pub body: Vec<u8>,
    pub jobs: Vec<Job>,
    pub time_ms: u64,
    pub output_limit: u64,
}

/// An evaluation's result with each output serialized (the form a worker
/// process sends back; the size check is made on exactly these bytes).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum WireResult {
    BadJson(String),
    Ran(Vec<Result<Vec<String>, SandboxError>>),
}

impl WireResult {
    /// Parses the outputs back. They nest at most [`MAX_OUTPUT_DEPTH`] levels,
    /// within `serde_json`'s parser limit, so this cannot fail for a result
    /// that [`run_jobs`] made; if it did, the job fails rather than the output
    /// being dropped.
    pub(super) fn into_result(self) -> WorkerResult {
        match self {
            WireResult::BadJson(reason) => WorkerResult::BadJson(reason),
            WireResult::Ran(results) => WorkerResult::Ran(
                results
                    .into_iter()
                    .map(|result| {
                        result?
                            .iter()
                            .map(|text| {
                                serde_json::from_str(text).map_err(|error| {
                                    SandboxError::Failed(format!(
                                        "the output does not parse back: {error}"
                                    ))
                                })
                            })
                            .collect()
                    })
                    .collect(),
            ),
        }
    }

    pub(super) fn failed(error: SandboxError) -> Self {
        WireResult::Ran(vec![Err(error)])
    }
}

/// Parses the body and runs the jobs in the current thread (a worker thread,
/// or a worker process's evaluation thread). Every output is serialized
/// under the output budget.
pub(super) fn run_jobs(
    body: &[u8],
    jobs: &[(Arc<SandboxedProgram>, usize, bool)],
    time_ms: u64,
    output_limit: u64,
) -> WireResult {
    Budget::enter(time_ms);
    let input: Val = match serde_json::from_slice(body) {
        Ok(input) => input,
        Err(error) => return WireResult::BadJson(bounded_message(&error.to_string())),
    };
    let mut results = Vec::with_capacity(jobs.len());
    for (program, max_outputs, gate) in jobs {
        let result = program
            .outputs(input.clone(), *max_outputs)
            .and_then(|outputs| serialize_all(&outputs, output_limit));
        let passed = matches!(&result, Ok(outputs) if outputs.len() == 1 && outputs[0] == "true");
        results.push(result);
        if *gate && !passed {
            break;
        }
    }
    WireResult::Ran(results)
}

/// Serializes each output (compact JSON, as stored and queued), charging its
/// exact size, escapes included, to one budget of `limit` bytes.
fn serialize_all(outputs: &[Val], limit: u64) -> Result<Vec<String>, SandboxError> {
    let mut budget = limit;
    outputs
        .iter()
        .map(|output| {
            let value = to_json(output, 1, &mut budget.clone(), limit)?;
            let text = serde_json::to_string(&value)
                .map_err(|error| SandboxError::Failed(error.to_string()))?;
            budget = budget
                .checked_sub(text.len() as u64)
                .ok_or(SandboxError::OutputTooLarge(limit))?;
            Ok(text)
        })
        .collect()
}

/// Converts a jq value to JSON, refusing nesting deeper than
/// [`MAX_OUTPUT_DEPTH`] (`depth` is the level of `value`: 1 for a top-level
/// array or object) and stopping early once a lower bound of its serialized
/// size (string bytes, one byte per other value) is over `budget`, so a huge
/// value is never copied. The exact size is charged on the serialized text.
fn to_json(
    value: &Val,
    depth: usize,
    budget: &mut u64,
    limit: u64,
) -> Result<serde_json::Value, SandboxError> {
    let charge = |budget: &mut u64, bytes: usize| {
        *budget = budget
            .checked_sub(bytes as u64)
            .ok_or(SandboxError::OutputTooLarge(limit))?;
        Ok::<(), SandboxError>(())
    };
    let container = matches!(value, Val::Arr(_) | Val::Obj(_));
    if container && depth > MAX_OUTPUT_DEPTH {
        return Err(SandboxError::OutputTooDeep);
    }
    Ok(match value {
        Val::Null => {
            charge(budget, 1)?;
            serde_json::Value::Null
        }
        Val::Bool(b) => {
            charge(budget, 1)?;
            serde_json::Value::Bool(*b)
        }
        Val::Num(_) => {
            let text = value.to_string();
            charge(budget, 1)?;
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
        }
        Val::TStr(bytes) | Val::BStr(bytes) => {
            charge(budget, bytes.len())?;
            serde_json::Value::String(String::from_utf8_lossy(bytes).into_owned())
        }
        Val::Arr(items) => {
            charge(budget, 1)?;
            let items = items
                .iter()
                .map(|item| to_json(item, depth + 1, budget, limit))
                .collect::<Result<_, _>>()?;
            serde_json::Value::Array(items)
        }
        Val::Obj(entries) => {
            charge(budget, 1)?;
            let mut map = serde_json::Map::with_capacity(entries.len());
            for (key, value) in entries.iter() {
                let key = match key {
                    Val::TStr(bytes) | Val::BStr(bytes) => {
                        String::from_utf8_lossy(bytes).into_owned()
                    }
                    other => other.to_string(),
                };
                charge(budget, key.len())?;
                map.insert(key, to_json(value, depth + 1, budget, limit)?);
            }
            serde_json::Value::Object(map)
        }
    })
}
