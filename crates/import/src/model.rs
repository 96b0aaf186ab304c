//! The one model every graph and Markdown importer fills: an imported agent
//! set (agents, their instructions, skills and tools, the edges between
//! agents) plus its gaps. [`crate::layout`] turns it into files.

use std::collections::{BTreeMap, HashMap, HashSet};

use astrolift_manifest::{Diagnostic, Span};

/// Everything an importer understood, before it becomes files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentSet {
    /// The set's slug: the single agent's name, or the workflow's.
    pub name: String,
    /// The source's own description, if it has one.
    pub description: Option<String>,
    /// In source order; at least one.
    pub agents: Vec<ImportedAgent>,
    /// `(from, to)` indexes into `agents`: `to` runs after `from`.
    pub edges: Vec<(usize, usize)>,
    /// Text of the source that belongs to no agent (a prompt on no path to
    /// one): it becomes a skill of the first agent, never dropped.
    pub loose_prompts: Vec<Instruction>,
    pub gaps: Vec<Diagnostic>,
}

/// One agent of the source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportedAgent {
    /// A slug, unique in the set.
    pub slug: String,
    /// What the source calls it (a node label, a file name).
    pub title: String,
    /// The agent's own instructions, in order: they make its brief.
    pub instructions: Vec<Instruction>,
    /// Prompts that feed the agent without being its system message: skills.
    pub prompts: Vec<Instruction>,
    /// Files beside the brief, linked from it (nested AGENTS.md files).
    pub context: Vec<ContextFile>,
    pub tools: Vec<Tool>,
    /// Where the agent's node is in the source, for gaps about it.
    pub span: Option<Span>,
}

/// One piece of prompt text and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// What the source calls it: "system prompt of Agent `Researcher`".
    pub origin: String,
    pub text: String,
}

/// A file beside the brief: `name` is relative to the brief's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub name: String,
    pub title: String,
    pub text: String,
}

/// A tool the source names; it becomes a tool slug and an
/// `import/unresolved-tool` warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    pub slug: String,
    /// The source's name for it.
    pub name: String,
    pub description: Option<String>,
    /// Where the gap points.
    pub path: String,
    pub span: Span,
}

/// One file of the output layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile {
    pub bytes: Vec<u8>,
    pub executable: bool,
}

impl OutputFile {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            bytes: text.into().into_bytes(),
            executable: false,
        }
    }
}

/// What an import returns: the files to write (relative POSIX paths inside
/// the output directory) and the semantic gaps, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    pub files: BTreeMap<String, OutputFile>,
    pub gaps: Vec<Diagnostic>,
    /// The agent names of the layout, in order.
    pub agents: Vec<String>,
}

impl Imported {
    /// The layout as an in-memory tree, for validating or packaging it
    /// without touching a disk.
    pub fn to_tree(&self) -> astrolift_manifest::MemTree {
        let mut tree = astrolift_manifest::MemTree::new();
        for (path, file) in &self.files {
            tree.insert(path.clone(), file.bytes.clone(), file.executable);
        }
        tree
    }
}

/// A slug from free text: lower-case ASCII letters and digits, runs of
/// anything else as one `-`, at most 64 characters; `fallback` when nothing
/// is left.
pub fn slugify(text: &str, fallback: &str) -> String {
    let mut slug = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.truncate(64);
    let slug = slug.trim_end_matches('-').to_owned();
    if slug.is_empty() {
        fallback.to_owned()
    } else {
        slug
    }
}

/// Hands out unique slugs: `base`, or `base-2`, `base-3`... , the first not yet taken.
/// Keeps the 64-character slug limit. Each base remembers the suffix it reached, so
/// 5,000 agents of one title take linear time, not a scan per candidate.
#[derive(Debug, Default)]
pub struct SlugAllocator {
    taken: HashSet<String>,
    next_suffix: HashMap<String, u64>,
}

impl SlugAllocator {
    /// An allocator with `reserved` already taken.
    pub fn with_taken<'a>(reserved: impl IntoIterator<Item = &'a str>) -> Self {
        Self {
            taken: reserved.into_iter().map(str::to_owned).collect(),
            next_suffix: HashMap::new(),
        }
    }

    /// The first free slug of `base`, now taken.
    pub fn allocate(&mut self, base: &str) -> String {
        if self.taken.insert(base.to_owned()) {
            return base.to_owned();
        }
        let mut n = self.next_suffix.get(base).copied().unwrap_or(2);
        loop {
            let suffix = format!("-{n}");
            let mut stem = base.to_owned();
            stem.truncate(64 - suffix.len());
            let candidate = format!("{}{suffix}", stem.trim_end_matches('-'));
            n += 1;
            if self.taken.insert(candidate.clone()) {
                self.next_suffix.insert(base.to_owned(), n);
                return candidate;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slugify("Research Agent (v2)", "x"), "research-agent-v2");
        assert_eq!(slugify("!!!", "agent"), "agent");
        assert_eq!(slugify(&"a".repeat(80), "x").len(), 64);
        let mut slugs = SlugAllocator::with_taken(["a", "a-2"]);
        assert_eq!(slugs.allocate("a"), "a-3");
        assert_eq!(slugs.allocate("a"), "a-4");
        assert_eq!(slugs.allocate("a-5"), "a-5");
        assert_eq!(slugs.allocate("a"), "a-6");
        let long = "b".repeat(64);
        let mut slugs = SlugAllocator::with_taken([long.as_str()]);
        assert!(astrolift_manifest::paths::is_slug(&slugs.allocate(&long)));
    }
}
