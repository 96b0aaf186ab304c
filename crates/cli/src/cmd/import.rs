//! `astrolift import --from agents_md|astrolift_package|langflow|flowise SOURCE --out DIR
//! [--name SLUG] [--image IMAGE_REF] [--mode flatten|federation] [--snapshot PATH]
//! [--format human|json] [--force]`.
//!
//! Reads the source (a file under the import size limit, checked before it
//! is read, or a directory for agents_md), lets `astrolift_import` build
//! the layout, and writes it only when the whole import succeeded: every
//! destination is checked first (an existing file is an error without
//! `--force`), the files go to a temporary directory beside `DIR`, and are
//! then renamed into place. No write follows a symbolic link inside `DIR`: a
//! link where the layout writes is refused, or replaced with `--force`. Bad
//! input exits 2 with nothing written; gaps are printed and exit 0.

use std::fs;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use crate::progress::Progress;
use anyhow::{Context, bail};
use astrolift_cli::render::{self, Report, Style};
use astrolift_import::{Format, Imported, Mode, Options, Source, SourceFile, import};
use astrolift_manifest::{AgentSummary, Counts, MemTree};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum From {
    /// An AGENTS.md file, or a directory of them (root and nested).
    AgentsMd,
    /// An Agent Package archive (.tar.gz); its snapshot with --snapshot.
    AstroliftPackage,
    /// A Langflow flow export (JSON).
    Langflow,
    /// A Flowise chatflow or agentflow export (JSON).
    Flowise,
}

