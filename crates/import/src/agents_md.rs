//! The `AGENTS.md` convention: a root `AGENTS.md` and nested ones in
//! subdirectories, each instructions for agents working in that part of
//! the repository.
//!
//! The root file becomes the brief, verbatim; each nested file becomes a
//! context file `brief/nested/<dir>/AGENTS.md` linked from a section added
//! at the brief's end. Files the root links to (inside the directory)
//! are copied next to the brief, so its links keep working and become
//! context files too; a relative link to a file the import does not carry
//! (not found, or a one-file import) is kept as text in a code span, an
//! `import/unresolved-link` gap, so the layout validates. Commands the files list (shell code blocks, inline
//! commands) are copied as text and never run: each is an
//! `import/command-not-run` gap.

use std::ops::Range;

use astrolift_manifest::import_codes as codes;
use astrolift_manifest::position::LineIndex;
use astrolift_manifest::{Diagnostic, SourceTree, paths};
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

use crate::graph;
use crate::model::{AgentSet, ContextFile, ImportedAgent, Instruction};
use crate::{ImportError, Imported, Mode, Options, Source, SourceFile, layout};

/// The file name of the convention.
pub const FILE_NAME: &str = "AGENTS.md";

/// Imports one AGENTS.md file or a directory of them.
pub fn import(source: Source<'_>, options: &Options) -> Result<Imported, ImportError> {
    let set = match source {
        Source::File(file) => from_file(file, options)?,
        Source::Tree { name, tree } => from_tree(name, tree, options)?,
        Source::Package { archive, .. } => {
            return Err(ImportError::WrongFormat {
                path: archive.path.to_owned(),
                expected: "AGENTS.md",
                reason: "an archive is an astrolift_package source".to_owned(),
            });
        }
    };
    let path = match source {
        Source::File(file) => file.path.to_owned(),
        _ => FILE_NAME.to_owned(),
    };
    Ok(layout::render(set, Mode::Flatten, options, &path))
}

fn text_of<'b>(path: &str, bytes: &'b [u8]) -> Result<&'b str, ImportError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|_| ImportError::NotUtf8 {
        path: path.to_owned(),
    })
}

fn from_file(file: SourceFile<'_>, options: &Options) -> Result<AgentSet, ImportError> {
    let text = text_of(file.path, file.bytes)?;
    let name = graph::set_name(options.name.as_deref(), None, &parent_name(file.path));
    let mut set = new_set(name);
    command_gaps(file.path, text, &mut set.gaps);
    // One file: nothing it links is carried.
    let text = unresolved_links_as_text(file.path, text, &[], &mut set.gaps);
    push_root(&mut set, file.path, &text);
    Ok(set)
}

/// The directory a file path names its agent after (`repo/AGENTS.md` is `repo`).
fn parent_name(path: &str) -> String {
    let parent = path.rsplit_once(['/', '\\']).map(|(p, _)| p).unwrap_or("");
    let name = parent.rsplit(['/', '\\']).next().unwrap_or("");
    if name.is_empty() || name == "." || name == ".." {
        "agent".to_owned()
    } else {
        name.to_owned()
    }
}

fn new_set(name: String) -> AgentSet {
    AgentSet {
        name: name.clone(),
        agents: vec![ImportedAgent {
            slug: name.clone(),
            title: name,
            ..ImportedAgent::default()
        }],
        ..AgentSet::default()
    }
}

fn push_root(set: &mut AgentSet, path: &str, text: &str) {
    if let Some(agent) = set.agents.first_mut() {
        if text.trim().is_empty() {
            set.gaps.push(Diagnostic::new(
                &codes::NO_INSTRUCTIONS,
                path,
                astrolift_manifest::Span::FILE,
                format!("{path} is empty: the brief is a stub"),
            ));
        } else {
            agent.instructions.push(Instruction {
                origin: path.to_owned(),
                text: text.to_owned(),
            });
        }
    }
}

