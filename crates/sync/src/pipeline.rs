//! `sync`: discover → validate → package → plan → (apply) → report.

use futures_util::{StreamExt as _, TryStreamExt as _};
use std::collections::BTreeMap;

use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::{Validation, diagnostic, validate_repository};
use astrolift_package::PayloadTree;
use astrolift_store::state::{ChangeSet, SkillSource, SyncedCommit, SyncedCommitUpdate};

use crate::SyncError;
use crate::configs::{ConfigContext, apply_configs, plan_configs};
use crate::drift::snapshot_drift;
use crate::env_specs::{check_env_specs, check_workflow_env_specs};
use crate::locking::{RelockSources, Relocked, relock};
use crate::order::Order;
use crate::package_step::{Packaging, Prepared, package, prepare, stored_outputs};
use crate::plan::{Plan, PlanContext, PlanStatus, plan};
use crate::previews::record_previews;
use crate::report::{LayerRequest, Report, ReportCounts};
use crate::request::{Stores, SyncRequest, read_snapshot};
use crate::scope::Scope;
use crate::skills::{SkillContext, resolve_skills};
use crate::trigger_changes::changed_bindings;
use crate::upload::{StoredVersion, artifacts_for, dependency_file_refs, upload_version};
use crate::workflows::{WorkflowContext, apply_workflows, plan_workflows};
use crate::workspaces::{WorkspaceContext, apply_workspaces, plan_workspaces};

