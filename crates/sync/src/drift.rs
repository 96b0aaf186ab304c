//! Drift between two agent snapshots, classified as docs/reference.md §5.4 does for
//! workspace snapshots: critical drift would fail a resume, warning drift
//! is reported and proceeds.
//!
//! Works on the snapshots' canonical JSON (`serde_json::Value`), because the
//! previous snapshot is read back from the blob store as JSON: only the field
//! names of the snapshot format matter here.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// The one drift severity (`manifest::drift`): agent snapshots are
/// classified on the same scale as workspace snapshots.
pub use astrolift_manifest::drift::DriftSeverity;

/// One difference, with a seed-style kind such as `skill-version-changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriftItem {
    pub kind: String,
    pub severity: DriftSeverity,
    pub detail: String,
}

impl DriftItem {
    fn new(kind: &str, severity: DriftSeverity, detail: String) -> Self {
        Self {
            kind: kind.to_owned(),
            severity,
            detail,
        }
    }

    fn warning(kind: &str, detail: String) -> Self {
        Self::new(kind, DriftSeverity::Warning, detail)
    }
}

/// Every difference between two snapshots, in a stable order.
pub fn snapshot_drift(old: &Value, new: &Value) -> Vec<DriftItem> {
    let mut drift = Vec::new();
    if old["name"] != new["name"] {
        drift.push(DriftItem::new(
            "agent-changed",
            DriftSeverity::Critical,
            format!("agent name {} → {}", old["name"], new["name"]),
        ));
    }
    compare_field(old, new, "brief", "brief-changed", &mut drift);
    compare_field(old, new, "workload", "policy-changed", &mut drift);
    compare_field(old, new, "runtime_image", "image-changed", &mut drift);
    skill_drift(&old["skills"], &new["skills"], &mut drift);
    map_drift(
        &old["environment"],
        &new["environment"],
        "env-var",
        &mut drift,
    );
    secret_drift(&old["secrets"], &new["secrets"], &mut drift);
    if old["payload"]["digest"] != new["payload"]["digest"] {
        drift.push(DriftItem::warning(
            "payload-changed",
            format!(
                "package {} → {}",
                short(&old["payload"]["digest"]),
                short(&new["payload"]["digest"])
            ),
        ));
    }
    drift
}

fn compare_field(old: &Value, new: &Value, field: &str, kind: &str, drift: &mut Vec<DriftItem>) {
    if old[field] != new[field] {
        drift.push(DriftItem::warning(kind, format!("`{field}` changed")));
    }
}

/// Skills by identity: a local skill by its local name, a catalogue skill by
/// name, an org skill by alias and path.
fn skill_drift(old: &Value, new: &Value, drift: &mut Vec<DriftItem>) {
    let old = skills_by_id(old);
    let new = skills_by_id(new);
    for (id, before) in &old {
        match new.get(id) {
            None => drift.push(DriftItem::warning(
                "skill-removed",
                format!("skill `{id}` removed"),
            )),
            Some(after) if before != after => drift.push(skill_change(id, before, after)),
            Some(_) => {}
        }
    }
    for id in new.keys().filter(|id| !old.contains_key(*id)) {
        drift.push(DriftItem::warning(
            "skill-added",
            format!("skill `{id}` added"),
        ));
    }
}

/// `skill-version-changed` when the version, the ref or the commit a ref resolved to moved
/// (the skill repository's `main` got a new commit: the same `@main`, another `commit`);
/// `skill-changed` for any other difference, such as a first pin of a skill that was not
/// resolved before.
fn skill_change(id: &str, before: &Value, after: &Value) -> DriftItem {
    for field in ["version", "git_ref"] {
        if before[field] != after[field] && !before[field].is_null() {
            return skill_version_changed(id, plain(&before[field]), plain(&after[field]));
        }
    }
    if before["commit"] != after["commit"] && !before["commit"].is_null() {
        return skill_version_changed(id, short(&before["commit"]), short(&after["commit"]));
    }
    DriftItem::warning("skill-changed", format!("skill `{id}` content changed"))
}

fn skill_version_changed(id: &str, before: String, after: String) -> DriftItem {
    DriftItem::warning(
        "skill-version-changed",
        format!("skill `{id}` {before} → {after}"),
    )
}

fn skills_by_id(skills: &Value) -> BTreeMap<String, &Value> {
    let Some(skills) = skills.as_array() else {
        return BTreeMap::new();
    };
    skills
        .iter()
        .map(|skill| {
            let id = match skill["kind"].as_str() {
                Some("local") => plain(&skill["local_name"]),
                Some("org") => format!("{}/{}", plain(&skill["repo_alias"]), plain(&skill["path"])),
                _ => plain(&skill["name"]),
            };
            (id, skill)
        })
        .collect()
}

