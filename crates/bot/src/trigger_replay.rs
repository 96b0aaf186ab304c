//! The check run's **Trigger replay** section (docs/reference.md §9, "Trigger replay"): the
//! registered bindings a checked head changes ([`astrolift_sync::trigger_changes`]), their
//! kept requests replayed through the registered and the head's binding
//! ([`astrolift_trigger::replayer`]), the counts per binding, and per changed request the
//! differing paths by type and length. A head that errors on, or newly filters, a request
//! that dispatched gets a warning annotation on the binding's line; the conclusion is not
//! changed by a replay.
//!
//! Whether the repository is private is asked of GitHub (`GET /repos/{owner}/{repo}`) only
//! when a changed binding's registered version sets `replay_values`; a failed answer counts
//! as public (no values).

use std::fmt::Write as _;

use astrolift_forge::github::{Annotation, AnnotationLevel, Installation, RepoPath};
use astrolift_manifest::Limits;
use astrolift_store::StateStore;
use astrolift_store::state::MAX_KEPT_REQUESTS;
use astrolift_sync::trigger_changes::BindingChange;
use astrolift_trigger::replay::Replayed;
use astrolift_trigger::replayer::{
    BindingReplay, ReplayOptions, ReplayTarget, RequestReplay, TriggerReplay, replay_bindings,
    utc_minute,
};

use crate::comment_commands::code_span;

/// Rows of changed requests shown per binding; the rest are counted.
const ROWS_SHOWN: usize = 10;
/// Characters of a payload shown when values are shown.
const PAYLOAD_CHARS: usize = 1_000;

/// Replays `changes` of `repository` (asking GitHub whether it is private only when a
/// binding could show values).
pub async fn replay_changes(
    state: &dyn StateStore,
    installation: &Installation,
    repo: &RepoPath,
    changes: &[BindingChange],
    limits: &Limits,
    now: i64,
) -> TriggerReplay {
    let wants_values = changes.iter().any(|change| {
        change
            .registered
            .definition
            .get("replay_values")
            .and_then(serde_json::Value::as_bool)
            == Some(true)
    });
    let private = wants_values
        && match installation.repository(repo).await {
            Ok(repository) => repository.private,
            Err(error) => {
                tracing::warn!(%error, "cannot read whether the repository is private: values hidden");
                false
            }
        };
    let targets = targets(changes);
    let options = ReplayOptions {
        last: MAX_KEPT_REQUESTS,
        private,
        now,
    };
    let repository = changes
        .first()
        .map_or("", |change| change.registered.repository.as_str());
    replay_bindings(state, repository, &targets, options, limits).await
}

/// What the replayer evaluates for `changes`.
pub fn targets(changes: &[BindingChange]) -> Vec<ReplayTarget<'_>> {
    changes
        .iter()
        .map(|change| ReplayTarget {
            registered: &change.registered,
            head: &change.head,
            agent: &change.agent,
            span: change.span,
        })
        .collect()
}

/// The summary section.
pub fn section(replay: &TriggerReplay) -> String {
    let mut out = String::from("### Trigger replay\n");
    for binding in &replay.bindings {
        binding_section(binding, &mut out);
    }
    if !replay.not_replayed.is_empty() {
        out.push_str("\n**Not replayed:**\n");
        for skipped in &replay.not_replayed {
            let _ = writeln!(
                out,
                "- {} in {}: {}",
                code_span(&skipped.trigger),
                code_span(&skipped.manifest),
                code_span(&skipped.reason)
            );
        }
    }
    out
}

