//! Config manifests packaged on sync (docs/reference.md §13 and
//! §5.3).
//!
//! An env spec may name a config manifest (`--config-repo R --manifest-path
//! P`). A sync of R assembles each P that an env spec names
//! ([`astrolift_manifest::config`]; the validation step already reported
//! its diagnostics, since the caller lists these paths in
//! `ValidateOptions::config_paths`) and bundles it
//! ([`astrolift_package::bundle_config`]): the document plus every requested
//! file, hashed, scripts and binaries with mode 0755.
//!
//! On apply, a bundle is *registered* when a registration this sync applies
//! covers P under the project of an env spec that names it (the env spec's
//! project must own the config repository's registration: no project can
//! have another tenant's files packaged for it). Registering uploads every
//! file (`configs/files/sha256/<hex>`, put-if-absent, streamed from a temp
//! file and re-hashed on the way), then the bundle JSON
//! (`configs/sha256/<hex>.json`), then writes the [`ConfigPackage`] record,
//! conditional on the version it was planned against. A config with errors
//! registers nothing and keeps the last good bundle.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use astrolift_manifest::config::{ConfigOptions, load_config_with};
use astrolift_manifest::{Diagnostic, Limits};
use astrolift_package::{ConfigBundle, PayloadTree, bundle_config};
use astrolift_store::StateStore;
use astrolift_store::blob::{BlobBody, BlobKey, BlobStore, CONTENT_TYPE_JSON, PutOutcome};
use astrolift_store::state::{ConfigPackage, UnixSeconds};
use sha2::{Digest, Sha256};

use crate::SyncError;
use crate::scope::Scope;

/// Content type of a config file blob: bytes, whatever they are.
const CONTENT_TYPE_BYTES: &str = "application/octet-stream";

/// The config manifests that env specs name in `repository`, each once, sorted: what a
/// sync of it validates (`ValidateOptions::config_paths`) and bundles.
pub async fn config_paths(
    state: &dyn StateStore,
    repository: &str,
) -> Result<Vec<String>, SyncError> {
    let specs = state.list_env_specs().await?;
    let mut paths: Vec<String> = specs
        .iter()
        .filter_map(|spec| spec.config_manifest())
        .filter(|(repo, _)| *repo == repository)
        .map(|(_, path)| path.to_owned())
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

pub use crate::report::{ConfigPlanEntry, ConfigStatus};

/// The configs' entries and what an apply writes.
#[derive(Debug, Default)]
pub(crate) struct ConfigPlan {
    pub entries: Vec<ConfigPlanEntry>,
    pub diagnostics: Vec<Diagnostic>,
    writes: Vec<ConfigWrite>,
}

#[derive(Debug)]
struct ConfigWrite {
    bundle: ConfigBundle,
    record: ConfigPackage,
    expected: Option<u64>,
}

/// What a config plan needs to know of its sync.
pub(crate) struct ConfigContext<'a> {
    pub repository: &'a str,
    pub commit: &'a str,
    pub now: UnixSeconds,
    pub limits: &'a Limits,
    pub applying: bool,
}

/// Assembles and bundles each of `paths` and compares it with its registered bundle.
pub(crate) async fn plan_configs(
    tree: &dyn PayloadTree,
    paths: &[String],
    state: &dyn StateStore,
    scope: &Scope,
    context: &ConfigContext<'_>,
) -> Result<ConfigPlan, SyncError> {
    let mut plan = ConfigPlan::default();
    if paths.is_empty() {
        return Ok(plan);
    }
    let projects = spec_projects(state, context.repository).await?;
    for path in paths {
        let Some(bundle) = bundle_of(tree, path, context.limits, &mut plan.diagnostics) else {
            plan.entries.push(entry(path, None, ConfigStatus::Failed));
            continue;
        };
        // Once: the bundle's canonical JSON is as large as the assembled document.
        let hash = bundle.digest();
        let registers = context.applying
            && scope
                .project_of(path)
                .is_some_and(|project| projects.get(path).is_some_and(|p| p.contains(&project)));
        if !registers {
            plan.entries
                .push(entry(path, Some((&bundle, &hash)), ConfigStatus::Checked));
            continue;
        }
        let stored = state
            .config_packages()
            .get_config_package(context.repository, path)
            .await?;
        if stored.as_ref().is_some_and(|s| s.bundle_hash == hash) {
            plan.entries
                .push(entry(path, Some((&bundle, &hash)), ConfigStatus::Unchanged));
            continue;
        }
        plan.entries.push(entry(
            path,
            Some((&bundle, &hash)),
            ConfigStatus::Registered,
        ));
        let expected = stored.as_ref().map(|s| s.version);
        let record = ConfigPackage {
            repository: context.repository.to_owned(),
            manifest_path: path.clone(),
            bundle_hash: hash,
            commit: context.commit.to_owned(),
            updated_at: context.now,
            version: expected.map_or(1, |v| v + 1),
        };
        plan.writes.push(ConfigWrite {
            bundle,
            record,
            expected,
        });
    }
    Ok(plan)
}

