//! Validation and packaging of every discovered agent (CPU and local disk only).

use std::io::{BufWriter, Write};

use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::{Diagnostic, Limits, Severity, ValidateOptions, validate_repository};
use astrolift_package::{PayloadTree, slice, snapshot, write_archive};
use tempfile::TempPath;

use crate::SyncError;
use crate::plan::{Candidate, Packaged};

/// A packaged agent's bytes, kept until they are uploaded.
#[derive(Debug)]
pub(crate) struct Artifacts {
    /// The archive, spooled to a temp file (apply mode only); deleted on drop.
    pub archive: Option<TempPath>,
    /// The canonical snapshot JSON.
    pub snapshot_json: Vec<u8>,
}

/// Every agent, validated and (when clean) packaged, plus every diagnostic.
#[derive(Debug, Default)]
pub(crate) struct Packaging {
    pub candidates: Vec<Candidate>,
    /// Parallel to `candidates`; `None` for failed agents.
    pub artifacts: Vec<Option<Artifacts>>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Validates the tree, then packages each agent that has no error. With
/// `keep_archives`, archives are spooled to temp files for upload; otherwise
/// they are only hashed.
pub(crate) fn validate_and_package(
    tree: &dyn PayloadTree,
    options: &ValidateOptions,
    keep_archives: bool,
    progress: &dyn Fn(usize, usize),
) -> Result<Packaging, SyncError> {
    let validation = validate_repository(tree, options);
    let failing = agents_with_errors(&validation.agents, &validation.diagnostics);
    let mut packaging = Packaging {
        diagnostics: validation.diagnostics,
        ..Packaging::default()
    };
    let total = validation.agents.len();
    for (index, manifest) in validation.agents.into_iter().enumerate() {
        let outcome = if failing[index] {
            None
        } else {
            package_agent(
                &manifest,
                tree,
                &options.limits,
                keep_archives,
                &mut packaging.diagnostics,
            )?
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
    tree: &dyn PayloadTree,
    limits: &Limits,
    keep_archive: bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Option<(Packaged, Artifacts)>, SyncError> {
    let agent_slice = match slice(manifest, tree, limits) {
        Ok(agent_slice) => agent_slice,
        Err(found) => {
            diagnostics.extend(found);
            return Ok(None);
        }
    };
    let (output, archive) = if keep_archive {
        let mut spool = tempfile::NamedTempFile::new().map_err(SyncError::Spool)?;
        let mut writer = BufWriter::new(spool.as_file_mut());
        let written = write_archive(&agent_slice, tree, &mut writer);
        let flushed = writer.flush();
        drop(writer);
        flushed.map_err(SyncError::Spool)?;
        (written, Some(spool.into_temp_path()))
    } else {
        (write_archive(&agent_slice, tree, std::io::sink()), None)
    };
    let output = match output {
        Ok(output) => output,
        Err(error) => {
            diagnostics.push(error.to_diagnostic(&manifest.manifest, &manifest.name));
            return Ok(None);
        }
    };
    let agent_snapshot = match snapshot(manifest, &agent_slice, tree, &output) {
        Ok(agent_snapshot) => agent_snapshot,
        Err(error) => {
            diagnostics.push(error.to_diagnostic(&manifest.manifest, &manifest.name));
            return Ok(None);
        }
    };
    let packaged = Packaged {
        snapshot_hash: agent_snapshot.digest(),
        payload_digest: output.digest.clone(),
    };
    let artifacts = Artifacts {
        archive,
        snapshot_json: agent_snapshot.canonical_json(),
    };
    Ok(Some((packaged, artifacts)))
}

const FEDERATION_FILE: &str = "astrolift.agents.toml";

/// Which agents own an error. A diagnostic belongs to the agent whose
/// manifest directory is the longest prefix of its path (the root agent's
/// directory, "", is a prefix of everything); diagnostics of the federation
/// file or of files outside every agent fail no agent.
fn agents_with_errors(agents: &[AgentManifest], diagnostics: &[Diagnostic]) -> Vec<bool> {
    let mut failing = vec![false; agents.len()];
    for diagnostic in diagnostics.iter().filter(|d| d.severity == Severity::Error) {
        if let Some(owner) = owner_of(agents, &diagnostic.path) {
            failing[owner] = true;
        }
    }
    failing
}

fn owner_of(agents: &[AgentManifest], path: &str) -> Option<usize> {
    if path == FEDERATION_FILE {
        return None;
    }
    agents
        .iter()
        .enumerate()
        .filter(|(_, agent)| agent.manifest == path || is_under(path, &agent.dir))
        .max_by_key(|(_, agent)| (agent.manifest == path, agent.dir.len()))
        .map(|(index, _)| index)
}

fn is_under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}
