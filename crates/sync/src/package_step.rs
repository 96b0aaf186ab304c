//! Validation and packaging of every discovered agent (CPU and local disk only).

use std::io::{BufWriter, Write};

use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::{Diagnostic, Limits, ValidateOptions, validate_repository};
use astrolift_package::PayloadTree;
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
    let failing = validation.agents_with_errors();
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
    let (result, archive) = if keep_archive {
        let mut spool = tempfile::NamedTempFile::new().map_err(SyncError::Spool)?;
        let result = {
            let mut writer = BufWriter::new(spool.as_file_mut());
            let result = astrolift_package::package_agent(manifest, tree, limits, &mut writer);
            writer.flush().map_err(SyncError::Spool)?;
            result
        };
        (result, Some(spool.into_temp_path()))
    } else {
        let result = astrolift_package::package_agent(manifest, tree, limits, std::io::sink());
        (result, None)
    };
    let packaged = match result {
        Ok(packaged) => packaged,
        Err(found) => {
            diagnostics.extend(found);
            return Ok(None);
        }
    };
    let identity = Packaged {
        snapshot_hash: packaged.snapshot.digest(),
        payload_digest: packaged.output.digest.clone(),
    };
    let artifacts = Artifacts {
        archive,
        snapshot_json: packaged.snapshot.canonical_json(),
    };
    Ok(Some((identity, artifacts)))
}