fn from_tree(
    dir_name: &str,
    tree: &dyn SourceTree,
    options: &Options,
) -> Result<AgentSet, ImportError> {
    let files: Vec<&str> = tree
        .entries()
        .iter()
        .filter(|e| e.kind == astrolift_manifest::EntryKind::File)
        .map(|e| e.path.as_str())
        .filter(|p| paths::file_name(p) == FILE_NAME)
        .collect();
    if files.is_empty() {
        return Err(ImportError::NoAgentsMd {
            path: dir_name.to_owned(),
        });
    }
    let name = graph::set_name(options.name.as_deref(), Some(dir_name), dir_name);
    let mut set = new_set(name);
    let limit = options.limits.package.manifest_file;
    let mut budget = Budget::new(dir_name, options.limits.source_bytes);
    for path in files {
        let text = tree.read_text(path, limit).map_err(|e| ImportError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        budget.spend(text.len())?;
        command_gaps(path, &text, &mut set.gaps);
        if path == FILE_NAME {
            copy_linked_files(tree, &text, limit, &mut budget, &mut set)?;
            let carried: Vec<String> = set
                .agents
                .first()
                .map(|a| a.context.iter().map(|c| c.name.clone()).collect())
                .unwrap_or_default();
            let text = unresolved_links_as_text(path, &text, &carried, &mut set.gaps);
            push_root(&mut set, path, &text);
        } else if let Some(agent) = set.agents.first_mut() {
            agent.context.push(ContextFile {
                name: format!("nested/{path}"),
                title: path.to_owned(),
                text,
            });
        }
    }
    if tree.entry(FILE_NAME).is_none() {
        set.gaps.push(Diagnostic::new(
            &codes::NO_INSTRUCTIONS,
            FILE_NAME,
            astrolift_manifest::Span::FILE,
            "the directory has nested AGENTS.md files but no root one: the brief only links them",
        ));
    }
    Ok(set)
}

/// The relative links of `text` that stay inside its directory: each as the path it
/// names there, the link's target as written, and its byte range.
fn inside_links(text: &str) -> Vec<(String, String, Range<usize>)> {
    astrolift_manifest::brief::links(text)
        .into_iter()
        .filter_map(|(target, range)| {
            let relative = astrolift_manifest::brief::relative_target(&target)?;
            let resolved = paths::resolve_lexically("", &relative)
                .filter(|p| !relative.starts_with('/') && !p.is_empty())?;
            Some((resolved, target, range))
        })
        .collect()
}

/// Files the root AGENTS.md links to, inside the directory and not under
/// `nested/`: copied next to the brief so the links stay context files.
fn copy_linked_files(
    tree: &dyn SourceTree,
    text: &str,
    limit: u64,
    budget: &mut Budget,
    set: &mut AgentSet,
) -> Result<(), ImportError> {
    let Some(agent) = set.agents.first_mut() else {
        return Ok(());
    };
    for (resolved, _, _) in inside_links(text) {
        let taken = resolved == "README.md"
            || resolved.starts_with("nested/")
            || agent.context.iter().any(|c| c.name == resolved);
        if taken || !tree.is_file(&resolved) {
            continue;
        }
        let Ok(content) = tree.read_text(&resolved, limit) else {
            continue;
        };
        budget.spend(content.len())?;
        agent.context.push(ContextFile {
            name: resolved.clone(),
            title: resolved,
            text: content,
        });
    }
    Ok(())
}

/// `text` (the root AGENTS.md at `path`, which becomes the brief) with each relative
/// link inside its directory that names neither itself nor a `carried` file turned
/// into a code span of its own text, each an `import/unresolved-link` gap: the brief's
/// links must name its context files (`brief/missing-context`), and the import has no
/// file to give. A link that leaves the directory stays (validation only notes it).
fn unresolved_links_as_text(
    path: &str,
    text: &str,
    carried: &[String],
    gaps: &mut Vec<Diagnostic>,
) -> String {
    let index = LineIndex::new(text);
    let mut unresolved: Vec<Range<usize>> = Vec::new();
    for (resolved, target, range) in inside_links(text) {
        if resolved == "README.md" || carried.contains(&resolved) {
            continue;
        }
        // A link inside another (an image in a link) is covered by the outer one.
        if unresolved.last().is_some_and(|last| last.end > range.start) {
            continue;
        }
        gaps.push(
            Diagnostic::new(
                &codes::UNRESOLVED_LINK,
                path,
                index.span(range.clone()),
                format!("link `{target}` names `{resolved}`, which the import does not carry: kept as text"),
            )
            .with_help(
                "import the directory that holds the AGENTS.md (its linked files are copied), or \
                 add the file next to the brief and restore the link",
            ),
        );
        unresolved.push(range);
    }
    let mut out = String::with_capacity(text.len() + unresolved.len() * 4);
    let mut at = 0;
    for range in unresolved {
        out.push_str(text.get(at..range.start).unwrap_or_default());
        out.push_str(&code_span(text.get(range.clone()).unwrap_or_default()));
        at = range.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    out
}

/// `text` as a Markdown code span: one backtick more than its longest run, padded
/// with a space where it starts or ends with one.
fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// The bytes a directory import may read in all (the source limit).
struct Budget {
    path: String,
    spent: u64,
    limit: u64,
}

impl Budget {
    fn new(path: &str, limit: u64) -> Self {
        Self {
            path: path.to_owned(),
            spent: 0,
            limit,
        }
    }

    fn spend(&mut self, bytes: usize) -> Result<(), ImportError> {
        self.spent = self.spent.saturating_add(bytes as u64);
        if self.spent > self.limit {
            return Err(ImportError::TooLarge {
                path: self.path.clone(),
                size: self.spent,
                limit: self.limit,
            });
        }
        Ok(())
    }
}

/// Shell languages of fenced code blocks that hold commands.
const SHELL_LANGS: &[&str] = &[
    "sh",
    "bash",
    "shell",
    "console",
    "zsh",
    "fish",
    "powershell",
    "ps1",
    "cmd",
    "bat",
];

/// First words of an inline code span that make it a command.
const COMMAND_WORDS: &[&str] = &[
    "npm",
    "npx",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "node",
    "cargo",
    "rustup",
    "make",
    "just",
    "go",
    "python",
    "python3",
    "pip",
    "pipx",
    "uv",
    "poetry",
    "pytest",
    "tox",
    "ruff",
    "git",
    "gh",
    "docker",
    "kubectl",
    "bash",
    "sh",
    "mvn",
    "gradle",
    "./gradlew",
    "dotnet",
    "bundle",
    "rake",
    "composer",
    "php",
    "ruby",
];

/// A gap per shell block and per inline command: they are never run.
fn command_gaps(path: &str, text: &str, gaps: &mut Vec<Diagnostic>) {
    let index = LineIndex::new(text);
    let mut push = |range: Range<usize>, what: String| {
        gaps.push(
            Diagnostic::new(
                &codes::COMMAND_NOT_RUN,
                path,
                index.span(range),
                format!("{what} was copied as text and not run"),
            )
            .with_help("an import never runs commands; the agent runs them if its brief says so"),
        );
    };
    let mut in_shell_block: Option<Range<usize>> = None;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match &kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_ascii_lowercase(),
                    CodeBlockKind::Indented => String::new(),
                };
                if SHELL_LANGS.contains(&lang.as_str()) {
                    in_shell_block = Some(range);
                }
            }
            Event::End(pulldown_cmark::TagEnd::CodeBlock) => {
                if let Some(block) = in_shell_block.take() {
                    let first = text
                        .get(block.clone())
                        .and_then(|b| b.lines().nth(1))
                        .unwrap_or("")
                        .trim();
                    push(
                        block,
                        format!("the shell block starting `{}`", graph::short(first)),
                    );
                }
            }
            Event::Code(code) => {
                let first = code.split_whitespace().next().unwrap_or("");
                if COMMAND_WORDS.contains(&first) || first.starts_with("./") {
                    push(range, format!("the command `{}`", graph::short(&code)));
                }
            }
            _ => {}
        }
    }
}
