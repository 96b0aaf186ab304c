//! The import graph of one crate, between module files, and its cycles
//! (strongly connected components of more than one file, Tarjan's algorithm).

use std::collections::{BTreeMap, BTreeSet};

use crate::tree::{ModulePath, ModuleTree};

/// How deep re-exports are followed (`pub use` of a `pub use` …).
const MAX_REEXPORTS: usize = 16;

/// One file importing another, with the first path that does it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub from: String,
    pub to: String,
    /// The path as resolved from the crate root, e.g. `crate::native::RESERVED_ENV`.
    pub via: String,
}

/// Files that import each other, directly or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// Module names (`config`, `github::checks`; `lib` or `main` for the root), sorted.
    pub modules: BTreeSet<String>,
    /// The imports between them.
    pub edges: Vec<Edge>,
}

/// The import cycles of a crate, each with its edges.
pub fn cycles(tree: &ModuleTree) -> Vec<Cycle> {
    let edges = import_edges(tree);
    let mut adjacency: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for edge in &edges {
        adjacency.entry(&edge.from).or_default().insert(&edge.to);
    }
    let mut tarjan = Tarjan::new(&adjacency);
    for file in tree.files.keys() {
        tarjan.visit(file);
    }
    tarjan
        .components
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| Cycle {
            modules: component.iter().map(|f| module_name(tree, f)).collect(),
            edges: edges
                .iter()
                .filter(|e| {
                    component.contains(e.from.as_str()) && component.contains(e.to.as_str())
                })
                .cloned()
                .collect(),
        })
        .collect()
}

/// Every import between two files of the crate, one edge per pair.
pub fn import_edges(tree: &ModuleTree) -> Vec<Edge> {
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    for module in tree.modules.values() {
        for reference in &module.references {
            let target = resolve(tree, reference, 0);
            let Some(to) = tree.modules.get(&target).map(|m| &m.file) else {
                continue;
            };
            if *to != module.file {
                edges
                    .entry((module.file.clone(), to.clone()))
                    .or_insert_with(|| written_from_root(reference));
            }
        }
    }
    edges
        .into_iter()
        .map(|((from, to), via)| Edge { from, to, via })
        .collect()
}

/// `crate::a::b` for `[a, b]`.
fn written_from_root(segments: &[String]) -> String {
    std::iter::once("crate")
        .chain(segments.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("::")
}

/// The module that defines what `segments` (from the root) names: child
/// modules are entered, imports (re-exports) followed.
pub fn resolve(tree: &ModuleTree, segments: &[String], depth: usize) -> ModulePath {
    let mut path = ModulePath::new();
    for (index, segment) in segments.iter().enumerate() {
        let Some(module) = tree.modules.get(&path) else {
            break;
        };
        if module.children.contains(segment) {
            path.push(segment.clone());
            continue;
        }
        if depth >= MAX_REEXPORTS || module.defined.contains(segment) {
            break;
        }
        let rest = &segments[index + 1..];
        if let Some(target) = module.imports.get(segment) {
            return resolve(tree, &[target.as_slice(), rest].concat(), depth + 1);
        }
        if let Some(glob) = glob_holding(tree, &module.globs, segment, depth) {
            return resolve(
                tree,
                &[glob.as_slice(), &segments[index..]].concat(),
                depth + 1,
            );
        }
        break;
    }
    path
}

/// The glob import (`use a::*`) among `globs` whose module has `name`.
fn glob_holding<'g>(
    tree: &ModuleTree,
    globs: &'g [Vec<String>],
    name: &str,
    depth: usize,
) -> Option<&'g Vec<String>> {
    globs.iter().find(|glob| {
        let target = resolve(tree, glob, depth + 1);
        tree.modules.get(&target).is_some_and(|m| {
            m.children.contains(name) || m.defined.contains(name) || m.imports.contains_key(name)
        })
    })
}

/// A file's module name: its path, or the root file's stem (`lib`, `main`).
fn module_name(tree: &ModuleTree, file: &str) -> String {
    match tree.files.get(file) {
        Some(path) if !path.is_empty() => path.join("::"),
        _ => {
            let name = file.rsplit('/').next().unwrap_or(file);
            name.strip_suffix(".rs").unwrap_or(name).to_owned()
        }
    }
}

/// Tarjan's strongly connected components.
struct Tarjan<'g> {
    adjacency: &'g BTreeMap<&'g str, BTreeSet<&'g str>>,
    index: BTreeMap<&'g str, usize>,
    low: BTreeMap<&'g str, usize>,
    stack: Vec<&'g str>,
    on_stack: BTreeSet<&'g str>,
    components: Vec<BTreeSet<&'g str>>,
}

impl<'g> Tarjan<'g> {
    fn new(adjacency: &'g BTreeMap<&'g str, BTreeSet<&'g str>>) -> Self {
        Self {
            adjacency,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            components: Vec::new(),
        }
    }

    fn visit(&mut self, node: &'g str) {
        if !self.index.contains_key(node) {
            self.connect(node);
        }
    }

    fn connect(&mut self, node: &'g str) {
        let order = self.index.len();
        self.index.insert(node, order);
        self.low.insert(node, order);
        self.stack.push(node);
        self.on_stack.insert(node);
        let adjacency = self.adjacency;
        for &next in adjacency.get(node).into_iter().flatten() {
            if !self.index.contains_key(next) {
                self.connect(next);
                self.lower(node, self.low[next]);
            } else if self.on_stack.contains(next) {
                self.lower(node, self.index[next]);
            }
        }
        if self.low[node] == order {
            self.pop_component(node);
        }
    }

    fn lower(&mut self, node: &'g str, to: usize) {
        if let Some(low) = self.low.get_mut(node) {
            *low = (*low).min(to);
        }
    }

    fn pop_component(&mut self, root: &'g str) {
        let mut component = BTreeSet::new();
        while let Some(node) = self.stack.pop() {
            self.on_stack.remove(node);
            component.insert(node);
            if node == root {
                break;
            }
        }
        self.components.push(component);
    }
}