/// The projects of the env specs that name each config manifest of `repository`.
async fn spec_projects(
    state: &dyn StateStore,
    repository: &str,
) -> Result<BTreeMap<String, Vec<String>>, SyncError> {
    let mut projects: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for spec in state.list_env_specs().await? {
        let (Some((repo, path)), Some(project)) = (spec.config_manifest(), &spec.project_id) else {
            continue;
        };
        if repo == repository {
            projects
                .entry(path.to_owned())
                .or_default()
                .push(project.clone());
        }
    }
    Ok(projects)
}

/// The bundle of the config at `path`, or `None` when it has errors. The assembly's
/// diagnostics were reported by validation; the bundle's own (a symlink, a size over the
/// limit) are added to `diagnostics`.
fn bundle_of(
    tree: &dyn PayloadTree,
    path: &str,
    limits: &Limits,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<ConfigBundle> {
    let options = ConfigOptions {
        limits: *limits,
        blob_store: true,
    };
    let assembled = load_config_with(tree, path, &options);
    if assembled.has_errors() {
        return None;
    }
    bundle_config(tree, path, &assembled.document, limits)
        .map_err(|found| diagnostics.extend(found))
        .ok()
}

/// The entry of `path`, with its bundle and the bundle's hash when it has one.
fn entry(
    path: &str,
    bundle: Option<(&ConfigBundle, &str)>,
    status: ConfigStatus,
) -> ConfigPlanEntry {
    ConfigPlanEntry {
        manifest_path: path.to_owned(),
        bundle: bundle.map(|(_, hash)| hash.to_owned()),
        status,
        files: bundle.map_or(0, |(b, _)| b.files.len()),
    }
}

/// Uploads each new bundle's files and JSON, then writes its record; returns (blob puts,
/// state writes).
pub(crate) async fn apply_configs(
    plan: &ConfigPlan,
    tree: &dyn PayloadTree,
    state: &dyn StateStore,
    blobs: &dyn BlobStore,
) -> Result<(u64, u64), SyncError> {
    let mut puts = 0;
    for write in &plan.writes {
        for file in &write.bundle.files {
            let key = BlobKey::config_file(&file.digest)?;
            if blobs.exists(&key).await? {
                continue;
            }
            let spool = spool_checked(tree, &file.path, &file.digest)?;
            let body = BlobBody::File(spool.to_path_buf());
            let outcome = blobs.put_if_absent(&key, body, CONTENT_TYPE_BYTES).await?;
            puts += u64::from(outcome == PutOutcome::Created);
        }
        let key = BlobKey::config_bundle(&write.record.bundle_hash)?;
        let body = BlobBody::Bytes(write.bundle.canonical_json());
        let outcome = blobs.put_if_absent(&key, body, CONTENT_TYPE_JSON).await?;
        puts += u64::from(outcome == PutOutcome::Created);
    }
    for write in &plan.writes {
        state
            .config_packages()
            .put_config_package(&write.record, write.expected)
            .await?;
    }
    Ok((puts, plan.writes.len() as u64))
}

/// Copies the file at `path` to a temp file, checking that its bytes are the ones
/// bundled (`digest`): a local tree may change between bundling and upload.
fn spool_checked(
    tree: &dyn PayloadTree,
    path: &str,
    digest: &str,
) -> Result<tempfile::TempPath, SyncError> {
    let mut reader = tree
        .open_file(path)
        .map_err(|error| SyncError::Spool(std::io::Error::other(format!("{path}: {error}"))))?;
    let mut spool = tempfile::NamedTempFile::new().map_err(SyncError::Spool)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut buffer).map_err(SyncError::Spool)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        spool.write_all(&buffer[..n]).map_err(SyncError::Spool)?;
    }
    let read = format!("sha256:{}", hex::encode(hasher.finalize()));
    if read != digest {
        return Err(SyncError::Spool(std::io::Error::other(format!(
            "{path} changed while its config was packaged"
        ))));
    }
    Ok(spool.into_temp_path())
}
