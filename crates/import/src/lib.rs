//! Importers: bring agents from other formats into the native layout.
//!
//! `astrolift import --from agents_md|astrolift_package|langflow|flowise`
//! calls [`import`] with the source's bytes (or a [`SourceTree`] for a
//! directory) and writes the [`Imported::files`] it returns; the
//! [`Imported::gaps`] are diagnostics in the `validate` shape, with the
//! `import/...` codes of [`codes`], positioned in the source (for JSON
//! sources, the line and column of the node or field the gap is about).
//!
//! This crate owns:
//! - one module per source format: [`agents_md`], [`package_archive`]
//!   (`astrolift_package`), [`langflow`], [`flowise`];
//! - one model of "an imported agent set plus gaps" ([`model::AgentSet`]),
//!   filled by the graph and Markdown importers ([`graph`] does what the two
//!   graph formats share) and turned into files by [`layout`];
//! - the JSON position index ([`json`]).
//!
//! Invariants:
//! - **Pure.** No I/O: no file system, network, clock or environment. The
//!   caller hands in bytes or a tree and writes the result; so an import
//!   either returns every file or an [`ImportError`] and nothing is written.
//! - **Nothing silently dropped.** Every non-empty prompt, system message
//!   and agent instruction of the source appears verbatim in the output (a
//!   brief or a `SKILL.md` body); every tool becomes a tool slug and an
//!   `import/unresolved-tool` warning; every model, memory, vector store,
//!   document loader, custom code component, credential and other node with
//!   no native equivalent becomes a positioned gap.
//! - **No secret echoed.** A credential's value never appears in a gap or
//!   in the output; the gap names the field.
//! - **Bounded.** Sources over their limit ([`source_file_limit`]:
//!   [`ImportLimits::source_bytes`] for an export, the brief's limit for an
//!   `AGENTS.md`) are refused before parsing; archives are read under the package limits (size, file
//!   count, path length) and the tarball reader's index bound, and refused on
//!   any escaping or non-file entry; a JSON export's value is built against a
//!   memory estimate ([`json::MAX_VALUE_BYTES`]) and its position index keeps
//!   fixed-size entries for the positions gaps use, never one per value.
//! - **Linear.** Every tenant-sized list (nodes, edges, same-titled slugs) is
//!   handled with tables and sets, never a scan per element.
//! - **Valid output.** With an image, the layout passes `astrolift validate`
//!   with no errors; an `astrolift_package` import packages back to the
//!   original archive's digest.
//!
//! Deliberately absent: running anything the source names (commands, code
//! components, tools), resolving tool bindings, choosing models or
//! importing credentials: those are gaps for the user to close.
#![forbid(unsafe_code)]

pub mod agents_md;
pub mod error;
pub mod flowise;
pub mod graph;
pub mod json;
pub mod langflow;
pub mod layout;
pub mod model;
mod options;
pub mod package_archive;

use std::str::FromStr;

pub use astrolift_manifest::import_codes as codes;
pub use error::ImportError;
pub use model::{AgentSet, Imported, OutputFile};
pub use options::{ImportLimits, Mode, Options, Source, SourceFile, effective_mode};

/// The source formats of `--from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    AgentsMd,
    AstroliftPackage,
    Langflow,
    Flowise,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::AgentsMd,
        Format::AstroliftPackage,
        Format::Langflow,
        Format::Flowise,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::AgentsMd => "agents_md",
            Format::AstroliftPackage => "astrolift_package",
            Format::Langflow => "langflow",
            Format::Flowise => "flowise",
        }
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown format `{s}`: one of agents_md, astrolift_package, langflow, flowise"
                )
            })
    }
}

/// Imports `source` as `format`: the files of a native layout plus the gaps,
/// or why the source is bad input.
pub fn import(
    format: Format,
    source: Source<'_>,
    options: &Options,
) -> Result<Imported, ImportError> {
    if let Some(name) = options
        .name
        .as_ref()
        .filter(|n| !astrolift_manifest::paths::is_slug(n))
    {
        return Err(ImportError::InvalidName { name: name.clone() });
    }
    for (file, limit) in source_files(format, &source, &options.limits) {
        check_size(file, limit)?;
    }
    match (format, source) {
        (Format::AgentsMd, source) => agents_md::import(source, options),
        (Format::AstroliftPackage, Source::Package { archive, snapshot }) => {
            package_archive::import(archive, snapshot, options)
        }
        (Format::AstroliftPackage, Source::File(archive)) => {
            package_archive::import(archive, None, options)
        }
        (Format::Langflow, Source::File(file)) => langflow::import(file, options),
        (Format::Flowise, Source::File(file)) => flowise::import(file, options),
        (format, source) => Err(ImportError::WrongFormat {
            path: format!("{source:?}"),
            expected: format.as_str(),
            reason: "this format reads one file".to_owned(),
        }),
    }
}

/// The size limit of a source file of `format`: an archive may be as large as a
/// package; an `AGENTS.md` becomes the brief, so it is under the brief's limit
/// (`Limits::manifest_file`: a larger one would give a layout that cannot validate);
/// an export is under `source_bytes`.
pub fn source_file_limit(format: Format, limits: &ImportLimits) -> u64 {
    match format {
        Format::AstroliftPackage => limits.package.package_size,
        Format::AgentsMd => limits.package.manifest_file,
        Format::Langflow | Format::Flowise => limits.source_bytes,
    }
}

/// Each input file with its size limit ([`source_file_limit`]; a snapshot is under
/// `source_bytes`).
fn source_files<'a>(
    format: Format,
    source: &Source<'a>,
    limits: &ImportLimits,
) -> Vec<(SourceFile<'a>, u64)> {
    match *source {
        Source::File(file) => vec![(file, source_file_limit(format, limits))],
        Source::Tree { .. } => Vec::new(),
        Source::Package { archive, snapshot } => {
            std::iter::once((archive, limits.package.package_size))
                .chain(snapshot.map(|s| (s, limits.source_bytes)))
                .collect()
        }
    }
}

fn check_size(file: SourceFile<'_>, limit: u64) -> Result<(), ImportError> {
    let size = file.bytes.len() as u64;
    if size > limit {
        return Err(ImportError::TooLarge {
            path: file.path.to_owned(),
            size,
            limit,
        });
    }
    Ok(())
}