fn binding_section(binding: &BindingReplay, out: &mut String) {
    let _ = write!(
        out,
        "\n**{}** in {} ({})",
        code_span(&binding.trigger),
        code_span(&binding.manifest),
        code_span(&binding.trigger_id)
    );
    if binding.replayed == 0 && binding.skipped == 0 {
        out.push_str(
            ": no kept requests (none accepted in the last 7 days, or `keep_deliveries = 0`).\n",
        );
        return;
    }
    let counts = binding.counts;
    let _ = writeln!(
        out,
        ": {} kept requests replayed: {} unchanged, {} changed, {} newly filtered, {} newly dispatched, {} error.",
        binding.replayed,
        counts.unchanged,
        counts.changed,
        counts.newly_filtered,
        counts.newly_dispatched,
        counts.error
    );
    if binding.skipped > 0 {
        let _ = writeln!(
            out,
            "\n{} not replayed: every evaluation slot was taken.",
            binding.skipped
        );
    }
    if binding.requests.is_empty() {
        return;
    }
    out.push_str("\n| Received | Then | Now | Differences |\n|---|---|---|---|\n");
    for request in binding.requests.iter().take(ROWS_SHOWN) {
        row(request, out);
    }
    if binding.requests.len() > ROWS_SHOWN {
        let _ = writeln!(
            out,
            "\n… and {} more changed requests (`astrolift triggers replay {}` lists them all).",
            binding.requests.len() - ROWS_SHOWN,
            binding.trigger_id
        );
    }
    if binding.values {
        payloads(binding, out);
    }
}

fn row(request: &RequestReplay, out: &mut String) {
    let (now, differences) = match &request.replayed {
        Replayed::Unchanged => ("unchanged", String::new()),
        Replayed::Changed { diff } => ("changed", diff.describe(cell)),
        Replayed::NewlyFiltered => ("newly filtered", String::new()),
        Replayed::NewlyDispatched => ("newly dispatched", String::new()),
        Replayed::Error { error, .. } => ("error", cell(error)),
    };
    let _ = writeln!(
        out,
        "| {} | {} | {now} | {differences} |",
        utc_minute(request.received_at),
        request.kept_outcome.as_str()
    );
}

/// The payloads of each changed request, when the binding shows values.
fn payloads(binding: &BindingReplay, out: &mut String) {
    out.push_str(
        "\n<details><summary>Payloads (the binding sets <code>replay_values</code>)</summary>\n\n",
    );
    for request in binding.requests.iter().take(ROWS_SHOWN) {
        let Some(payloads) = &request.payloads else {
            continue;
        };
        let _ = writeln!(out, "{}:\n", utc_minute(request.received_at));
        for (label, value) in [
            ("registered", &payloads.registered),
            ("head", &payloads.head),
        ] {
            let text: String = value.to_string().chars().take(PAYLOAD_CHARS).collect();
            let _ = writeln!(out, "- {label}: {}", code_span(&text));
        }
        out.push('\n');
    }
    out.push_str("</details>\n");
}

/// A warning on the binding's line for each binding whose head loses dispatches.
pub fn annotations(replay: &TriggerReplay) -> Vec<Annotation> {
    replay
        .bindings
        .iter()
        .filter_map(|binding| {
            let lost = binding.lost_dispatches();
            if lost == 0 {
                return None;
            }
            let line = binding.span.map_or(1, |span| span.line.max(1));
            let newly_filtered = binding.counts.newly_filtered;
            let errors = lost - newly_filtered.min(lost);
            Some(Annotation {
                path: binding.manifest.clone(),
                start_line: line,
                end_line: line,
                start_column: None,
                end_column: None,
                annotation_level: AnnotationLevel::Warning,
                title: format!("trigger replay: {}", binding.trigger),
                message: format!(
                    "This change drops {lost} of the last {} requests that dispatched: {newly_filtered} newly filtered out, {errors} now failing. See the Trigger replay section of the check run.",
                    binding.dispatched
                ),
                raw_details: None,
            })
        })
        .collect()
}

