//! Resolved environments and drift: one test per drift kind, plus trees.

use astrolift_manifest::drift::{DriftKind, DriftSeverity, drift, drift_between_trees};
use astrolift_manifest::resolved::{
    AgentRuntime, ExecutionPolicy, ResolvedCredential, ResolvedEnvironment,
};
use astrolift_manifest::workspace::validate_workspace;
use astrolift_manifest::{Limits, MemTree};

use crate::h5_support::fixture;

/// The seed example (fixture `ws_valid`), resolved over an agent runtime.
fn base() -> ResolvedEnvironment {
    let tree = fixture("ws_valid");
    let (manifest, diagnostics) =
        validate_workspace(&tree, "astrolift.workspace.yaml", &Limits::DEFAULT);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let runtime = AgentRuntime {
        image: Some("ghcr.io/calliopeai/astrolift-agent-claude-code-vnc:latest".to_owned()),
        policy: Some(ExecutionPolicy {
            run_family: Some("task".to_owned()),
            max_retries: Some(3),
            tool_timeout_seconds: Some(1200),
            result_ttl_hours: Some(168),
        }),
        ..AgentRuntime::default()
    };
    ResolvedEnvironment::resolve(&manifest.expect("model"), Some(&runtime))
}

/// Applies `change` to the base and expects exactly one drift of `kind` and `severity`.
fn expect_one(
    change: impl FnOnce(&mut ResolvedEnvironment),
    kind: DriftKind,
    severity: DriftSeverity,
) {
    let old = base();
    let mut new = old.clone();
    change(&mut new);
    let drifts = drift(&old, &new);
    assert_eq!(drifts.len(), 1, "{drifts:#?}");
    assert_eq!(
        (drifts[0].kind, drifts[0].severity),
        (kind, severity),
        "{drifts:#?}"
    );
}

use DriftKind as K;
use DriftSeverity::{Critical, Warning};

#[test]
fn identical_snapshots_have_no_drift_and_canonical_json() {
    assert!(drift(&base(), &base()).is_empty());
    assert_eq!(base().canonical_json(), base().canonical_json());
    insta::assert_snapshot!("resolved_seed_example", base().canonical_json());
}

#[test]
fn agent_changed_is_critical() {
    expect_one(
        |e| e.agent.as_mut().expect("agent").slug = "other".into(),
        K::AgentChanged,
        Critical,
    );
}

#[test]
fn agent_profile_changed() {
    expect_one(
        |e| e.agent.as_mut().expect("agent").role = Some("x".into()),
        K::AgentProfileChanged,
        Warning,
    );
}

#[test]
fn surface_compat_changed() {
    expect_one(
        |e| {
            e.surfaces.insert("workflow".into());
        },
        K::SurfaceCompatChanged,
        Warning,
    );
}

#[test]
fn subagent_added() {
    expect_one(
        |e| {
            e.sub_agents.insert("critic".into(), Default::default());
        },
        K::SubagentAdded,
        Warning,
    );
}

#[test]
fn subagent_removed() {
    expect_one(
        |e| {
            e.sub_agents.remove("html-builder");
        },
        K::SubagentRemoved,
        Warning,
    );
}

#[test]
fn subagent_changed() {
    expect_one(
        |e| e.sub_agents.get_mut("html-builder").expect("sub").alias = Some("h".into()),
        K::SubagentChanged,
        Warning,
    );
}

#[test]
fn skill_added() {
    expect_one(
        |e| {
            e.skills.insert("new-skill".into(), None);
        },
        K::SkillAdded,
        Warning,
    );
}

#[test]
fn skill_removed() {
    expect_one(
        |e| {
            e.skills.remove("preview-builder");
        },
        K::SkillRemoved,
        Warning,
    );
}

#[test]
fn skill_version_changed() {
    expect_one(
        |e| {
            e.skills.insert("preview-builder".into(), Some("^2".into()));
        },
        K::SkillVersionChanged,
        Warning,
    );
}

#[test]
fn tool_selection_added() {
    expect_one(
        |e| {
            e.tool_selection.insert("provider:catalog:more".into());
        },
        K::ToolSelectionAdded,
        Warning,
    );
}

#[test]
fn tool_selection_removed() {
    expect_one(
        |e| {
            e.tool_selection
                .remove("provider:catalog:default-dev-tools");
        },
        K::ToolSelectionRemoved,
        Warning,
    );
}

#[test]
fn env_var_added() {
    expect_one(
        |e| {
            e.environment.insert("NEW".into(), "1".into());
        },
        K::EnvVarAdded,
        Warning,
    );
}

#[test]
fn env_var_removed() {
    expect_one(
        |e| {
            e.environment.remove("LOG_LEVEL");
        },
        K::EnvVarRemoved,
        Warning,
    );
}

#[test]
fn env_var_changed() {
    expect_one(
        |e| {
            e.environment.insert("LOG_LEVEL".into(), "debug".into());
        },
        K::EnvVarChanged,
        Warning,
    );
}

#[test]
fn credential_added() {
    let binding = ResolvedCredential {
        kind: "generic-secret".into(),
        source_ref: "x".into(),
        required: false,
    };
    expect_one(
        |e| {
            e.credentials.insert("NEW_KEY".into(), binding);
        },
        K::CredentialAdded,
        Warning,
    );
}

