//! Env specs named by trigger bindings: each must exist in the project of
//! the registration that covers the agent's manifest (env specs belong to a project: docs/reference.md).
//!
//! A trigger whose `env_spec` the project cannot use is an error on the
//! `env_spec` line, which fails its agent: it is not registered, so no
//! binding that names a foreign or missing env spec is ever written. The
//! message is the same whether the spec is missing, of another project or
//! of none (see [`EnvSpecRefusal`]), so a check run never tells a tenant
//! which names another project uses. The trigger service and `astrolift
//! dispatch` check again at dispatch (the spec may change after the sync).
//!
//! Only manifests whose triggers name an env spec are read again (for the
//! positions), and each distinct (name, project) is looked up once per sync.
//!
//! A workflow stage's `env_spec` is checked the same way, against the project
//! of the stage agent's manifest ([`check_workflow_env_specs`]): a refused one
//! is an error on its line that fails the workflow (not the agent).

use std::collections::HashMap;

use astrolift_manifest::env_spec::{
    NOT_IN_PROJECT, STAGE_NOT_IN_PROJECT, env_spec_refs, stage_env_spec_refs,
};
use astrolift_manifest::{Diagnostic, Limits};
use astrolift_package::PayloadTree;
use astrolift_store::StateStore;
use astrolift_store::state::{EnvSpecRefusal, env_spec_for_project};

use crate::SyncError;
use crate::commands::{EXAMPLE_AGENT_TYPE, EXAMPLE_RUNTIME, env_spec_upsert_command};
use crate::package_step::Prepared;
use crate::request::SyncRequest;
use crate::scope::Scope;
use crate::workflows::FoundWorkflow;

/// Checks the env specs every agent's triggers name against the project its
/// manifest registers under (its covering registration's: the applied one in
/// apply mode), and fails each agent that names one its project cannot use.
/// A manifest no registration covers registers nothing, so there is nothing
/// to check it against.
pub(crate) async fn check_env_specs(
    prepared: &mut Prepared,
    tree: &dyn PayloadTree,
    state: &dyn StateStore,
    request: &SyncRequest,
    scope: &Scope,
) -> Result<(), SyncError> {
    let named: Vec<(usize, String, String)> = prepared
        .manifests()
        .enumerate()
        .filter(|(_, m)| m.triggers.iter().any(|t| t.env_spec.is_some()))
        .filter_map(|(index, m)| {
            let project = scope.project_of(&m.manifest)?;
            Some((index, m.manifest.clone(), project))
        })
        .collect();
    let mut checked: HashMap<(String, String), Result<(), EnvSpecRefusal>> = HashMap::new();
    for (index, path, project) in named {
        let mut refused = Vec::new();
        for reference in manifest_refs(tree, &path, &request.validate.limits) {
            let name = reference.env_spec;
            let key = (name.clone(), project.clone());
            if !checked.contains_key(&key) {
                let verdict = env_spec_for_project(state, &name, &project).await?;
                checked.insert(key.clone(), verdict.map(|_| ()));
            }
            if let Some(Err(_)) = checked.get(&key) {
                refused.push(not_in_project(&path, reference.span, &name, &project));
            }
        }
        if !refused.is_empty() {
            prepared.fail(index, refused);
        }
    }
    Ok(())
}

/// Checks the env spec of every stage of the workflows in `found` that have no
/// errors yet against the project the stage agent's manifest registers under;
/// marks each workflow with a refused one failed and returns the errors.
pub(crate) async fn check_workflow_env_specs(
    found: &mut [FoundWorkflow],
    tree: &dyn PayloadTree,
    state: &dyn StateStore,
    request: &SyncRequest,
    scope: &Scope,
) -> Result<Vec<Diagnostic>, SyncError> {
    let mut errors = Vec::new();
    let mut checked: HashMap<(String, String), bool> = HashMap::new();
    for found in found.iter_mut() {
        let workflow = &found.workflow;
        if found.failed || workflow.stages.iter().all(|s| s.env_spec.is_none()) {
            continue;
        }
        let text = match tree.read_text(&workflow.path, request.validate.limits.manifest_file) {
            Ok(text) => text,
            // Validation read this file already; one it could not read failed there.
            Err(_) => continue,
        };
        let mut refused = Vec::new();
        for reference in stage_env_spec_refs(&workflow.path, &text) {
            let stage = reference
                .trigger
                .as_deref()
                .and_then(|name| workflow.stage(name));
            let Some(project) = stage.and_then(|s| scope.project_of(&s.manifest)) else {
                continue;
            };
            let name = reference.env_spec;
            let key = (name.clone(), project.clone());
            let usable = match checked.get(&key) {
                Some(usable) => *usable,
                None => {
                    let usable = env_spec_for_project(state, &name, &project).await?.is_ok();
                    checked.insert(key, usable);
                    usable
                }
            };
            if !usable {
                refused.push(refusal(
                    &STAGE_NOT_IN_PROJECT,
                    &workflow.path,
                    reference.span,
                    &name,
                    &project,
                ));
            }
        }
        if !refused.is_empty() {
            found.failed = true;
            errors.extend(refused);
        }
    }
    Ok(errors)
}

fn manifest_refs(
    tree: &dyn PayloadTree,
    path: &str,
    limits: &Limits,
) -> Vec<astrolift_manifest::env_spec::EnvSpecRef> {
    // Validation read this file already; a file it could not read has its
    // own diagnostic and no triggers.
    match tree.read_text(path, limits.manifest_file) {
        Ok(text) => env_spec_refs(path, &text),
        Err(_) => Vec::new(),
    }
}

fn not_in_project(
    path: &str,
    span: astrolift_manifest::Span,
    name: &str,
    project: &str,
) -> Diagnostic {
    refusal(&NOT_IN_PROJECT, path, span, name, project)
}

fn refusal(
    code: &'static astrolift_manifest::Code,
    path: &str,
    span: astrolift_manifest::Span,
    name: &str,
    project: &str,
) -> Diagnostic {
    let upsert = env_spec_upsert_command(name, project, EXAMPLE_AGENT_TYPE, EXAMPLE_RUNTIME);
    Diagnostic::new(
        code,
        path,
        span,
        format!("env spec `{name}` does not exist in project `{project}`"),
    )
    .with_help(format!(
        "name an env spec of this project, or have an operator define it: `{upsert}` \
         (`{EXAMPLE_AGENT_TYPE}` and `{EXAMPLE_RUNTIME}` are examples: name the runtime's)"
    ))
}