/// A code span fit for a table cell (`|` escaped).
fn cell(raw: &str) -> String {
    code_span(raw).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use astrolift_manifest::Span;
    use astrolift_store::state::KeptOutcome;
    use astrolift_trigger::replay::{ReplayCounts, diff_payloads};
    use astrolift_trigger::replayer::{NotReplayed, Payloads};
    use serde_json::json;

    use super::*;

    fn request(n: i64, replayed: Replayed) -> RequestReplay {
        RequestReplay {
            received_at: 1_796_000_000 + n * 60,
            kept_outcome: KeptOutcome::Dispatched,
            replayed,
            payloads: None,
        }
    }

    fn binding(requests: Vec<RequestReplay>) -> BindingReplay {
        let classes: Vec<Replayed> = requests.iter().map(|r| r.replayed.clone()).collect();
        BindingReplay {
            trigger_id: "trg_0123456789abcdef01234567".to_owned(),
            trigger: "jira|`high`".to_owned(),
            manifest: "agents/triage/astrolift.toml".to_owned(),
            agent: "triage".to_owned(),
            span: Some(Span {
                line: 12,
                column: 8,
                end_line: 12,
                end_column: 20,
            }),
            replayed: classes.len() + 3,
            dispatched: classes.len() + 2,
            counts: ReplayCounts {
                unchanged: 3,
                ..ReplayCounts::of(&classes)
            },
            skipped: 0,
            values: false,
            requests,
        }
    }

    fn changed() -> Replayed {
        Replayed::Changed {
            diff: diff_payloads(
                &json!({"issue": "OPS-1", "title": "x"}),
                &json!({"issue": 1, "title": "x", "mode|x": "triage"}),
            ),
        }
    }

    #[test]
    fn a_section_counts_lists_and_escapes() {
        let replay = TriggerReplay {
            bindings: vec![
                binding(vec![
                    request(1, changed()),
                    request(2, Replayed::NewlyFiltered),
                    request(
                        3,
                        Replayed::Error {
                            error: "the payload mapping failed".to_owned(),
                            was_dispatched: true,
                        },
                    ),
                ]),
                BindingReplay {
                    replayed: 0,
                    dispatched: 0,
                    counts: ReplayCounts::default(),
                    requests: Vec::new(),
                    trigger: "lean".to_owned(),
                    ..binding(Vec::new())
                },
            ],
            not_replayed: vec![NotReplayed {
                trigger_id: "trg_9".to_owned(),
                trigger: "ninth".to_owned(),
                manifest: "agents/ninth/astrolift.toml".to_owned(),
                reason: "a check replays at most 8 bindings".to_owned(),
            }],
        };
        insta::assert_snapshot!(section(&replay));
    }

    #[test]
    fn only_a_binding_that_loses_dispatches_is_annotated_on_its_line() {
        let losing = binding(vec![
            request(1, Replayed::NewlyFiltered),
            request(
                2,
                Replayed::Error {
                    error: "the filter failed".to_owned(),
                    was_dispatched: true,
                },
            ),
            request(3, changed()),
        ]);
        let keeping = binding(vec![request(1, changed())]);
        let annotations = annotations(&TriggerReplay {
            bindings: vec![losing, keeping],
            not_replayed: Vec::new(),
        });
        assert_eq!(annotations.len(), 1, "{annotations:?}");
        let warning = &annotations[0];
        assert_eq!((warning.start_line, warning.end_line), (12, 12));
        assert_eq!(warning.annotation_level, AnnotationLevel::Warning);
        assert_eq!(warning.path, "agents/triage/astrolift.toml");
        assert!(
            warning
                .message
                .starts_with("This change drops 2 of the last 5 requests that dispatched: 1 newly filtered out, 1 now failing."),
            "{}",
            warning.message
        );
    }

    #[test]
    fn rows_stop_at_ten_and_payloads_show_only_with_values() {
        let rows: Vec<RequestReplay> = (0..12).map(|n| request(n, changed())).collect();
        let many = section(&TriggerReplay {
            bindings: vec![binding(rows.clone())],
            not_replayed: Vec::new(),
        });
        assert_eq!(many.matches("| changed |").count(), ROWS_SHOWN);
        assert!(many.contains("… and 2 more changed requests"), "{many}");
        assert!(!many.contains("<details>"));
        let with_values = BindingReplay {
            values: true,
            requests: rows
                .into_iter()
                .map(|r| RequestReplay {
                    payloads: Some(Payloads {
                        registered: json!({"issue": "OPS-1"}),
                        head: json!({"issue": 1}),
                    }),
                    ..r
                })
                .collect(),
            ..binding(Vec::new())
        };
        let shown = section(&TriggerReplay {
            bindings: vec![with_values],
            not_replayed: Vec::new(),
        });
        assert!(
            shown.contains(r#"- registered: `{"issue":"OPS-1"}`"#),
            "{shown}"
        );
    }
}
