//! The paths a module names that may lead to another module of its crate:
//! those that start with `crate`, `super` or `self`, or with the name of one
//! of the module's children. Test-only items (`#[cfg(test)]`) are skipped.

use std::collections::BTreeSet;

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::{Attribute, ImplItemFn, Item, ItemUse, Macro, Path, UseTree, Visibility};

/// One path of a `use` tree, flattened: `use a::{b, c as d}` gives `a::b`
/// (named `b`) and `a::c` (named `d`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsePath {
    pub segments: Vec<String>,
    /// The name it brings into scope; `None` for a glob (`a::*`).
    pub name: Option<String>,
}

/// Every path of a `use` tree.
pub fn use_paths(tree: &UseTree) -> Vec<UsePath> {
    let mut out = Vec::new();
    flatten(tree, &mut Vec::new(), &mut out);
    out
}

fn flatten(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<UsePath>) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten(&path.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(name) => out.push(named(prefix, &name.ident.to_string(), None)),
        UseTree::Rename(rename) => out.push(named(
            prefix,
            &rename.ident.to_string(),
            Some(rename.rename.to_string()),
        )),
        UseTree::Glob(_) => out.push(UsePath {
            segments: prefix.clone(),
            name: None,
        }),
        UseTree::Group(group) => {
            for item in &group.items {
                flatten(item, prefix, out);
            }
        }
    }
}

/// `prefix::ident` (or `prefix` itself for `self`), named `rename` or its
/// last segment.
fn named(prefix: &[String], ident: &str, rename: Option<String>) -> UsePath {
    let mut segments = prefix.to_vec();
    if ident != "self" {
        segments.push(ident.to_owned());
    }
    let name = rename.or_else(|| segments.last().cloned());
    UsePath { segments, name }
}

/// Whether an item (or any attributed node) is compiled for tests only.
pub fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .meta
                .require_list()
                .is_ok_and(|list| list.tokens.to_string() == "test")
    })
}

/// The attributes of an item, for [`is_test_only`].
pub fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Collects the module-relative paths of the items it visits (see the
/// module docs), as written.
#[derive(Debug)]
pub struct PathCollector<'m> {
    children: &'m BTreeSet<String>,
    pub found: Vec<Vec<String>>,
}

impl<'m> PathCollector<'m> {
    /// A collector for a module whose child modules are `children`.
    pub fn new(children: &'m BTreeSet<String>) -> Self {
        Self {
            children,
            found: Vec::new(),
        }
    }

    fn starts_in_crate(&self, segments: &[String]) -> bool {
        segments.first().is_some_and(|head| {
            matches!(head.as_str(), "crate" | "super" | "self") || self.children.contains(head)
        })
    }

    /// Keeps a path of an expression, type or pattern: `a::b` at least (a
    /// lone `self` is a value).
    fn keep_path(&mut self, segments: Vec<String>) {
        if segments.len() >= 2 && self.starts_in_crate(&segments) {
            self.found.push(segments);
        }
    }

    fn keep_use(&mut self, segments: Vec<String>) {
        if self.starts_in_crate(&segments) {
            self.found.push(segments);
        }
    }
}

impl<'ast> Visit<'ast> for PathCollector<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        if !is_test_only(item_attrs(item)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, item: &'ast ImplItemFn) {
        if !is_test_only(&item.attrs) {
            visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast ItemUse) {
        for path in use_paths(&item.tree) {
            self.keep_use(path.segments);
        }
    }

    fn visit_path(&mut self, path: &'ast Path) {
        if path.leading_colon.is_none() {
            self.keep_path(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        visit::visit_path(self, path);
    }

    /// `pub(crate)`, `pub(super)`, `pub(in …)` name who may see an item,
    /// not an item.
    fn visit_visibility(&mut self, _: &'ast Visibility) {}

    fn visit_macro(&mut self, mac: &'ast Macro) {
        visit::visit_macro(self, mac);
        let mut paths = Vec::new();
        token_paths(mac.tokens.clone(), &mut paths);
        for path in paths {
            self.keep_path(path);
        }
    }
}

/// The `a::b::c` runs of identifiers in a macro's tokens (which syn leaves
/// unparsed), nested groups included.
fn token_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let mut run: Vec<String> = Vec::new();
    let mut colons = 0;
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => {
                if colons != 2 {
                    out.push(std::mem::take(&mut run));
                }
                run.push(ident.to_string());
                colons = 0;
            }
            TokenTree::Punct(punct) if punct.as_char() == ':' => colons += 1,
            TokenTree::Group(group) => {
                out.push(std::mem::take(&mut run));
                colons = 0;
                token_paths(group.stream(), out);
            }
            _ => {
                out.push(std::mem::take(&mut run));
                colons = 0;
            }
        }
    }
    out.push(run);
    out.retain(|path| path.len() >= 2);
}