/// Runs the pipeline on `tree`. `progress(done, total)` is called after each agent is packaged.
///
/// Agent problems are diagnostics in the report; `Err` means the pipeline
/// itself failed (a store unreachable, a concurrent write): nothing partial
/// is registered, and running the same request again converges.
pub async fn sync(
    tree: &dyn PayloadTree,
    request: &SyncRequest,
    stores: &Stores,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Report, SyncError> {
    let applying = request.mode.applies();
    let scope = Scope::read(&request.mode, &request.repository, stores.state.as_ref()).await?;
    let registered = stores.state.list_agents(&request.repository).await?;
    // A check of an unregistered repository plans as if it registered every manifest, under
    // the project of its agents registered earlier (if any).
    let fallback = registered
        .first()
        .map_or(String::new(), |a| a.project_id.clone());
    let project_of = |manifest: &str| {
        scope
            .project_of(manifest)
            .or_else(|| scope.is_unregistered_check().then(|| fallback.clone()))
    };
    let mut validation = validate_repository(tree, &request.validate);
    if let Some(samples) = &request.samples {
        let found = samples.check(tree, &validation.agents).await;
        if !found.is_empty() {
            validation.diagnostics.extend(found);
            diagnostic::sort(&mut validation.diagnostics);
        }
    }
    let projects: Vec<Option<String>> = validation
        .agents
        .iter()
        .map(|m| project_of(&m.manifest).filter(|p| !p.is_empty()))
        .collect();
    let relocked = relock_for(&validation, &projects, request, stores).await?;
    let (mut prepared, skill_sources) =
        resolve_and_prepare(validation, projects, tree, request, stores).await?;
    let mut found_workflows = std::mem::take(&mut prepared.workflows);
    let workspace_paths = std::mem::take(&mut prepared.workspace_manifests);
    check_env_specs(&mut prepared, tree, stores.state.as_ref(), request, &scope).await?;
    let workflow_errors = check_workflow_env_specs(
        &mut found_workflows,
        tree,
        stores.state.as_ref(),
        request,
        &scope,
    )
    .await?;
    let stored = stored_outputs(stores, &prepared, &registered).await;
    let spools = applying || request.previews.is_some();
    let packaging = package(prepared, stored, tree, spools, progress)?;
    let bindings = stores
        .state
        .list_repository_trigger_bindings(&request.repository)
        .await?;
    let context = PlanContext {
        repository: &request.repository,
        project_of: &project_of,
        commit: &request.commit,
        now: request.now,
        bindings: &bindings,
    };
    let mut planned = plan(&packaging.candidates, &registered, &context);
    add_drift(&mut planned, &packaging, stores).await;
    let diagnostics = packaging.diagnostics.iter().cloned().chain(workflow_errors);
    let mut report = new_report(request, &planned, diagnostics.collect());
    if !applying {
        report.trigger_changes = changed_bindings(&packaging.candidates, &bindings);
    }
    report.skill_sources = skill_sources;
    report.relocked = relocked;
    report.uncovered = scope.uncovered(
        &request.repository,
        request.git_ref.as_deref(),
        packaging
            .candidates
            .iter()
            .map(|c| c.manifest.manifest.as_str()),
    );
    let registered_workflows = stores
        .state
        .workflows()
        .list_workflows(&request.repository)
        .await?;
    let workflow_plan = plan_workflows(
        &found_workflows,
        &registered_workflows,
        WorkflowContext {
            repository: &request.repository,
            commit: &request.commit,
            now: request.now,
        },
    )?;
    report.workflows = workflow_plan.entries;
    let registers = |path: &str| applying && scope.project_of(path).is_some();
    let workspace_context = WorkspaceContext {
        repository: &request.repository,
        commit: &request.commit,
        now: request.now,
        limits: &request.validate.limits,
        registers: &registers,
    };
    let workspace_plan = plan_workspaces(
        tree,
        &workspace_paths,
        stores.state.as_ref(),
        stores.blobs.as_ref(),
        &workspace_context,
    )
    .await?;
    report.workspaces = workspace_plan.environments.clone();
    let config_context = ConfigContext {
        repository: &request.repository,
        commit: &request.commit,
        now: request.now,
        limits: &request.validate.limits,
        applying,
    };
    let config_paths = &request.validate.config_paths;
    let config_plan = plan_configs(
        tree,
        config_paths,
        stores.state.as_ref(),
        &scope,
        &config_context,
    )
    .await?;
    report.configs = config_plan.entries.clone();
    report
        .diagnostics
        .extend(config_plan.diagnostics.iter().cloned());
    if let Some(previews) = &request.previews {
        let recorded = record_previews(
            request,
            previews,
            stores.state.as_ref(),
            stores.blobs.as_ref(),
            tree,
            &packaging,
        )
        .await?;
        report.previews = Some(recorded.report);
        report.layer_needs.extend(recorded.layer_needs);
        report.counts.blob_puts += recorded.blob_puts;
        report.counts.state_writes += recorded.state_writes;
    }
    if applying {
        apply(request, stores, tree, &packaging, planned, &mut report).await?;
        if report.applied && report.skipped.is_none() {
            let needs = layer_needs(request, &packaging, &|path| scope.project_of(path));
            report.layer_needs.extend(needs);
        }
        // Agents first: a workflow names agents (see `crate::workflows`).
        if report.applied && report.skipped.is_none() {
            report.counts.state_writes +=
                apply_workflows(stores.state.as_ref(), &workflow_plan.writes).await?;
            let (puts, writes) = apply_workspaces(
                &workspace_plan,
                stores.state.as_ref(),
                stores.blobs.as_ref(),
            )
            .await?;
            report.counts.blob_puts += puts;
            report.counts.state_writes += writes;
            let (puts, writes) = apply_configs(
                &config_plan,
                tree,
                stores.state.as_ref(),
                stores.blobs.as_ref(),
            )
            .await?;
            report.counts.blob_puts += puts;
            report.counts.state_writes += writes;
        }
    }
    report.recount();
    Ok(report)
}

/// Resolves the remote skills of every agent of `validation` (under `projects`, the project
/// each registers under, parallel to the agents; the findings join the validation's
/// diagnostics, so an error fails its agent), then slices and hashes each clean agent with
/// its skills mounted.
async fn resolve_and_prepare(
    mut validation: Validation,
    projects: Vec<Option<String>>,
    tree: &dyn PayloadTree,
    request: &SyncRequest,
    stores: &Stores,
) -> Result<(Prepared, BTreeMap<String, Vec<SkillSource>>), SyncError> {
    let agents: Vec<(&AgentManifest, Option<String>)> =
        validation.agents.iter().zip(projects).collect();
    let paths = agents.iter().map(|(m, _)| m.manifest.clone());
    let context = SkillContext {
        state: stores.state.skills(),
        fetcher: request.skills.as_deref(),
        limits: &request.validate.limits,
        no_project: crate::skills::NO_PROJECT,
        lock: validation.lock.as_ref(),
    };
    let mut found = Vec::new();
    let (skills, named) = resolve_skills(&agents, &context, &mut found).await?;
    let named = paths
        .zip(named)
        .filter(|(_, sources)| !sources.is_empty())
        .map(|(path, sources)| (path, sources.into_iter().collect()))
        .collect();
    validation.diagnostics.extend(found);
    let prepared = prepare(validation, skills, tree, &request.validate.limits);
    Ok((prepared, named))
}

fn new_report(
    request: &SyncRequest,
    planned: &Plan,
    mut diagnostics: Vec<astrolift_manifest::Diagnostic>,
) -> Report {
    diagnostic::sort(&mut diagnostics);
    Report {
        repository: request.repository.clone(),
        commit: request.commit.clone(),
        git_ref: request.git_ref.clone(),
        mode: request.mode.clone(),
        applied: false,
        skipped: None,
        plan: planned.entries.clone(),
        uncovered: Vec::new(),
        workflows: Vec::new(),
        workspaces: Vec::new(),
        configs: Vec::new(),
        diagnostics,
        counts: ReportCounts::default(),
        skill_sources: BTreeMap::new(),
        layer_needs: Vec::new(),
        previews: None,
        trigger_changes: Vec::new(),
        relocked: None,
    }
}

/// Fills the drift of changed agents: their registered snapshot (from the
/// blob store, `stores.concurrency` reads at once) against the one just built. A
/// registered snapshot that cannot be read leaves that drift empty: drift is
/// information, never a reason to fail a sync.
async fn add_drift(planned: &mut Plan, packaging: &Packaging, stores: &Stores) {
    let blobs = stores.blobs.as_ref();
    let reads: Vec<_> = planned
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.status == PlanStatus::Changed)
        .filter_map(|(index, e)| Some((index, e.previous_snapshot.clone()?, &e.manifest)))
        .map(|(index, old, manifest)| async move {
            let new = artifacts_for(packaging, manifest).and_then(|(_, a)| {
                serde_json::from_slice::<serde_json::Value>(&a.snapshot_json).ok()
            });
            let old = read_snapshot::<serde_json::Value>(blobs, &old).await;
            (
                index,
                old.zip(new).map(|(old, new)| snapshot_drift(&old, &new)),
            )
        })
        .collect();
    let drifts: Vec<_> = futures_util::stream::iter(reads)
        .buffer_unordered(stores.concurrency.get())
        .collect()
        .await;
    for (index, drift) in drifts {
        if let (Some(entry), Some(drift)) = (planned.entries.get_mut(index), drift) {
            entry.drift = drift;
        }
    }
}

