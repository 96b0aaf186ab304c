//! A binding's sample requests evaluated and compared with what they pin
//! (docs/reference.md §5.5, "Samples"): what `validate`, `check` and the check run
//! report about each `samples` folder.
//!
//! - Each binding with `samples` is compiled once and each of its samples (listed and
//!   read by `astrolift_manifest::samples`, in name order) is evaluated with
//!   [`evaluate_verified`]: the jq sandbox, no verification (the samples are the
//!   repository's own). A `github` binding's sample whose `x-github-event` header (with
//!   the body's `action`) is not one of its `events` is filtered out, as the webhook's
//!   fan-out would; the trust policy is not applied.
//! - Evaluations run one at a time, so a samples folder holds at most one of the
//!   process's evaluation slots, which live traffic shares. A sample that finds every
//!   slot taken is the warning `trigger/sample-not-evaluated`, not waited for.
//! - A sample with a `NAME.expected.json` is compared with it: payloads with
//!   [`diff_payloads`] (paths with the value's type and length, never the value; the
//!   empty payload compares as `{}`). A difference is the error `trigger/sample-mismatch`
//!   on the expected file. A sample without one is the notice `trigger/sample-unpinned`
//!   on the sample, saying what it did; it is never compared.
//! - A jq error in a message is the sandbox's, already cut to its bound.

use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::samples::{ExpectedOutcome, Sample, read_sample, sample_files};
use astrolift_manifest::triggers::{
    SAMPLE_MISMATCH, SAMPLE_NOT_EVALUATED, SAMPLE_UNPINNED, TriggerSource,
};
use astrolift_manifest::{Diagnostic, Limits, SourceTree, Span};
use serde_json::{Map, Value};

use crate::error::TriggerError;
use crate::evaluate::{CompiledBinding, Outcome, evaluate_verified};
use crate::replay::{PathChange, PayloadDiff, diff_payloads};

/// The longest event name a message shows; a longer one is cut.
const SHOWN_EVENT_CHARS: usize = 64;

/// Evaluates the samples of every binding of `agents` that names a `samples` folder,
/// one at a time, and returns the findings: `trigger/invalid-sample` for a sample that
/// cannot be read, `trigger/sample-mismatch`, `trigger/sample-unpinned` and
/// `trigger/sample-not-evaluated`. A binding that does not compile is skipped (its
/// validation already has the error).
pub async fn check_samples(
    tree: &dyn SourceTree,
    agents: &[AgentManifest],
    limits: &Limits,
) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    for agent in agents {
        for spec in &agent.triggers {
            let Some(folder) = &spec.samples else {
                continue;
            };
            let files = sample_files(tree, &agent.dir, folder);
            if files.is_empty() {
                continue;
            }
            let Ok(binding) = CompiledBinding::from_spec(spec.name.clone(), spec.clone()) else {
                continue;
            };
            for file in &files {
                match read_sample(tree, file) {
                    Ok(sample) => {
                        let ran = run(&binding, &sample, limits).await;
                        found.extend(judge(&spec.name, &sample, &ran));
                    }
                    Err(diagnostic) => found.push(*diagnostic),
                }
            }
        }
    }
    found
}

/// What a binding did with one sample.
#[derive(Debug, Clone, PartialEq)]
enum Ran {
    /// Dispatched; `None` is the empty payload.
    Dispatched(Option<Value>),
    /// Filtered out; why, when it is not the filter's doing.
    Filtered(Option<String>),
    /// The filter or the mapping failed: the error's text.
    Failed(String),
    /// Every evaluation slot was taken.
    NotEvaluated,
}

async fn run(binding: &CompiledBinding, sample: &Sample, limits: &Limits) -> Ran {
    if binding.spec.source == TriggerSource::Github
        && let Some(reason) = other_event(binding, sample)
    {
        return Ran::Filtered(Some(reason));
    }
    match evaluate_verified(binding, sample.body.as_bytes(), limits).await {
        Ok(Outcome::Dispatch { payload }) => Ran::Dispatched(payload),
        Ok(Outcome::Filtered) => Ran::Filtered(None),
        Err(TriggerError::Busy) => Ran::NotEvaluated,
        Err(error) => Ran::Failed(error.to_string()),
    }
}

/// Why a `github` binding's fan-out would not hand it this sample: no event header, or
/// an event (with the body's `action`) that is not one of its `events`.
fn other_event(binding: &CompiledBinding, sample: &Sample) -> Option<String> {
    let Some(event) = sample.headers.get("x-github-event") else {
        return Some("it has no `x-github-event` header".to_owned());
    };
    let body: Option<Value> = serde_json::from_str(&sample.body).ok();
    let action = body
        .as_ref()
        .and_then(|body| body.get("action"))
        .and_then(Value::as_str);
    if binding.matches_event(event, action) {
        return None;
    }
    let shown = match action {
        Some(action) => format!("{event}.{action}"),
        None => event.clone(),
    };
    Some(format!(
        "its event `{}` is not one of the binding's `events`",
        cut(&shown)
    ))
}

