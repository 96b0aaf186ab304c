//! What an import is given: the source, the options and the limits it runs
//! under, and the mode it uses.

use astrolift_manifest::{Limits, SourceTree};

/// `--mode`: one agent, or one agent per agent node plus a workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Flatten,
    Federation,
}

/// Bounds on what an import reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportLimits {
    /// A JSON export, an AGENTS.md, an archive or a snapshot, bytes.
    pub source_bytes: u64,
    /// Package limits (uncompressed size, file count) for archives, and the
    /// per-file limit for Markdown read from a tree.
    pub package: Limits,
    /// Nodes and edges of a Langflow or Flowise graph (real flows have tens).
    pub graph_nodes: usize,
    pub graph_edges: usize,
}

impl ImportLimits {
    /// 32 MiB: real Langflow and Flowise exports are a few MiB (embedded
    /// component code), so this leaves room while a 50 MiB upload is refused.
    pub const DEFAULT: ImportLimits = ImportLimits {
        source_bytes: 32 * astrolift_manifest::limits::MIB,
        package: Limits::DEFAULT,
        graph_nodes: 5_000,
        graph_edges: 20_000,
    };
}

impl Default for ImportLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What `astrolift import` was asked for, beyond the source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `--name`: the agent's (or the federation's and workflow's) slug.
    pub name: Option<String>,
    /// `--image`: the primary container's `image_ref`.
    pub image: Option<String>,
    /// `--mode`; `None` is flatten for one agent, federation for several.
    pub mode: Option<Mode>,
    pub limits: ImportLimits,
}

/// One input file: its display path (gaps point into it) and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct SourceFile<'a> {
    pub path: &'a str,
    pub bytes: &'a [u8],
}

/// What the caller read.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// One file: an AGENTS.md, a JSON export, or an archive.
    File(SourceFile<'a>),
    /// A directory (agents_md): its AGENTS.md files, root and nested.
    Tree {
        /// The directory's name, for the agent name when `--name` is absent.
        name: &'a str,
        tree: &'a dyn SourceTree,
    },
    /// An Agent Package archive and its snapshot JSON.
    Package {
        archive: SourceFile<'a>,
        snapshot: Option<SourceFile<'a>>,
    },
}

impl std::fmt::Debug for Source<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(file) => f.debug_tuple("File").field(&file.path).finish(),
            Source::Tree { name, .. } => f.debug_struct("Tree").field("name", name).finish(),
            Source::Package { archive, .. } => {
                f.debug_tuple("Package").field(&archive.path).finish()
            }
        }
    }
}

/// The mode an import uses: the one asked for, else by agent count.
pub fn effective_mode(options: &Options, agents: usize) -> Mode {
    options.mode.unwrap_or(if agents > 1 {
        Mode::Federation
    } else {
        Mode::Flatten
    })
}