/// Uploads new blobs, then writes state in one conditional change set.
async fn apply(
    request: &SyncRequest,
    stores: &Stores,
    tree: &dyn PayloadTree,
    packaging: &Packaging,
    planned: Plan,
    report: &mut Report,
) -> Result<(), SyncError> {
    let git_ref = request.git_ref.as_deref().ok_or(SyncError::NoRef)?;
    let synced = stores
        .state
        .get_synced_commit(&request.repository, git_ref)
        .await?;
    if let Some(newer) = synced.as_ref()
        && is_ancestor_of_registered(newer, request).await?
    {
        report.skipped = Some(format!(
            "commit {} is an ancestor of {}, already registered for {git_ref}; nothing was written",
            short(&request.commit),
            short(&newer.commit)
        ));
        return Ok(());
    }
    let uploads = upload_artifacts(stores, tree, packaging, &planned).await?;
    let mut changes = ChangeSet::new(&request.repository);
    changes.agents = planned.changes;
    if synced.as_ref().is_none_or(|s| s.commit != request.commit) {
        changes.synced = Some(SyncedCommitUpdate {
            commit: SyncedCommit {
                repository: request.repository.clone(),
                ref_name: git_ref.to_owned(),
                commit: request.commit.clone(),
                commit_time: request.commit_time,
                synced_at: request.now,
            },
            expected_previous: synced.map(|s| s.commit),
        });
    }
    let written = if changes.is_empty() {
        0
    } else {
        stores.state.apply(changes).await?.items_written
    };
    report.applied = true;
    report.counts.blob_puts += uploads;
    report.counts.state_writes += written;
    Ok(())
}

