//! Validation and packaging of every discovered agent.
//!
//! Three steps, so that an unchanged agent is never archived again:
//! 1. [`prepare`] (CPU and local disk): for each clean agent of a validated
//!    tree, with its resolved remote skills mounted ([`crate::skills`]),
//!    compute its slice and hash its files once, which gives the slice
//!    fingerprint ([`astrolift_package::fingerprint`]).
//! 2. [`stored_outputs`]: take the output of each agent whose registered record
//!    was built from the same fingerprint ([`PackageBuild`]), asking nothing; a
//!    registered record written before records carried it falls back on the
//!    stored [`FingerprintRecord`] of its fingerprint, several at a time.
//! 3. [`package`] (CPU and local disk): snapshot the agents with a record
//!    without building their archive; archive the others (to a temp file
//!    when applying), checking their bytes against the hashes of step 1.
//!
//! A record only says what an archive *is*; whether the archive is stored is
//! checked where it matters, before a state change points at it
//! (`pipeline::upload_artifacts`).

use std::collections::HashMap;
use std::io::{BufWriter, Write};

use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::parallel::map_in_order;
use astrolift_manifest::{Diagnostic, Validation};
use astrolift_package::{
    FINGERPRINT_FORMAT, FingerprintRecord, PackageOutput, PayloadTree, PreparedAgent, preflight,
    prepare_agent_with_remote,
};
use astrolift_store::blob::BlobKey;
use astrolift_store::state::{Agent, PackageBuild};
use futures_util::StreamExt;
use tempfile::TempPath;

use crate::SyncError;
use crate::plan::{Candidate, Packaged};
use crate::request::Stores;
use crate::skills::AgentSkills;

/// Agents one thread slices and hashes before a second thread is worth starting.
const AGENTS_PER_THREAD: usize = 32;

/// A packaged agent's bytes, kept until they are uploaded.
#[derive(Debug)]
pub(crate) struct Artifacts {
    /// The archive, spooled to a temp file (apply mode only, and only when
    /// it was built); deleted on drop.
    pub archive: Option<TempPath>,
    /// The canonical snapshot JSON.
    pub snapshot_json: Vec<u8>,
    /// How the archive's output was learned.
    pub origin: ArchiveOrigin,
    /// Its resolved remote skills: the tree it is packaged from is the
    /// repository's with these mounted ([`AgentSkills::mount`]).
    pub skills: AgentSkills,
}

/// Whether the archive was built by this sync or taken from a stored record.
#[derive(Debug)]
pub(crate) enum ArchiveOrigin {
    /// Built here.
    Built,
    /// From a registered record or a stored [`FingerprintRecord`]; the slice is kept so that the
    /// archive can still be built if the store turns out not to hold it.
    Reused(Box<PreparedAgent>),
    /// An inline package: there is no archive, so nothing to build, upload
    /// or record.
    Inline,
}

/// Every agent, validated and (when clean) packaged, plus every diagnostic.
#[derive(Debug, Default)]
pub(crate) struct Packaging {
    pub candidates: Vec<Candidate>,
    /// Parallel to `candidates`; `None` for failed agents.
    pub artifacts: Vec<Option<Artifacts>>,
    pub diagnostics: Vec<Diagnostic>,
}

/// One validated agent: sliced and hashed when clean, with its remote skills.
#[derive(Debug)]
struct PreparingAgent {
    manifest: AgentManifest,
    prepared: Option<PreparedAgent>,
    skills: AgentSkills,
}

/// Every agent validated, and each clean one sliced and hashed.
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    agents: Vec<PreparingAgent>,
    diagnostics: Vec<Diagnostic>,
    /// The repository's workflows, each with whether it has errors.
    pub workflows: Vec<crate::workflows::FoundWorkflow>,
    /// Repo-relative paths of the discovered workspace manifests.
    pub workspace_manifests: Vec<String>,
}

impl Prepared {
    /// The validated manifests, in discovery order.
    pub(crate) fn manifests(&self) -> impl Iterator<Item = &AgentManifest> {
        self.agents.iter().map(|agent| &agent.manifest)
    }

    /// Fails the agent at `index` with `diagnostics` (errors found after
    /// validation): it is neither packaged nor registered.
    pub(crate) fn fail(&mut self, index: usize, diagnostics: Vec<Diagnostic>) {
        if let Some(agent) = self.agents.get_mut(index) {
            agent.prepared = None;
        }
        self.diagnostics.extend(diagnostics);
    }
}

