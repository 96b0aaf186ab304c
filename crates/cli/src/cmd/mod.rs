//! One module per subcommand. Each has an `Args` (clap derive) and a
//! `run(Args) -> anyhow::Result<ExitCode>`; an `Err` is reported by `main`
//! and exits [`EXIT_FAILURE`].

pub mod assemble;
pub mod check;
pub mod dispatches;
pub mod drift;
mod fix;
pub mod import;
pub mod jobs;
pub mod layers;
pub mod lock;
pub mod package;
pub mod reconcile;
pub mod registry;
pub mod render;
pub mod replay;
pub mod serve;
mod serve_limits;
pub mod skill_sources;
pub mod stores;
pub mod suggest;
pub mod triggers;
pub mod validate;
pub mod workflows;

use std::path::{Component, Path};

use anyhow::{Context, bail};
use astrolift_manifest::{Diagnostic, DirTree, Limits};

/// Findings with at least one error.
pub const EXIT_FINDINGS: u8 = 1;
/// Usage or I/O failure.
pub const EXIT_FAILURE: u8 = 2;

/// The ref `--ref` names when it is not given (`check`, `register-repo`, `catalogue register`).
pub const DEFAULT_REF: &str = "main";

/// Lists a repository directory under `limits`.
pub fn open_dir(dir: &Path, limits: &Limits) -> anyhow::Result<DirTree> {
    if !dir.is_dir() {
        bail!("{}: not a directory", dir.display());
    }
    DirTree::open(dir, limits.tarball_files)
        .with_context(|| format!("cannot list {}", dir.display()))
}

/// The working copy `dir` and its validation under the default limits, without config
/// manifests (`trigger test`, `triggers replay`).
pub fn validate_working_copy(
    dir: &Path,
) -> anyhow::Result<(DirTree, astrolift_manifest::Validation)> {
    let limits = Limits::DEFAULT;
    let tree = open_dir(dir, &limits)?;
    let options = astrolift_manifest::ValidateOptions {
        limits,
        ..Default::default()
    };
    let validation = astrolift_manifest::validate_repository(&tree, &options);
    Ok((tree, validation))
}

/// The validation options of a command on `dir`: `limits`, and each
/// `--config` path made repo-relative.
pub fn validate_options(
    dir: &Path,
    configs: &[std::path::PathBuf],
    limits: Limits,
) -> anyhow::Result<astrolift_manifest::ValidateOptions> {
    let config_paths = configs
        .iter()
        .map(|path| repo_relative(dir, path))
        .collect::<anyhow::Result<_>>()?;
    Ok(astrolift_manifest::ValidateOptions {
        limits,
        config_paths,
    })
}

/// One line per diagnostic on stderr, for commands whose stdout is a document.
pub fn print_diagnostics(diagnostics: &[Diagnostic]) {
    for d in diagnostics {
        eprintln!(
            "{}[{}]: {}:{}:{}: {}",
            d.severity, d.code, d.path, d.span.line, d.span.column, d.message
        );
    }
}

/// A path given on the command line as a repo-relative POSIX path: relative
/// paths are taken relative to `dir`, and a path that already starts with
/// `dir` is accepted too. Anything leaving `dir` is refused.
pub fn repo_relative(dir: &Path, path: &Path) -> anyhow::Result<String> {
    let relative = path
        .strip_prefix(dir)
        .ok()
        .filter(|_| dir != Path::new("."))
        .unwrap_or(path);
    let mut parts = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(
                part.to_str()
                    .with_context(|| format!("{}: not valid UTF-8", path.display()))?,
            ),
            Component::CurDir => {}
            _ => bail!(
                "{}: must be a path inside {}",
                path.display(),
                dir.display()
            ),
        }
    }
    Ok(parts.join("/"))
}

/// The value parser of every `--project-id`: refused (exit 2) unless it can scope its
/// secrets' names (`astrolift_trigger::secrets::valid_project_id`, docs/reference.md §15).
pub fn project_id(value: &str) -> Result<String, String> {
    if astrolift_trigger::secrets::valid_project_id(value) {
        Ok(value.to_owned())
    } else {
        Err(
            "a project id is 1-128 of A-Z, a-z, 0-9 and `_+=.@-` (not `.` or `..`): \
             it names the project's secrets"
                .to_owned(),
        )
    }
}

/// The value parser of a count that must be at least 1 (`serve --syncs`, `--connections`):
/// 0 is refused as a usage error (exit 2) that says so.
pub fn at_least_one(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(count) => Ok(count),
        Err(error) => Err(error.to_string()),
    }
}
