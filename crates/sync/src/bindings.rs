//! Trigger bindings: what an agent's `[[triggers]]` register on apply.
//!
//! A binding's id is stable: derived from the repository, the agent's
//! manifest path and the trigger's name, so the URL `/triggers/{id}` survives
//! every change of the agent except a rename of the trigger. Each binding
//! records the agent's current snapshot, so a new snapshot rewrites them.

use astrolift_manifest::model::AgentManifest;
use astrolift_store::state::TriggerBinding;
use sha2::{Digest, Sha256};

/// `trg_` and 24 hex digits of sha256(repository NUL manifest NUL name).
pub fn trigger_id(repository: &str, manifest_path: &str, name: &str) -> String {
    let mut hash = Sha256::new();
    for part in [repository, manifest_path, name] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let hex = hex::encode(hash.finalize());
    format!("trg_{}", &hex[..24])
}

/// The bindings `manifest` asks for, at `snapshot_hash`.
pub fn desired(
    manifest: &AgentManifest,
    repository: &str,
    snapshot_hash: &str,
) -> Vec<TriggerBinding> {
    manifest
        .triggers
        .iter()
        .map(|spec| TriggerBinding {
            trigger_id: trigger_id(repository, &manifest.manifest, &spec.name),
            repository: repository.to_owned(),
            manifest_path: manifest.manifest.clone(),
            agent_name: manifest.name.clone(),
            name: spec.name.clone(),
            source: serde_json::to_value(spec.source)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            definition: serde_json::to_value(spec).unwrap_or_default(),
            snapshot_hash: snapshot_hash.to_owned(),
        })
        .collect()
}

/// `sha256:` and the hex digest of `bindings` in trigger-id order: what an
/// agent record stores as `bindings_digest` beside the bindings it wrote.
pub fn digest(bindings: &[TriggerBinding]) -> String {
    let mut sorted: Vec<&TriggerBinding> = bindings.iter().collect();
    sorted.sort_by(|a, b| a.trigger_id.cmp(&b.trigger_id));
    let mut hash = Sha256::new();
    for binding in sorted {
        // Serialising plain strings and JSON values cannot fail; an empty
        // record would still change the digest, so nothing is lost if it did.
        hash.update(serde_json::to_vec(binding).unwrap_or_default());
        hash.update([0]);
    }
    format!("sha256:{}", hex::encode(hash.finalize()))
}

/// The writes that turn `stored` (one agent's bindings) into `desired`:
/// bindings to put (new or different) and trigger ids to delete.
pub fn diff(
    stored: &[&TriggerBinding],
    desired: Vec<TriggerBinding>,
) -> (Vec<TriggerBinding>, Vec<String>) {
    let deletes = stored
        .iter()
        .filter(|s| !desired.iter().any(|d| d.trigger_id == s.trigger_id))
        .map(|s| s.trigger_id.clone())
        .collect();
    let puts = desired
        .into_iter()
        .filter(|d| !stored.contains(&d))
        .collect();
    (puts, deletes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        let a = trigger_id("acme/agents", "agents/triage/astrolift.toml", "new-issue");
        assert_eq!(
            a,
            trigger_id("acme/agents", "agents/triage/astrolift.toml", "new-issue")
        );
        assert_ne!(
            a,
            trigger_id("acme/agents", "agents/triage/astrolift.toml", "new-issues")
        );
        assert_ne!(
            a,
            trigger_id("acme/agent", "sagents/triage/astrolift.toml", "new-issue")
        );
        assert!(a.starts_with("trg_") && a.len() == 28);
    }
}