#[test]
fn required_credential_removed_is_critical() {
    expect_one(
        |e| {
            e.credentials.remove("GITHUB_TOKEN");
        },
        K::CredentialRemoved,
        Critical,
    );
}

#[test]
fn optional_credential_removed_is_a_warning() {
    expect_one(
        |e| {
            e.credentials.remove("STRIPE_KEY");
        },
        K::CredentialRemoved,
        Warning,
    );
}

#[test]
fn credential_kind_changed_is_critical() {
    expect_one(
        |e| e.credentials.get_mut("STRIPE_KEY").expect("c").kind = "wallet-entry".into(),
        K::CredentialKindChanged,
        Critical,
    );
}

#[test]
fn credential_changed() {
    expect_one(
        |e| e.credentials.get_mut("STRIPE_KEY").expect("c").source_ref = "wallet/other".into(),
        K::CredentialChanged,
        Warning,
    );
}

#[test]
fn permission_changed() {
    expect_one(
        |e| {
            e.permissions.deny.insert("exec".into());
        },
        K::PermissionChanged,
        Warning,
    );
}

#[test]
fn persistence_changed() {
    expect_one(|e| e.persistence = None, K::PersistenceChanged, Warning);
}

#[test]
fn output_surface_changed() {
    expect_one(
        |e| e.output_surface.as_mut().expect("surface").port = Some(3000),
        K::OutputSurfaceChanged,
        Warning,
    );
}

#[test]
fn image_changed() {
    expect_one(
        |e| e.image = Some("ghcr.io/x/y:2".into()),
        K::ImageChanged,
        Warning,
    );
}

#[test]
fn policy_changed() {
    expect_one(
        |e| e.policy.as_mut().expect("policy").max_retries = Some(5),
        K::PolicyChanged,
        Warning,
    );
}

#[test]
fn native_secrets_resolve_as_required_credentials() {
    let runtime = AgentRuntime {
        secrets: [("API".to_owned(), "secret://agents/api".to_owned())].into(),
        ..AgentRuntime::default()
    };
    let manifest = astrolift_manifest::workspace::WorkspaceManifest::default();
    let with = ResolvedEnvironment::resolve(&manifest, Some(&runtime));
    let without = ResolvedEnvironment::resolve(&manifest, None);
    let drifts = drift(&with, &without);
    assert_eq!(drifts.len(), 1);
    assert_eq!(
        (drifts[0].kind, drifts[0].severity),
        (K::CredentialRemoved, Critical)
    );
}

#[test]
fn drift_between_two_trees() {
    let old_yaml = "metadata:\n  slug: ws\n  version: 1.0.0\n  surfaceCompat: [workflow]\nspec:\n  agent:\n    slug: brainstorm\n  skills:\n    - slug: a\n      version: ^1\n  credentials:\n    - name: TOKEN\n      kind: scm-token\n      sourceRef: x\n      required: true\n";
    let new_yaml = "metadata:\n  slug: ws\n  version: 1.1.0\n  surfaceCompat: [workflow]\nspec:\n  agent:\n    slug: brainstorm\n  skills:\n    - slug: a\n      version: ^2\n";
    let old = MemTree::from_files([
        ("astrolift.workspace.yaml", old_yaml),
        (
            "workspaces/gone.yaml",
            "metadata:\n  slug: gone\n  version: 1.0.0\n  surfaceCompat: [workflow]\n",
        ),
    ]);
    let new = MemTree::from_files([
        ("astrolift.workspace.yaml", new_yaml),
        (
            "workspaces/fresh.yaml",
            "metadata:\n  slug: fresh\n  version: 1.0.0\n  surfaceCompat: [workflow]\n",
        ),
    ]);
    let report = drift_between_trees(&old, &new, &Limits::DEFAULT);
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    assert!(report.has_critical());
    insta::assert_snapshot!("drift_between_trees_text", report.to_text());
    insta::assert_json_snapshot!("drift_between_trees_json", report);
}

#[test]
fn native_agents_drift_by_name() {
    let manifest = |image: &str, level: &str| {
        format!(
            "astrolift_version = 1\nname = \"triage\"\n\n[[workloads]]\nname = \"triage\"\nkind = \"agent\"\n\n  [[workloads.containers]]\n  name = \"agent\"\n  is_primary = true\n  image_ref = \"{image}\"\n\n[environment]\nLOG_LEVEL = \"{level}\"\n\n[secrets]\nAPI = \"secret://agents/api\"\n"
        )
    };
    let old = MemTree::from_files([("astrolift.toml", manifest("ghcr.io/a/b:1", "info"))]);
    let new = MemTree::from_files([("astrolift.toml", manifest("ghcr.io/a/b:2", "debug"))]);
    let report = drift_between_trees(&old, &new, &Limits::DEFAULT);
    let kinds: Vec<_> = report
        .environments
        .iter()
        .flat_map(|w| w.drifts.iter().map(|d| d.kind))
        .collect();
    assert_eq!(
        kinds,
        [K::EnvVarChanged, K::ImageChanged],
        "{}",
        report.to_text()
    );
    assert_eq!(report.environments[0].id, "agent/triage");
    assert!(!report.has_critical());
}
