//! Trigger bindings: what an agent's `[[triggers]]` register on apply.
//!
//! A binding's id is random and stable: minted ([`new_trigger_id`]: `trg_`
//! and 24 hex digits, 96 bits from the OS CSPRNG) when the binding is first
//! registered, and kept by every later sync while a binding of that agent
//! (manifest path) with that trigger name exists, so the URL
//! `/triggers/{id}` survives every change of the agent except a rename or
//! removal of the trigger (or the agent being orphaned). Nobody can derive
//! the URL from the repository, manifest or name.
//!
//! **Bindings registered before ids were random** have the derived id of
//! [`legacy_trigger_id`]; they keep it (the sender's configured URL keeps
//! working): a sync reuses whatever id is stored. To replace a derived id
//! with a random one, rename the trigger (or remove it and add it back in a
//! later commit); `astrolift triggers list` shows the new URL.
//!
//! Each binding records the agent's current snapshot, so a new snapshot
//! rewrites them.

use astrolift_manifest::model::AgentManifest;
use astrolift_store::state::TriggerBinding;
use sha2::{Digest, Sha256};

/// A new trigger id: `trg_` and 24 hex digits (96 bits) from the OS CSPRNG.
pub fn new_trigger_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes)?;
    Ok(format!("trg_{}", hex::encode(bytes)))
}

/// The id bindings had before ids were random: `trg_` and 24 hex digits of
/// sha256(repository NUL manifest NUL name). Derivable by anyone; never
/// minted any more, kept only where a stored binding already has it.
pub fn legacy_trigger_id(repository: &str, manifest_path: &str, name: &str) -> String {
    let mut hash = Sha256::new();
    for part in [repository, manifest_path, name] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let hex = hex::encode(hash.finalize());
    format!("trg_{}", &hex[..24])
}

/// The bindings `manifest` asks for, at `snapshot_hash`. `stored` are the
/// agent's stored bindings: a trigger keeps the id of the stored binding
/// with its name; a new one gets a new random id.
pub fn desired(
    manifest: &AgentManifest,
    repository: &str,
    snapshot_hash: &str,
    stored: &[&TriggerBinding],
) -> Result<Vec<TriggerBinding>, getrandom::Error> {
    manifest
        .triggers
        .iter()
        .map(|spec| {
            let kept = stored
                .iter()
                .find(|b| b.manifest_path == manifest.manifest && b.name == spec.name);
            let trigger_id = match kept {
                Some(binding) => binding.trigger_id.clone(),
                None => new_trigger_id()?,
            };
            Ok(binding(
                manifest,
                repository,
                snapshot_hash,
                spec,
                trigger_id,
            ))
        })
        .collect()
}

fn binding(
    manifest: &AgentManifest,
    repository: &str,
    snapshot_hash: &str,
    spec: &astrolift_manifest::triggers::TriggerSpec,
    trigger_id: String,
) -> TriggerBinding {
    TriggerBinding {
        trigger_id,
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
    }
}

/// `sha256:` and the hex digest of `bindings` without their ids, in
/// (manifest, name) order: what an agent record stores as `bindings_digest`
/// beside the bindings it wrote. The ids are left out because they are
/// random: a listing of bindings that lags the agent record (so the ids
/// cannot be reused and fresh ones are minted) still matches the record,
/// and the plan writes nothing.
pub fn digest(bindings: &[TriggerBinding]) -> String {
    let mut sorted: Vec<&TriggerBinding> = bindings.iter().collect();
    sorted.sort_by(|a, b| (&a.manifest_path, &a.name).cmp(&(&b.manifest_path, &b.name)));
    let mut hash = Sha256::new();
    for binding in sorted {
        let without_id = TriggerBinding {
            trigger_id: String::new(),
            ..binding.clone()
        };
        // Serialising plain strings and JSON values cannot fail; an empty
        // record would still change the digest, so nothing is lost if it did.
        hash.update(serde_json::to_vec(&without_id).unwrap_or_default());
        hash.update([0]);
    }
    format!("sha256:{}", hex::encode(hash.finalize()))
}

/// The digest agent records stored before ids were random: over the
/// bindings with their ids, in trigger-id order. A record that holds it is
/// current when the stored ids are reused, so upgrading changes no agent. A
/// compatibility shim: when it can go is in docs/operations.md, "Compatibility shims".
pub fn legacy_digest(bindings: &[TriggerBinding]) -> String {
    let mut sorted: Vec<&TriggerBinding> = bindings.iter().collect();
    sorted.sort_by(|a, b| a.trigger_id.cmp(&b.trigger_id));
    let mut hash = Sha256::new();
    for binding in sorted {
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
    fn new_ids_are_random_and_96_bits() {
        let a = new_trigger_id().expect("random");
        let b = new_trigger_id().expect("random");
        assert_ne!(a, b);
        assert!(a.starts_with("trg_") && a.len() == 4 + 24, "{a}");
        assert!(a[4..].bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn the_digest_ignores_ids_and_the_legacy_digest_does_not() {
        let binding = TriggerBinding {
            trigger_id: "trg_1".into(),
            repository: "acme/agents".into(),
            manifest_path: "a/astrolift.toml".into(),
            agent_name: "a".into(),
            name: "hook".into(),
            source: "generic".into(),
            definition: serde_json::json!({}),
            snapshot_hash: "snap".into(),
        };
        let renamed = TriggerBinding {
            trigger_id: "trg_2".into(),
            ..binding.clone()
        };
        assert_eq!(
            digest(std::slice::from_ref(&binding)),
            digest(std::slice::from_ref(&renamed))
        );
        assert_ne!(legacy_digest(&[binding]), legacy_digest(&[renamed]));
        assert_eq!(digest(&[]), legacy_digest(&[]));
    }

    #[test]
    fn legacy_ids_are_derived() {
        let a = legacy_trigger_id("acme/agents", "agents/triage/astrolift.toml", "new-issue");
        assert_eq!(
            a,
            legacy_trigger_id("acme/agents", "agents/triage/astrolift.toml", "new-issue")
        );
        assert_ne!(
            a,
            legacy_trigger_id("acme/agent", "sagents/triage/astrolift.toml", "new-issue")
        );
        assert!(a.starts_with("trg_") && a.len() == 28);
    }
}