/// Slices and hashes each agent of `validation` that has no error, with its resolved
/// remote skills (`skills`, parallel to the agents) mounted.
pub(crate) fn prepare(
    validation: Validation,
    skills: Vec<AgentSkills>,
    tree: &dyn PayloadTree,
    limits: &astrolift_manifest::Limits,
) -> Prepared {
    let failing = validation.agents_with_errors();
    let workflows = validation
        .workflows
        .iter()
        .map(|workflow| crate::workflows::FoundWorkflow {
            failed: validation.workflow_has_errors(&workflow.path),
            workflow: workflow.clone(),
        })
        .collect();
    let mut diagnostics = validation.diagnostics;
    // Slicing and hashing are CPU- and read-bound per agent: spread over the cores.
    let skills = skills
        .into_iter()
        .chain(std::iter::repeat_with(AgentSkills::default));
    let work: Vec<(&AgentManifest, bool, AgentSkills)> = validation
        .agents
        .iter()
        .zip(failing.iter().copied())
        .zip(skills)
        .map(|((manifest, failed), skills)| (manifest, failed, skills))
        .collect();
    let outcomes = map_in_order(&work, AGENTS_PER_THREAD, |(manifest, failed, skills)| {
        (!failed).then(|| prepare_agent_with_remote(manifest, &skills.mount(tree), limits))
    });
    let skills: Vec<AgentSkills> = work.into_iter().map(|(_, _, skills)| skills).collect();
    let agents = validation
        .agents
        .into_iter()
        .zip(outcomes)
        .zip(skills)
        .map(|((manifest, outcome), skills)| {
            let prepared =
                outcome.and_then(|result| result.map_err(|found| diagnostics.extend(found)).ok());
            PreparingAgent {
                manifest,
                prepared,
                skills,
            }
        })
        .collect();
    Prepared {
        agents,
        diagnostics,
        workflows,
        workspace_manifests: validation.workspace_manifests,
    }
}

/// The known archive output of each prepared agent, parallel to the agents: from the
/// registered record of the same manifest when it was built from the same fingerprint;
/// from the blob store's fingerprint record only for a registered record that carries no
/// build (one written before records did). An agent not registered, or registered from
/// another slice, has none and is built: nothing is asked for it. A record that is
/// missing, unreadable or does not fit the slice is `None`: this is a cache, never a
/// reason to fail.
pub(crate) async fn stored_outputs(
    stores: &Stores,
    prepared: &Prepared,
    registered: &[Agent],
) -> Vec<Option<PackageOutput>> {
    let blobs = stores.blobs.as_ref();
    let registered: HashMap<&str, &Agent> = registered
        .iter()
        .map(|agent| (agent.manifest_path.as_str(), agent))
        .collect();
    // The lookups are collected into a Vec first rather than mapped lazily: a
    // closure over borrowed agents inside the stream makes the `sync` future
    // fail the higher-ranked `Send` check that `tokio::spawn` (serve) needs.
    let lookups: Vec<_> = prepared
        .agents
        .iter()
        .map(|agent| {
            let record = registered.get(agent.manifest.manifest.as_str()).copied();
            let agent = agent.prepared.as_ref();
            async move {
                let agent = agent.filter(|agent| !agent.slice.inline)?;
                let record = record?;
                let Some(build) = &record.package_build else {
                    let key = BlobKey::package_fingerprint(&agent.fingerprint).ok()?;
                    let bytes = blobs.get(&key).await.ok()?;
                    return FingerprintRecord::output_for(&bytes, &agent.slice);
                };
                let known = FingerprintRecord {
                    format: FINGERPRINT_FORMAT.to_owned(),
                    digest: record.payload_digest.clone(),
                    content_digest: build.content_digest.clone(),
                    size: build.size,
                    files: build.files,
                    uncompressed_size: build.uncompressed_size,
                };
                (build.fingerprint == agent.fingerprint)
                    .then(|| known.fits(&agent.slice))
                    .flatten()
            }
        })
        .collect();
    futures_util::stream::iter(lookups)
        .buffered(stores.concurrency.get())
        .collect()
        .await
}

