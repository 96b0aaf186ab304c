//! A crate's module tree, read from its root file the way the compiler does:
//! following `mod` declarations (inline or in `<name>.rs` / `<name>/mod.rs`),
//! leaving out `#[cfg(test)]` items.

use std::collections::{BTreeMap, BTreeSet};

use syn::Item;
use syn::visit::Visit;

use crate::error::AnalysisError;
use crate::references::{PathCollector, is_test_only, item_attrs, use_paths};

/// A module's path from the crate root (`[]` is the root).
pub type ModulePath = Vec<String>;

/// What one module (a file, or an inline `mod m { … }`) declares and names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Module {
    /// The file that holds it.
    pub file: String,
    pub children: BTreeSet<String>,
    /// Names brought in by `use`, to the path they stand for (from the root).
    pub imports: BTreeMap<String, Vec<String>>,
    /// Glob imports (`use a::*`), from the root.
    pub globs: Vec<Vec<String>>,
    /// Names of the items it defines.
    pub defined: BTreeSet<String>,
    /// Every path it names into the crate, from the root.
    pub references: Vec<Vec<String>>,
}

/// Every module of one crate, by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleTree {
    pub modules: BTreeMap<ModulePath, Module>,
    /// The module each file holds at its top.
    pub files: BTreeMap<String, ModulePath>,
}

/// Reads the module tree of the crate whose root is `root` (a path such as
/// `src/lib.rs`); `read` gives a file's text by such a path.
pub fn read_module_tree(
    root: &str,
    read: &dyn Fn(&str) -> Option<String>,
) -> Result<ModuleTree, AnalysisError> {
    let text = read(root).ok_or_else(|| AnalysisError::Missing {
        file: root.to_owned(),
    })?;
    let mut tree = ModuleTree::default();
    let mut pending = vec![(root.to_owned(), text, ModulePath::new())];
    while let Some((file, text, path)) = pending.pop() {
        let parsed = syn::parse_file(&text).map_err(|e| AnalysisError::Parse {
            file: file.clone(),
            message: e.to_string(),
        })?;
        tree.files.insert(file.clone(), path.clone());
        let place = Place {
            dir: child_dir(&file),
            file,
            path,
        };
        let declared = add_module(&mut tree, &place, &parsed.items);
        for (child, dir) in declared {
            let (file, text) = locate(&dir, &child, read)?;
            pending.push((file, text, child));
        }
    }
    Ok(tree)
}

/// Where a module's items are: its file, its path, and the directory its
/// `mod x;` declarations are found in.
struct Place {
    file: String,
    path: ModulePath,
    dir: String,
}

impl Place {
    fn child(&self, name: &str) -> Place {
        Place {
            file: self.file.clone(),
            path: join(&self.path, name),
            dir: format!("{}/{name}", self.dir),
        }
    }
}

/// Adds the module of `items` at `place` and its inline children; returns
/// the children declared in files, with the directory to find them in.
fn add_module(tree: &mut ModuleTree, place: &Place, items: &[Item]) -> Vec<(ModulePath, String)> {
    let items: Vec<&Item> = items
        .iter()
        .filter(|item| !is_test_only(item_attrs(item)))
        .collect();
    let mut module = Module {
        file: place.file.clone(),
        ..Module::default()
    };
    let mut in_files = Vec::new();
    for item in &items {
        if let Item::Mod(child) = item {
            let name = child.ident.to_string();
            module.children.insert(name.clone());
            match &child.content {
                Some((_, inner)) => in_files.extend(add_module(tree, &place.child(&name), inner)),
                None => in_files.push((join(&place.path, &name), place.dir.clone())),
            }
        }
    }
    for item in &items {
        record_item(&mut module, &place.path, item);
    }
    tree.modules.insert(place.path.clone(), module);
    in_files
}

/// Records what one (non-module) item defines, imports and names.
fn record_item(module: &mut Module, path: &[String], item: &Item) {
    if let Item::Mod(_) = item {
        return;
    }
    if let Item::Use(item_use) = item {
        for used in use_paths(&item_use.tree) {
            let Some(target) = from_root(path, &module.children, &used.segments) else {
                continue;
            };
            match used.name {
                Some(name) => {
                    module.imports.insert(name, target);
                }
                None => module.globs.push(target),
            }
        }
    }
    if let Some(name) = defined_name(item) {
        module.defined.insert(name);
    }
    let mut collector = PathCollector::new(&module.children);
    collector.visit_item(item);
    let references: Vec<Vec<String>> = collector
        .found
        .iter()
        .filter_map(|segments| from_root(path, &module.children, segments))
        .collect();
    module.references.extend(references);
}

/// The name an item defines, if any.
fn defined_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// A path written in module `path` (whose children are `children`), from
/// the crate root; `None` for a path that leaves the crate.
pub fn from_root(
    path: &[String],
    children: &BTreeSet<String>,
    segments: &[String],
) -> Option<Vec<String>> {
    let (head, rest) = segments.split_first()?;
    match head.as_str() {
        "crate" => Some(rest.to_vec()),
        "self" => Some([path, rest].concat()),
        "super" => {
            let (_, parent) = path.split_last()?;
            match rest.first().map(String::as_str) {
                Some("super") => from_root(parent, &BTreeSet::new(), rest),
                _ => Some([parent, rest].concat()),
            }
        }
        _ if children.contains(head) => Some([path, segments].concat()),
        _ => None,
    }
}

/// The directory of a file's `mod x;` children: its own directory for a
/// crate root or `mod.rs`, else a directory named after it.
fn child_dir(file: &str) -> String {
    let (dir, name) = file.rsplit_once('/').unwrap_or(("", file));
    let stem = name.strip_suffix(".rs").unwrap_or(name);
    if matches!(stem, "lib" | "main" | "mod") {
        dir.to_owned()
    } else if dir.is_empty() {
        stem.to_owned()
    } else {
        format!("{dir}/{stem}")
    }
}

/// The file of module `child` declared in `dir`: `<name>.rs` or
/// `<name>/mod.rs`, and its text.
fn locate(
    dir: &str,
    child: &[String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, String), AnalysisError> {
    let name = child.last().map_or("", String::as_str);
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let candidates = [
        format!("{prefix}{name}.rs"),
        format!("{prefix}{name}/mod.rs"),
    ];
    candidates
        .iter()
        .find_map(|file| read(file).map(|text| (file.clone(), text)))
        .ok_or_else(|| AnalysisError::Missing {
            file: candidates[0].clone(),
        })
}

fn join(path: &[String], name: &str) -> ModulePath {
    let mut joined = path.to_vec();
    joined.push(name.to_owned());
    joined
}
