//! `astrolift package DIR|--tarball FILE --manifest PATH [--out FILE] [--max-size BYTES]`
//! and `astrolift package --all DIR [--store URL]` (default: the `--blobs` default).

use crate::progress::Progress;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use astrolift_bot::config::DEFAULT_BLOBS;
use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::{
    Diagnostic, DirTree, Limits, Severity, ValidateOptions, Validation, validate_repository,
};
use astrolift_package::{PayloadTree, SourceTarball, package_agent};
use astrolift_store::{
    BlobBody, BlobKey, PutOutcome, blob::CONTENT_TYPE_TAR_GZ, blob_store_from_url,
};
use serde_json::json;

use super::stores::runtime;
use crate::output::outln;

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["manifest", "all"]))]
pub struct Args {
    /// The repository directory.
    #[arg(required_unless_present = "tarball", conflicts_with = "tarball")]
    dir: Option<PathBuf>,

    /// A GitHub-style repository tarball (`tar.gz` under one `owner-repo-sha/` directory).
    #[arg(long, value_name = "FILE")]
    tarball: Option<PathBuf>,

    /// The agent to package: the repo-relative path of its `astrolift.toml`.
    #[arg(long, value_name = "PATH")]
    manifest: Option<String>,

    /// Where to write the archive. Default: `<agent name>.tar.gz`.
    #[arg(long, value_name = "FILE", conflicts_with = "all")]
    out: Option<PathBuf>,

    /// The uncompressed size limit of one package, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.package_size)]
    max_size: u64,

    /// Package every discovered agent into the blob store `--store`.
    #[arg(long)]
    all: bool,

    /// Blob store for `--all`: `file:DIR` or `s3://BUCKET[/prefix]` (the `--blobs` of
    /// every other command, with its default).
    #[arg(
        long,
        alias = "blobs",
        value_name = "URL",
        env = "ASTROLIFT_BLOBS",
        default_value = DEFAULT_BLOBS
    )]
    store: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let limits = Limits {
        package_size: args.max_size,
        ..Limits::DEFAULT
    };
    let tree = open_tree(&args, &limits)?;
    let validation = validate_repository(
        tree.as_ref(),
        &ValidateOptions {
            limits,
            ..Default::default()
        },
    );
    if args.all {
        return runtime()?.block_on(package_all(
            tree.as_ref(),
            &validation,
            &limits,
            &args.store,
        ));
    }
    let manifest = args.manifest.as_deref().context("--manifest is required")?;
    let Some(index) = validation
        .agents
        .iter()
        .position(|a| a.manifest == manifest)
    else {
        report_errors(&validation.diagnostics);
        bail!("no discovered agent has the manifest {manifest}");
    };
    let agent = &validation.agents[index];
    let errors = validation.errors_of(index);
    if !errors.is_empty() {
        report_errors(&errors);
        return Ok(super::EXIT_FINDINGS.into());
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.tar.gz", agent.name)));
    match package_to_file(agent, tree.as_ref(), &limits, &out)? {
        Ok(summary) => {
            outln!("{summary}")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(diagnostics) => {
            report_errors(&diagnostics);
            Ok(super::EXIT_FINDINGS.into())
        }
    }
}

fn open_tree(args: &Args, limits: &Limits) -> anyhow::Result<Box<dyn PayloadTree>> {
    if let Some(tarball) = &args.tarball {
        let file = std::fs::File::open(tarball)
            .with_context(|| format!("cannot open {}", tarball.display()))?;
        let tree = SourceTarball::read(std::io::BufReader::new(file), limits)
            .with_context(|| format!("{}: rejected", tarball.display()))?;
        return Ok(Box::new(tree));
    }
    let dir = args.dir.as_ref().context("give DIR or --tarball")?;
    let tree = DirTree::open(dir, limits.tarball_files)
        .with_context(|| format!("cannot list {}", dir.display()))?;
    Ok(Box::new(tree))
}

/// Writes the archive next to `out` and renames it into place only when
/// complete, so a failure never leaves a partial archive at `out`.
fn package_to_file(
    agent: &AgentManifest,
    tree: &dyn PayloadTree,
    limits: &Limits,
    out: &Path,
) -> anyhow::Result<Result<serde_json::Value, Vec<Diagnostic>>> {
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut spool = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    let packaged = {
        let mut writer = std::io::BufWriter::new(spool.as_file_mut());
        let packaged = package_agent(agent, tree, limits, &mut writer);
        writer.flush().context("cannot write the archive")?;
        packaged
    };
    let packaged = match packaged {
        Ok(packaged) => packaged,
        Err(diagnostics) => return Ok(Err(diagnostics)),
    };
    let output = &packaged.output;
    if output.inline {
        // No archive to write: the spool file is dropped, `out` untouched.
        return Ok(Ok(
            json!({"digest": output.digest, "size": 0, "files": 0, "inline": true}),
        ));
    }
    spool
        .persist(out)
        .with_context(|| format!("cannot write {}", out.display()))?;
    Ok(Ok(
        json!({"digest": output.digest, "content_digest": output.content_digest,
               "size": output.size, "files": output.files}),
    ))
}

/// `--all`: every clean agent into the blob store, content-addressed.
async fn package_all(
    tree: &dyn PayloadTree,
    validation: &Validation,
    limits: &Limits,
    store_url: &str,
) -> anyhow::Result<ExitCode> {
    let store = blob_store_from_url(store_url)
        .await
        .with_context(|| format!("cannot open {store_url}"))?;
    let spool_dir = tempfile::tempdir().context("cannot create a temp dir")?;
    let mut failed = false;
    let mut out = crate::output::stdout();
    // `package` has no --format: its lines are for programs on stdout, its progress for
    // a person watching stderr.
    let progress = Progress::bar("packaging", "agents", true);
    let total = validation.agents.len();
    for (index, agent) in validation.agents.iter().enumerate() {
        progress.set(index, total);
        let errors = validation.errors_of(index);
        let path = spool_dir.path().join("archive.tar.gz");
        let result = if errors.is_empty() {
            package_to_file(agent, tree, limits, &path)?
        } else {
            Err(errors)
        };
        let line = match result {
            Ok(summary) if summary["inline"] == true => {
                json!({"agent": agent.name, "manifest": agent.manifest, "digest": summary["digest"],
                       "size": 0, "files": 0, "inline": true, "uploaded": false})
            }
            Ok(summary) => {
                let key = BlobKey::package(summary["digest"].as_str().unwrap_or_default())?;
                let outcome = store
                    .put_if_absent(&key, BlobBody::File(path), CONTENT_TYPE_TAR_GZ)
                    .await?;
                json!({"agent": agent.name, "manifest": agent.manifest, "digest": summary["digest"],
                       "content_digest": summary["content_digest"],
                       "size": summary["size"], "files": summary["files"],
                       "uploaded": outcome == PutOutcome::Created})
            }
            Err(found) => {
                failed = true;
                report_errors(&found);
                json!({"agent": agent.name, "manifest": agent.manifest, "digest": null, "errors": found.len()})
            }
        };
        writeln!(out, "{line}")?;
    }
    drop(progress);
    Ok(if failed {
        super::EXIT_FINDINGS.into()
    } else {
        ExitCode::SUCCESS
    })
}

fn report_errors(diagnostics: &[Diagnostic]) {
    for d in diagnostics.iter().filter(|d| d.severity == Severity::Error) {
        eprintln!(
            "error[{}]: {}:{}:{}: {}",
            d.code, d.path, d.span.line, d.span.column, d.message
        );
    }
}
