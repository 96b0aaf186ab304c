//! The analysis on small in-memory crates.

use std::collections::{BTreeMap, BTreeSet};

use astrolift_architecture_tests::{Cycle, cycles, read_module_tree};

/// The cycles of a crate made of `files` (path, text), rooted at `src/lib.rs`.
fn cycles_of(files: &[(&str, &str)]) -> Vec<Cycle> {
    let files: BTreeMap<String, String> = files
        .iter()
        .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
        .collect();
    let read = |path: &str| files.get(path).cloned();
    let tree = read_module_tree("src/lib.rs", &read).expect("the sources parse");
    cycles(&tree)
}

fn names(cycle: &Cycle) -> Vec<&str> {
    cycle.modules.iter().map(String::as_str).collect()
}

#[test]
fn a_two_module_cycle_is_found_with_its_edges() {
    let found = cycles_of(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\npub struct A(B);\n"),
        (
            "src/b.rs",
            "pub struct B;\npub fn f() -> super::a::A { todo!() }\n",
        ),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(names(&found[0]), ["a", "b"]);
    let edges: BTreeSet<(&str, &str)> = found[0]
        .edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    assert_eq!(
        edges,
        BTreeSet::from([("src/a.rs", "src/b.rs"), ("src/b.rs", "src/a.rs")])
    );
}

#[test]
fn a_parent_that_only_declares_and_re_exports_is_not_in_a_cycle() {
    let found = cycles_of(&[
        (
            "src/lib.rs",
            "pub mod a;\npub mod b;\npub use a::A;\npub use b::B;\n",
        ),
        ("src/a.rs", "pub struct A;\n"),
        ("src/b.rs", "pub struct B(crate::A);\n"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_re_export_is_followed_to_the_defining_module() {
    // `b` names `A` through the root's re-export; `a` imports `b`: a cycle
    // of `a` and `b`, with the root out of it.
    let found = cycles_of(&[
        ("src/lib.rs", "pub mod a;\npub mod b;\npub use a::A;\n"),
        ("src/a.rs", "pub struct A;\npub fn g() { crate::b::f() }\n"),
        ("src/b.rs", "use crate::A;\npub fn f() { let _ = A; }\n"),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(names(&found[0]), ["a", "b"]);
}

#[test]
fn an_item_the_root_defines_and_a_child_uses_is_a_cycle_with_the_root() {
    let found = cycles_of(&[
        (
            "src/lib.rs",
            "mod child;\npub struct Shared;\npub use child::f;\n",
        ),
        (
            "src/child.rs",
            "pub fn f() -> super::Shared { super::Shared }\n",
        ),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(names(&found[0]), ["child", "lib"]);
}

#[test]
fn a_use_of_a_child_module_is_an_import() {
    let found = cycles_of(&[
        ("src/lib.rs", "mod outer;\n"),
        (
            "src/outer/mod.rs",
            "mod inner;\nuse inner::I;\npub struct O;\n",
        ),
        ("src/outer/inner.rs", "pub struct I(super::O);\n"),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(names(&found[0]), ["outer", "outer::inner"]);
}

#[test]
fn a_test_module_is_ignored() {
    let found = cycles_of(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        (
            "src/a.rs",
            "pub struct A;\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n",
        ),
        ("src/b.rs", "pub struct B(crate::a::A);\n"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_path_inside_a_macro_is_an_import() {
    let found = cycles_of(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        (
            "src/a.rs",
            "pub const A: u8 = 1;\npub fn g() { println!(\"{}\", crate::b::B); }\n",
        ),
        ("src/b.rs", "pub const B: u8 = crate::a::A;\n"),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
}