/// Ordering rule: a sync never overwrites state written from a newer commit,
/// decided by ancestry (see [`crate::order`]). Only a pushed commit that is
/// an ancestor of the registered one is refused: the same commit is a re-run,
/// a push whose `before` is the registered commit is a fast-forward (no call),
/// a diverged commit is a force push, and without an oracle the push applies.
async fn is_ancestor_of_registered(
    synced: &SyncedCommit,
    request: &SyncRequest,
) -> Result<bool, SyncError> {
    if synced.commit == request.commit || request.before.as_deref() == Some(&synced.commit) {
        return Ok(false);
    }
    let Some(order) = &request.order else {
        return Ok(false);
    };
    let order = order.compare(&synced.commit, &request.commit).await?;
    Ok(order == Order::Older)
}

/// Uploads the archive and then the snapshot of every agent whose change
/// points at a new snapshot, [`Stores::concurrency`] agents at once (each upload is a
/// round trip, so a push of many agents is not as many round trips in a row). All
/// of them are stored before this returns, so before any state record names one.
/// Put-if-absent: existing objects are skipped.
async fn upload_artifacts(
    stores: &Stores,
    tree: &dyn PayloadTree,
    packaging: &Packaging,
    planned: &Plan,
) -> Result<u64, SyncError> {
    let uploads = planned.changes.iter().map(|change| {
        let agent = &change.agent;
        let stored = StoredVersion {
            snapshot_hash: &agent.snapshot_hash,
            payload_digest: &agent.payload_digest,
        };
        upload_version(
            stores.blobs.as_ref(),
            tree,
            packaging,
            &agent.manifest_path,
            stored,
        )
    });
    let puts: Vec<u64> = futures_util::stream::iter(uploads)
        .buffer_unordered(stores.concurrency.get())
        .try_collect()
        .await?;
    Ok(puts.iter().sum())
}

/// The registered (enabled, covered) agents whose packages need dependency layers.
fn layer_needs(
    request: &SyncRequest,
    packaging: &Packaging,
    project_of: &dyn Fn(&str) -> Option<String>,
) -> Vec<LayerRequest> {
    packaging
        .candidates
        .iter()
        .filter(|candidate| candidate.manifest.enabled)
        .filter_map(|candidate| {
            let packaged = candidate.packaged.as_ref()?;
            let need = packaged.layers.as_ref()?;
            let manifest = &candidate.manifest;
            Some(LayerRequest {
                repository: request.repository.clone(),
                manifest_path: manifest.manifest.clone(),
                name: manifest.name.clone(),
                project_id: project_of(&manifest.manifest)?,
                artifact_ref: packaged.payload_digest.clone(),
                layer_key: need.layer_key.clone(),
                dependency_files: dependency_file_refs(need),
            })
        })
        .collect()
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// The moved lock of a sync that asks for one ([`crate::SyncRequest::relock`]), when the
/// repository's lock pins a reference the update moves and a fetcher can resolve them.
async fn relock_for(
    validation: &Validation,
    projects: &[Option<String>],
    request: &SyncRequest,
    stores: &Stores,
) -> Result<Option<Relocked>, SyncError> {
    let (Some(update), Some(lock), Some(fetcher)) =
        (&request.relock, &validation.lock, request.skills.as_deref())
    else {
        return Ok(None);
    };
    if !lock.entries.values().any(|entry| update.moves(entry)) {
        return Ok(None);
    }
    let agents: Vec<(&AgentManifest, Option<String>)> = validation
        .agents
        .iter()
        .zip(projects.iter().cloned())
        .collect();
    let sources = RelockSources {
        state: stores.state.skills(),
        fetcher,
        limits: &request.validate.limits,
        no_project: crate::skills::NO_PROJECT,
    };
    Ok(Some(relock(&agents, Some(lock), update, &sources).await?))
}