/// The finding about one evaluated sample, if any.
fn judge(trigger: &str, sample: &Sample, ran: &Ran) -> Option<Diagnostic> {
    let name = &sample.name;
    let expected_file = format!("{name}.expected.json");
    let subject = format!("sample `{name}` of trigger `{trigger}`");
    if *ran == Ran::NotEvaluated {
        let message = format!(
            "{subject} was not evaluated: every jq evaluation slot of this process is taken"
        );
        let diagnostic = Diagnostic::new(&SAMPLE_NOT_EVALUATED, &sample.path, Span::FILE, message)
            .with_help("the next sync evaluates it again");
        return Some(diagnostic);
    }
    let Some(expected) = &sample.expected else {
        let message = format!("{subject} {}; no `{expected_file}` pins it", did(ran));
        let help = format!(
            "to pin it, write `{expected_file}` next to it: the payload it must map to, or \
             `{{\"filtered\": true}}`"
        );
        let diagnostic =
            Diagnostic::new(&SAMPLE_UNPINNED, &sample.path, Span::FILE, message).with_help(help);
        return Some(diagnostic);
    };
    let wants = match &expected.outcome {
        ExpectedOutcome::Filtered => "expects it filtered out",
        ExpectedOutcome::Payload(_) => "expects a payload",
    };
    let message = match (&expected.outcome, ran) {
        (ExpectedOutcome::Filtered, Ran::Filtered(_)) => return None,
        (ExpectedOutcome::Payload(want), Ran::Dispatched(got)) => {
            let diff = diff_payloads(&as_object(want), &as_object(got));
            if diff.is_empty() {
                return None;
            }
            format!(
                "{subject} maps to a payload that differs from `{expected_file}` at {}",
                describe(&diff)
            )
        }
        (_, Ran::Failed(error)) => format!("{subject} failed (`{expected_file}` {wants}): {error}"),
        (_, other) => format!("{subject} {}; `{expected_file}` {wants}", did(other)),
    };
    let diagnostic = Diagnostic::new(&SAMPLE_MISMATCH, &expected.path, Span::FILE, message)
        .with_help(format!(
            "if the binding's new outcome is intended, write it into `{expected_file}`"
        ));
    Some(diagnostic)
}

/// What the binding did, after "sample `X` of trigger `T`".
fn did(ran: &Ran) -> String {
    match ran {
        Ran::Dispatched(None) => "dispatched with the empty payload".to_owned(),
        Ran::Dispatched(Some(payload)) => {
            let keys = payload.as_object().map_or(0, Map::len);
            let noun = if keys == 1 { "key" } else { "keys" };
            format!("dispatched with a payload of {keys} {noun}")
        }
        Ran::Filtered(None) => "was filtered out".to_owned(),
        Ran::Filtered(Some(reason)) => format!("was filtered out ({reason})"),
        Ran::Failed(error) => format!("failed: {error}"),
        Ran::NotEvaluated => "was not evaluated".to_owned(),
    }
}

/// A payload as the object it compares as: the empty payload is `{}`.
fn as_object(payload: &Option<Value>) -> Value {
    payload.clone().unwrap_or_else(|| Value::Object(Map::new()))
}

/// `.issue (string of 5 → number), .mode (added string of 6)`, and how many more.
fn describe(diff: &PayloadDiff) -> String {
    let mut parts: Vec<String> = diff
        .paths
        .iter()
        .map(|change| match change {
            PathChange::Added { path, new } => format!("{path} (added {new})"),
            PathChange::Removed { path, old } => format!("{path} (removed {old})"),
            PathChange::Changed { path, old, new } => format!("{path} ({old} → {new})"),
        })
        .collect();
    if diff.more > 0 {
        parts.push(format!("and {} more", diff.more));
    }
    parts.join(", ")
}

/// `text`, cut to [`SHOWN_EVENT_CHARS`] characters.
fn cut(text: &str) -> String {
    match text.char_indices().nth(SHOWN_EVENT_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use astrolift_manifest::Severity;
    use astrolift_manifest::samples::Expected;
    use serde_json::json;

    use super::*;

    fn sample(expected: Option<ExpectedOutcome>) -> Sample {
        Sample {
            name: "s".to_owned(),
            path: "samples/s.json".to_owned(),
            headers: Default::default(),
            body: "{}".to_owned(),
            expected: expected.map(|outcome| Expected {
                path: "samples/s.expected.json".to_owned(),
                outcome,
            }),
        }
    }

    #[test]
    fn a_sample_that_found_every_slot_taken_is_a_warning_never_a_mismatch() {
        let pinned = sample(Some(ExpectedOutcome::Filtered));
        let found = judge("t", &pinned, &Ran::NotEvaluated).expect("a warning");
        assert_eq!(
            (found.code.as_str(), found.severity, found.path.as_str()),
            (
                "trigger/sample-not-evaluated",
                Severity::Warning,
                "samples/s.json"
            )
        );
    }

    #[test]
    fn a_long_difference_names_twenty_paths_and_counts_the_rest() {
        let got: Map<String, Value> = (0..25).map(|i| (format!("k{i:02}"), json!(i))).collect();
        let pinned = sample(Some(ExpectedOutcome::Payload(None)));
        let found =
            judge("t", &pinned, &Ran::Dispatched(Some(Value::Object(got)))).expect("a mismatch");
        assert!(
            found.message.ends_with(".k19 (added number), and 5 more"),
            "{}",
            found.message
        );
        let same = sample(Some(ExpectedOutcome::Payload(Some(json!({"a": 1})))));
        assert_eq!(
            judge("t", &same, &Ran::Dispatched(Some(json!({"a": 1})))),
            None
        );
        let empty = sample(Some(ExpectedOutcome::Payload(None)));
        assert_eq!(judge("t", &empty, &Ran::Dispatched(None)), None);
    }

    #[test]
    fn a_long_event_name_is_cut() {
        let long = "e".repeat(SHOWN_EVENT_CHARS + 10);
        let shown = cut(&long);
        assert_eq!(shown.chars().count(), SHOWN_EVENT_CHARS + 1);
        assert!(shown.ends_with('…'));
        assert_eq!(cut("issues.opened"), "issues.opened");
    }
}