impl From {
    fn format(self) -> Format {
        match self {
            From::AgentsMd => Format::AgentsMd,
            From::AstroliftPackage => Format::AstroliftPackage,
            From::Langflow => Format::Langflow,
            From::Flowise => Format::Flowise,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// One agent; several agents of the source become its skills.
    Flatten,
    /// One agent per agent node, a federation file and a workflow.
    Federation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// One block per gap (as `validate` shows a diagnostic, without the source), then a summary.
    #[default]
    Human,
    /// `{"agents", "diagnostics", "files"}`: the validate document plus the files written.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The source format.
    #[arg(long = "from", value_enum)]
    from: From,

    /// The source: a file, or a directory for agents_md.
    source: PathBuf,

    /// The directory to write the native layout into (created if missing).
    #[arg(long)]
    out: PathBuf,

    /// The agent's name (or, in federation mode, the federation's and workflow's): a slug.
    #[arg(long)]
    name: Option<String>,

    /// The runtime image of the primary container; without it the layout cannot run yet.
    #[arg(long, value_name = "IMAGE_REF")]
    image: Option<String>,

    /// flatten (default for one agent) or federation (default for several).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,

    /// astrolift_package: the package's snapshot JSON, to restore the manifest from.
    #[arg(long, value_name = "PATH")]
    snapshot: Option<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    format: OutputFormat,

    /// Overwrite files that already exist in DIR.
    #[arg(long)]
    force: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = Options {
        name: args.name.clone(),
        image: args.image.clone(),
        mode: args.mode.map(|m| match m {
            ModeArg::Flatten => Mode::Flatten,
            ModeArg::Federation => Mode::Federation,
        }),
        ..Options::default()
    };
    let progress = Progress::spinner(
        &format!("importing {}", args.source.display()),
        args.format == OutputFormat::Human,
    );
    let imported = match read_and_import(&args, &options) {
        Ok(imported) => imported,
        Err(error) => {
            eprintln!("error: {error:#}");
            eprintln!("nothing was written");
            return Ok(super::EXIT_FAILURE.into());
        }
    };
    let written = write_layout(&imported, &args.out, args.force);
    drop(progress);
    if let Err(error) = written {
        eprintln!("error: {error:#}");
        eprintln!("nothing was written");
        return Ok(super::EXIT_FAILURE.into());
    }
    print_report(&imported, &args).context("cannot write the report")?;
    Ok(ExitCode::SUCCESS)
}

fn read_and_import(args: &Args, options: &Options) -> anyhow::Result<Imported> {
    let format = args.from.format();
    let shown = args.source.display().to_string();
    if format == Format::AgentsMd && args.source.is_dir() {
        let tree = super::open_dir(&args.source, &options.limits.package)?;
        let name = dir_name(&args.source)?;
        return Ok(import(
            format,
            Source::Tree {
                name: &name,
                tree: &tree,
            },
            options,
        )?);
    }
    let limit = astrolift_import::source_file_limit(format, &options.limits);
    let bytes = read_bounded(&args.source, limit)?;
    let file = SourceFile {
        path: &shown,
        bytes: &bytes,
    };
    let source = match (&args.snapshot, format) {
        (Some(path), Format::AstroliftPackage) => {
            let snapshot_bytes = read_bounded(path, options.limits.source_bytes)?;
            let snapshot_shown = path.display().to_string();
            let snapshot = SourceFile {
                path: &snapshot_shown,
                bytes: &snapshot_bytes,
            };
            return Ok(import(
                format,
                Source::Package {
                    archive: file,
                    snapshot: Some(snapshot),
                },
                options,
            )?);
        }
        (Some(_), _) => bail!("--snapshot goes with --from astrolift_package"),
        (None, _) => Source::File(file),
    };
    Ok(import(format, source, options)?)
}

/// The directory's own name (of its canonical path, so `.` works).
fn dir_name(dir: &Path) -> anyhow::Result<String> {
    let canonical =
        fs::canonicalize(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    Ok(canonical
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("agent")
        .to_owned())
}

/// A regular file's bytes, refusing one over `limit` before reading it (and
/// reading at most `limit + 1` bytes, should it grow meanwhile).
fn read_bounded(path: &Path, limit: u64) -> anyhow::Result<Vec<u8>> {
    let file = fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !metadata.is_file() {
        bail!("{}: not a regular file", path.display());
    }
    if metadata.len() > limit {
        bail!(
            "{}: {} bytes, over the {limit}-byte limit for an import source",
            path.display(),
            metadata.len()
        );
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > limit {
        bail!(
            "{}: grew over the {limit}-byte limit while read",
            path.display()
        );
    }
    Ok(bytes)
}

/// Checks every destination, writes the files into a temporary directory
/// beside `out`, then renames them into place.
fn write_layout(imported: &Imported, out: &Path, force: bool) -> anyhow::Result<()> {
    for path in imported.files.keys() {
        check_way(out, &safe_relative(path)?, force)?;
    }
    if out.exists() && !out.is_dir() {
        bail!("{}: exists and is not a directory", out.display());
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".astrolift-import-")
        .tempdir_in(&parent)
        .with_context(|| {
            format!(
                "cannot create a temporary directory in {}",
                parent.display()
            )
        })?;
    for (path, file) in &imported.files {
        let target = staging.path().join(safe_relative(path)?);
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        fs::write(&target, &file.bytes)
            .with_context(|| format!("cannot write {}", target.display()))?;
        set_executable(&target, file.executable)?;
    }
    if !out.exists() {
        // The whole layout appears at once.
        let staged = staging.keep();
        return fs::rename(&staged, out)
            .with_context(|| format!("cannot create {}", out.display()));
    }
    for path in imported.files.keys() {
        let relative = safe_relative(path)?;
        make_way(out, &relative)?;
        let destination = out.join(&relative);
        // `rename` replaces a symbolic link at the destination; it never follows it.
        fs::rename(staging.path().join(&relative), &destination)
            .with_context(|| format!("cannot write {}", destination.display()))?;
    }
    Ok(())
}

/// Refuses a destination under `out` that the import must not write: a directory
/// on the way that is a symbolic link (unless `force`, which replaces the link) or
/// not a directory; a destination that is a directory, or a file or link (unless
/// `force`). Nothing is followed: a link inside `--out` never leads a write elsewhere.
fn check_way(out: &Path, relative: &Path, force: bool) -> anyhow::Result<()> {
    let mut at = out.to_path_buf();
    let mut components = relative.components().peekable();
    while let Some(component) = components.next() {
        at.push(component);
        let metadata = match fs::symlink_metadata(&at) {
            Ok(metadata) => metadata,
            // Nothing below a missing directory exists either.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read {}", at.display()));
            }
        };
        let last = components.peek().is_none();
        if metadata.file_type().is_symlink() {
            if !force {
                bail!(
                    "{}: a symbolic link where the import writes (pass --force to replace the link)",
                    at.display()
                );
            }
            return Ok(());
        }
        if last && metadata.is_dir() {
            bail!("{}: exists and is not a regular file", at.display());
        }
        if last && !force {
            bail!(
                "{}: already exists (pass --force to overwrite)",
                at.display()
            );
        }
        if !last && !metadata.is_dir() {
            bail!("{}: exists and is not a directory", at.display());
        }
    }
    Ok(())
}

/// Creates the directories on the way to `relative` under `out` one by one, without
/// following a symbolic link: a link found there (which [`check_way`] let through
/// only with `--force`) is removed and replaced by a directory.
fn make_way(out: &Path, relative: &Path) -> anyhow::Result<()> {
    let mut at = out.to_path_buf();
    let Some(parent) = relative.parent() else {
        return Ok(());
    };
    for component in parent.components() {
        at.push(component);
        match fs::symlink_metadata(&at) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                fs::remove_file(&at)
                    .with_context(|| format!("cannot replace the link {}", at.display()))?;
                fs::create_dir(&at).with_context(|| format!("cannot create {}", at.display()))?;
            }
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => bail!("{}: exists and is not a directory", at.display()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir(&at).with_context(|| format!("cannot create {}", at.display()))?;
            }
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read {}", at.display()));
            }
        }
    }
    Ok(())
}

