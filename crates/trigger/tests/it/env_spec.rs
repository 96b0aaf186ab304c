//! At dispatch, a binding's `env_spec` must be an env spec of its agent's
//! project: a missing one, one of another project and one of no project are
//! the same 409, and nothing is recorded or queued.

use std::sync::Arc;

use astrolift_dispatch::dispatch::MemoryDispatchQueue;
use astrolift_store::StateStore;
use astrolift_store::state::{
    AgentChange, AgentStatus, AuditAction, ChangeSet, EnvSpec, SqliteStateStore,
};
use astrolift_trigger::{SecretResolver, TriggerService};

use crate::service::{REPO, binding};
use crate::support::{FixedSecrets, fixture, hmac_verify, limits, signed, spec};

const MANIFEST: &str = "agents/triage/astrolift.toml";
const TRIGGER: &str = "trg_with_env_spec";

async fn state_with_binding(dir: &tempfile::TempDir, env_spec: &str) -> Arc<dyn StateStore> {
    let state: Arc<dyn StateStore> = Arc::new(
        SqliteStateStore::open(dir.path().join("state.db"))
            .await
            .expect("sqlite"),
    );
    let mut trigger = spec(Some(hmac_verify()), None, None);
    trigger.env_spec = Some(env_spec.to_owned());
    let agent = astrolift_store::state::Agent {
        repository: REPO.to_owned(),
        manifest_path: MANIFEST.to_owned(),
        project_id: "p-1".to_owned(),
        name: "triage".to_owned(),
        alias: None,
        status: AgentStatus::Active,
        snapshot_hash: "snap-triage-1".to_owned(),
        payload_digest: "sha256:00".to_owned(),
        commit: "c0ffee".to_owned(),
        version: 0,
        updated_at: 1,
        bindings_digest: None,
        layer_key: None,
        package_build: None,
    };
    let mut change = AgentChange::new(agent, None, AuditAction::Added, "c0ffee", "test", 1);
    change.put_bindings = vec![binding(TRIGGER, MANIFEST, "triage", &trigger)];
    state
        .apply(ChangeSet {
            repository: REPO.to_owned(),
            agents: vec![change],
            synced: None,
        })
        .await
        .expect("registers");
    state
}

async fn put_spec(state: &dyn StateStore, name: &str, project: Option<&str>) {
    let spec = EnvSpec {
        name: name.to_owned(),
        project_id: project.map(str::to_owned),
        agent_type: Some("claude".into()),
        runtime: Some("claude-code".into()),
        config_repo: "octo/config".to_owned(),
        manifest_path: "envs/triage.toml".to_owned(),
        updated_at: 1,
        previews: false,
    };
    state.put_env_spec(&spec).await.expect("env spec");
}

#[tokio::test]
async fn only_an_env_spec_of_the_agents_project_dispatches() {
    let body = fixture("generic/jira_high.json");
    let mut refusals = Vec::new();
    for (name, owner) in [
        ("missing", None),
        ("theirs", Some(Some("p-2"))),
        ("legacy", Some(None)),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = state_with_binding(&dir, name).await;
        if let Some(project) = owner {
            put_spec(state.as_ref(), name, project).await;
        }
        let queue = Arc::new(MemoryDispatchQueue::new());
        let secrets: Arc<dyn SecretResolver> = Arc::new(FixedSecrets::new());
        let service = TriggerService::new(state.clone(), secrets, queue.clone(), limits());
        let refused = service.handle(TRIGGER, &signed(&body), &body).await;
        assert_eq!(refused.status, 409, "{name}: {refused:?}");
        assert!(queue.messages().is_empty(), "{name}: nothing queued");
        assert!(
            !refused.body.to_string().contains(name),
            "the body names no env spec"
        );
        refusals.push(refused.body["error"].clone());

        // Defined for the agent's project, the same request dispatches.
        put_spec(state.as_ref(), name, Some("p-1")).await;
        let accepted = service.handle(TRIGGER, &signed(&body), &body).await;
        assert_eq!(accepted.status, 202, "{name}: {accepted:?}");
        assert_eq!(queue.messages().len(), 1);
    }
    assert!(
        refusals.windows(2).all(|w| w[0] == w[1]),
        "one answer for missing, foreign and legacy specs: {refusals:?}"
    );
}
