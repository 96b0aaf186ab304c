//! `astrolift validate --fix [--dry-run]`: apply the fixes diagnostics carry.
//!
//! The choice of fixes and the new texts come from
//! `astrolift_manifest::fix::fix_tree` (pure); this module writes them. Each
//! file is written atomically: a temporary file in the same directory,
//! given the original's permissions, then renamed over it, so a reader sees
//! the old text or the new one, never a part. `--dry-run` writes nothing
//! and prints a unified diff instead.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, bail};
use astrolift_manifest::fix::{Fixed, fix_tree};
use astrolift_manifest::{SourceTree, ValidateOptions, validate_repository};

/// Fixes the tree of `dir` in memory (re-validating until nothing is left
/// to fix); writes nothing.
pub fn plan(tree: &dyn SourceTree, options: &ValidateOptions) -> anyhow::Result<Fixed> {
    let validate = |tree: &dyn SourceTree| validate_repository(tree, options).diagnostics;
    fix_tree(tree, options.limits.manifest_file, validate).context("cannot apply the fixes")
}

/// Writes every changed file of `fixed` under `dir`, each atomically.
pub fn write(dir: &Path, fixed: &Fixed) -> anyhow::Result<()> {
    for (path, changed) in &fixed.files {
        let target = inside(dir, path)?;
        write_atomically(&target, changed.after.as_bytes())
            .with_context(|| format!("cannot write {path}"))?;
    }
    Ok(())
}

/// One line per applied fix, then a count: what `--fix` changed.
pub fn print_applied(fixed: &Fixed, out: &mut dyn Write) -> std::io::Result<()> {
    for applied in &fixed.applied {
        writeln!(
            out,
            "fixed {}:{} [{}]: {}",
            applied.path, applied.line, applied.code, applied.description
        )?;
    }
    writeln!(
        out,
        "{} applied in {}",
        astrolift_cli::render::plural(fixed.applied.len(), "fix"),
        astrolift_cli::render::plural(fixed.files.len(), "file")
    )
}

/// The unified diff of every changed file (`a/` and `b/` prefixes, three
/// lines of context), as `git diff` prints it.
pub fn print_diff(fixed: &Fixed, out: &mut dyn Write) -> std::io::Result<()> {
    for (path, changed) in &fixed.files {
        let diff = similar::TextDiff::from_lines(&changed.before, &changed.after);
        let old = format!("a/{path}");
        let new = format!("b/{path}");
        write!(
            out,
            "{}",
            diff.unified_diff().context_radius(3).header(&old, &new)
        )?;
    }
    Ok(())
}

/// `dir` joined with a repo-relative path from validation, refused if it
/// could leave `dir` (it never does: paths come from listing `dir`).
fn inside(dir: &Path, path: &str) -> anyhow::Result<PathBuf> {
    let relative = Path::new(path);
    if !relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        bail!("{path}: not a path inside the repository");
    }
    Ok(dir.join(relative))
}

/// Writes `bytes` to a temporary file beside `target` and renames it over `target`, so a
/// reader sees the old file or the new one, never a part; an existing file's permissions
/// are kept.
pub(crate) fn write_atomically(target: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let parent = target.parent().unwrap_or(Path::new("."));
    let permissions = std::fs::metadata(target).map(|m| m.permissions()).ok();
    let mut temp = tempfile::NamedTempFile::new_in(parent)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    if let Some(permissions) = permissions {
        std::fs::set_permissions(temp.path(), permissions)?;
    }
    temp.persist(target)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_repository() {
        let dir = Path::new("repo");
        assert!(inside(dir, "a/astrolift.toml").is_ok());
        assert!(inside(dir, "../x").is_err());
        assert!(inside(dir, "/etc/passwd").is_err());
        assert!(inside(dir, "./a").is_err());
    }
}