/// Packages each prepared agent: from its stored output when there is one,
/// else by building the archive. With `keep_archives`, built archives are
/// spooled to temp files for upload; otherwise they are only hashed.
/// `progress(done, total)` is called after each agent.
pub(crate) fn package(
    prepared: Prepared,
    stored: Vec<Option<PackageOutput>>,
    tree: &dyn PayloadTree,
    keep_archives: bool,
    progress: &dyn Fn(usize, usize),
) -> Result<Packaging, SyncError> {
    let mut packaging = Packaging {
        diagnostics: prepared.diagnostics,
        ..Packaging::default()
    };
    let total = prepared.agents.len();
    let stored = stored.into_iter().chain(std::iter::repeat(None));
    for (index, (agent, output)) in prepared.agents.into_iter().zip(stored).enumerate() {
        let PreparingAgent {
            manifest,
            prepared,
            skills,
        } = agent;
        let outcome = match prepared {
            None => None,
            Some(prepared) => package_agent(
                &manifest,
                prepared,
                output,
                (tree, skills),
                keep_archives,
                &mut packaging.diagnostics,
            )?,
        };
        let (packaged, artifacts) = outcome.unzip();
        packaging.candidates.push(Candidate { manifest, packaged });
        packaging.artifacts.push(artifacts);
        progress(index + 1, total);
    }
    Ok(packaging)
}

/// Packages one agent. Problems with the agent's content are diagnostics
/// (`Ok(None)`); failures of this machine (temp files) are errors.
fn package_agent(
    manifest: &AgentManifest,
    agent: PreparedAgent,
    stored: Option<PackageOutput>,
    (base, skills): (&dyn PayloadTree, AgentSkills),
    keep_archive: bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Option<(Packaged, Artifacts)>, SyncError> {
    let mounted = skills.mount(base);
    let tree: &dyn PayloadTree = &mounted;
    let fingerprint = agent.fingerprint.clone();
    let layers = match preflight(&agent.slice, tree, runtime_image(manifest), diagnostics) {
        Ok(need) => need,
        Err(found) => {
            diagnostics.extend(found);
            return Ok(None);
        }
    };
    let (result, archive, origin) = match stored {
        _ if agent.slice.inline => {
            let result = agent.reuse(manifest, tree, PackageOutput::inline());
            (result, None, Some(ArchiveOrigin::Inline))
        }
        Some(output) => {
            let kept = Box::new(agent.clone());
            let result = agent.reuse(manifest, tree, output);
            (result, None, Some(ArchiveOrigin::Reused(kept)))
        }
        None => {
            let (result, archive) = build_archive(manifest, agent, tree, keep_archive)?;
            (result, archive, None)
        }
    };
    let packaged = match result {
        Ok(packaged) => packaged,
        Err(found) => {
            diagnostics.extend(found);
            return Ok(None);
        }
    };
    let origin = origin.unwrap_or(ArchiveOrigin::Built);
    let output = &packaged.output;
    let build = (!output.inline).then(|| PackageBuild {
        fingerprint: fingerprint.clone(),
        content_digest: output.content_digest.clone(),
        size: output.size,
        files: output.files,
        uncompressed_size: output.uncompressed_size,
    });
    let identity = Packaged {
        snapshot_hash: packaged.snapshot.digest(),
        legacy_snapshot_hash: packaged.snapshot.legacy_digest(),
        payload_digest: output.digest.clone(),
        layers,
        build,
    };
    let artifacts = Artifacts {
        archive,
        snapshot_json: packaged.snapshot.canonical_json(),
        origin,
        skills: skills.clone(),
    };
    Ok(Some((identity, artifacts)))
}

/// The primary container's image, which the layer key covers (a layer built for one
/// image may not run on another).
fn runtime_image(manifest: &AgentManifest) -> Option<&str> {
    let workload = manifest.workload.as_ref()?;
    workload
        .containers
        .iter()
        .find(|c| c.is_primary)
        .map(|c| c.image_ref.as_str())
}

type Built = (
    Result<astrolift_package::Packaged, Vec<Diagnostic>>,
    Option<TempPath>,
);

/// Builds the archive: to a temp file with `keep`, else only hashed.
pub(crate) fn build_archive(
    manifest: &AgentManifest,
    agent: PreparedAgent,
    tree: &dyn PayloadTree,
    keep: bool,
) -> Result<Built, SyncError> {
    if !keep {
        return Ok((agent.package(manifest, tree, std::io::sink()), None));
    }
    let mut spool = tempfile::NamedTempFile::new().map_err(SyncError::Spool)?;
    let result = {
        let mut writer = BufWriter::new(spool.as_file_mut());
        let result = agent.package(manifest, tree, &mut writer);
        writer.flush().map_err(SyncError::Spool)?;
        result
    };
    Ok((result, Some(spool.into_temp_path())))
}