fn map_drift(old: &Value, new: &Value, prefix: &str, drift: &mut Vec<DriftItem>) {
    let (old, new) = (as_map(old), as_map(new));
    for (key, before) in &old {
        match new.get(key) {
            None => drift.push(DriftItem::warning(
                &format!("{prefix}-removed"),
                format!("`{key}` removed"),
            )),
            Some(after) if before != after => drift.push(DriftItem::warning(
                &format!("{prefix}-changed"),
                format!("`{key}` changed"),
            )),
            Some(_) => {}
        }
    }
    for key in new.keys().filter(|k| !old.contains_key(*k)) {
        drift.push(DriftItem::warning(
            &format!("{prefix}-added"),
            format!("`{key}` added"),
        ));
    }
}

/// Secret references are the agent's credentials: every one is required, so
/// removing one is critical drift (docs/reference.md §5.4: a required `credential-removed`).
fn secret_drift(old: &Value, new: &Value, drift: &mut Vec<DriftItem>) {
    let (old, new) = (as_map(old), as_map(new));
    for (key, before) in &old {
        match new.get(key) {
            None => drift.push(DriftItem::new(
                "credential-removed",
                DriftSeverity::Critical,
                format!("required secret `{key}` removed"),
            )),
            Some(after) if before != after => drift.push(DriftItem::warning(
                "credential-changed",
                format!("secret `{key}` now references another secret"),
            )),
            Some(_) => {}
        }
    }
    for key in new.keys().filter(|k| !old.contains_key(*k)) {
        drift.push(DriftItem::warning(
            "credential-added",
            format!("secret `{key}` added"),
        ));
    }
}

fn as_map(value: &Value) -> BTreeMap<&str, &Value> {
    value
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default()
}

fn plain(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

fn short(digest: &Value) -> String {
    let text = plain(digest);
    let hex = text.strip_prefix("sha256:").unwrap_or(&text);
    hex.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn base() -> Value {
        json!({
            "name": "triage", "brief": {"path": "b.md", "sha256": "aa"},
            "skills": [
                {"kind": "local", "local_name": "emr", "dir": "skills/emr", "sha256": "11"},
                {"kind": "catalogue", "name": "pr-review", "version": "1.2.0"}
            ],
            "workload": {"max_retries": 3}, "runtime_image": "img:1",
            "environment": {"LOG_LEVEL": "info"}, "secrets": {"API": "secret://a"},
            "payload": {"digest": "sha256:00"}
        })
    }

    fn kinds(old: &Value, new: &Value) -> Vec<(String, DriftSeverity)> {
        snapshot_drift(old, new)
            .into_iter()
            .map(|d| (d.kind, d.severity))
            .collect()
    }

    #[test]
    fn identical_snapshots_have_no_drift() {
        assert!(snapshot_drift(&base(), &base()).is_empty());
    }

    #[test]
    fn a_catalogue_version_bump_is_a_skill_version_warning() {
        let mut new = base();
        new["skills"][1]["version"] = json!("1.3.0");
        assert_eq!(
            kinds(&base(), &new),
            [("skill-version-changed".into(), DriftSeverity::Warning)]
        );
    }

    #[test]
    fn a_ref_resolved_to_a_new_commit_is_a_skill_version_warning() {
        let org = |commit: &str| {
            json!({"kind": "org", "repo_alias": "steadymd", "path": "runbooks/triage",
                   "git_ref": "main", "commit": commit, "sha256": commit})
        };
        let mut old = base();
        old["skills"][1] = org(&"1".repeat(40));
        let mut new = base();
        new["skills"][1] = org(&"2".repeat(40));
        let drift = snapshot_drift(&old, &new);
        assert_eq!(drift.len(), 1, "{drift:?}");
        assert_eq!(drift[0].kind, "skill-version-changed");
        assert_eq!(
            drift[0].detail,
            "skill `steadymd/runbooks/triage` 111111111111 → 222222222222"
        );
        // A first pin of a skill that was not resolved is a content change.
        let mut unresolved = base();
        unresolved["skills"][1] = json!({"kind": "org", "repo_alias": "steadymd",
            "path": "runbooks/triage", "git_ref": "main"});
        assert_eq!(
            kinds(&unresolved, &new),
            [("skill-changed".into(), DriftSeverity::Warning)]
        );
    }

    #[test]
    fn removing_a_secret_is_critical_and_renaming_the_agent_too() {
        let mut new = base();
        new["secrets"] = json!({});
        new["name"] = json!("other");
        let found = kinds(&base(), &new);
        assert!(found.contains(&("credential-removed".into(), DriftSeverity::Critical)));
        assert!(found.contains(&("agent-changed".into(), DriftSeverity::Critical)));
    }

    #[test]
    fn env_skill_image_and_payload_changes_are_warnings() {
        let mut new = base();
        new["environment"] = json!({"LOG_LEVEL": "debug", "NEW": "1"});
        new["skills"][0]["sha256"] = json!("22");
        new["runtime_image"] = json!("img:2");
        new["payload"]["digest"] = json!("sha256:01");
        let found: Vec<String> = kinds(&base(), &new).into_iter().map(|k| k.0).collect();
        assert_eq!(
            found,
            [
                "image-changed",
                "skill-changed",
                "env-var-changed",
                "env-var-added",
                "payload-changed"
            ]
        );
    }
}