/// A layout path as a relative path with normal components only (the
/// importer never returns anything else; this is the last line of defence).
fn safe_relative(path: &str) -> anyhow::Result<PathBuf> {
    let relative = PathBuf::from(path);
    if path.is_empty()
        || !relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
    {
        bail!("refusing to write `{path}`: not a plain relative path");
    }
    Ok(relative)
}

#[cfg(unix)]
fn set_executable(path: &Path, executable: bool) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of {}", path.display()))
}

#[cfg(not(unix))]
fn set_executable(_path: &Path, _executable: bool) -> anyhow::Result<()> {
    Ok(())
}

fn summaries(imported: &Imported) -> Vec<AgentSummary> {
    let federation = imported.files.contains_key("astrolift.agents.toml");
    imported
        .agents
        .iter()
        .map(|name| AgentSummary {
            name: name.clone(),
            manifest: if federation {
                format!("agents/{name}/astrolift.toml")
            } else {
                "astrolift.toml".to_owned()
            },
            alias: federation.then(|| name.clone()),
            enabled: true,
        })
        .collect()
}

#[derive(Serialize)]
struct JsonReport<'a> {
    agents: &'a [AgentSummary],
    diagnostics: &'a [astrolift_manifest::Diagnostic],
    /// The files written, relative to `out`.
    files: Vec<&'a str>,
    out: String,
}

fn print_report(imported: &Imported, args: &Args) -> std::io::Result<()> {
    let agents = summaries(imported);
    match args.format {
        OutputFormat::Json => {
            let mut out = crate::output::buffered();
            serde_json::to_writer(
                &mut out,
                &JsonReport {
                    agents: &agents,
                    diagnostics: &imported.gaps,
                    files: imported.files.keys().map(String::as_str).collect(),
                    out: args.out.display().to_string(),
                },
            )?;
            writeln!(out)?;
            out.flush()
        }
        OutputFormat::Human => {
            let mut out = crate::output::styled();
            let report = Report {
                agents: &agents,
                diagnostics: &imported.gaps,
            };
            // No source is quoted: a gap about a credential would show its
            // line, and an export's line can hold the secret itself.
            render::render(
                render::Format::Human,
                &report,
                &MemTree::new(),
                Style::Styled,
                &mut out,
            )?;
            let counts = Counts::of(&imported.gaps);
            writeln!(
                out,
                "wrote {} to {} ({} to review)",
                render::plural(imported.files.len(), "file"),
                args.out.display(),
                render::plural(counts.errors + counts.warnings + counts.notices, "gap")
            )?;
            out.flush()
        }
    }
}
