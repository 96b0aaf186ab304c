//! The registered trigger bindings a checked head changes: what the check run replays
//! (docs/reference.md §9, "Trigger replay").
//!
//! A binding is changed when the head's binding of the same manifest and trigger name
//! differs from the registered one in what decides a request's fate: its `filter`, its
//! mapping (`payload`), its `events`, its `env_spec`, or its agent's name. A binding the
//! head removes, renames or fails to validate is not replayed (its removal or its errors
//! are the check run's already); a new binding has no kept requests to replay.
//!
//! The registered bindings are the checked repository's only (a keyed read by repository),
//! so a pull request in another repository that names the same trigger replays nothing.

use astrolift_manifest::Span;
use astrolift_manifest::triggers::TriggerSpec;
use astrolift_store::state::TriggerBinding;

use crate::plan::Candidate;

/// A registered binding and the head's version of it.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingChange {
    /// The registered binding (its id names its kept requests).
    pub registered: TriggerBinding,
    /// The head's binding, as validated.
    pub head: TriggerSpec,
    /// The head's name of the binding's agent.
    pub agent: String,
    /// Where the head's manifest writes the binding: the line a warning annotates.
    pub span: Option<Span>,
}

/// The registered `bindings` whose head versions in `candidates` change them, in
/// (manifest path, trigger name) order.
pub fn changed_bindings(
    candidates: &[Candidate],
    bindings: &[TriggerBinding],
) -> Vec<BindingChange> {
    let mut changes: Vec<BindingChange> = bindings
        .iter()
        .filter_map(|registered| {
            let manifest = candidates
                .iter()
                .map(|c| &c.manifest)
                .find(|m| m.manifest == registered.manifest_path)?;
            let head = manifest
                .triggers
                .iter()
                .find(|t| t.name == registered.name)?;
            let before: TriggerSpec = serde_json::from_value(registered.definition.clone()).ok()?;
            let changed = before.filter != head.filter
                || before.payload != head.payload
                || before.events != head.events
                || before.env_spec != head.env_spec
                || registered.agent_name != manifest.name;
            changed.then(|| BindingChange {
                registered: registered.clone(),
                head: head.clone(),
                agent: manifest.name.clone(),
                span: manifest.trigger_spans.get(&head.name).copied(),
            })
        })
        .collect();
    changes.sort_by(|a, b| {
        (&a.registered.manifest_path, &a.registered.name)
            .cmp(&(&b.registered.manifest_path, &b.registered.name))
    });
    changes
}
