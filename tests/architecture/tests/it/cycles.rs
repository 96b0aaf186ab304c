//! No import cycle inside a crate (ARCHITECTURE.md, `tests/architecture`).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use astrolift_architecture_tests::{CrateRoot, Cycle, crate_roots, cycles, read_module_tree};

use crate::workspace_root;

/// Cycles tolerated while a crate is being cut apart, each as its crate (see
/// [`CrateRoot::name`]) and the sorted names of its modules. Empty: no crate
/// has one. The test fails on a cycle that is not listed, and on a listed
/// one that is gone. Do not add one; move the shared type or function into
/// a module of its own instead.
const KNOWN_CYCLES: &[(&str, &[&str])] = &[];

#[test]
fn no_import_cycle_inside_a_crate() {
    let workspace = workspace_root();
    let mut found: Vec<(String, Cycle)> = Vec::new();
    for root in crate_roots(&workspace).expect("the workspace lists its crates") {
        for cycle in crate_cycles(&workspace, &root) {
            found.push((root.name(), cycle));
        }
    }
    let mut problems = String::new();
    for (name, cycle) in &found {
        if !is_known(name, cycle) {
            describe_new(&mut problems, name, cycle);
        }
    }
    for (name, modules) in KNOWN_CYCLES {
        let still_there = found
            .iter()
            .any(|(n, c)| n == name && same_modules(c, modules));
        if !still_there {
            let _ = writeln!(
                problems,
                "KNOWN_CYCLES lists {name} {modules:?}, which is no longer a cycle: remove the entry.\n"
            );
        }
    }
    assert!(problems.is_empty(), "\n{problems}");
}

/// The cycles of one crate root.
fn crate_cycles(workspace: &std::path::Path, root: &CrateRoot) -> Vec<Cycle> {
    let package = workspace.join(&root.package);
    let read = |file: &str| std::fs::read_to_string(package.join(file)).ok();
    let tree =
        read_module_tree(&root.root, &read).unwrap_or_else(|e| panic!("{}: {e}", root.name()));
    cycles(&tree)
}

fn is_known(name: &str, cycle: &Cycle) -> bool {
    KNOWN_CYCLES
        .iter()
        .any(|(known, modules)| *known == name && same_modules(cycle, modules))
}

fn same_modules(cycle: &Cycle, modules: &[&str]) -> bool {
    let listed: BTreeSet<&str> = modules.iter().copied().collect();
    cycle
        .modules
        .iter()
        .map(String::as_str)
        .collect::<BTreeSet<_>>()
        == listed
}

/// A new cycle, its modules and every import between them, as file paths.
fn describe_new(out: &mut String, name: &str, cycle: &Cycle) {
    let modules: Vec<&str> = cycle.modules.iter().map(String::as_str).collect();
    let _ = writeln!(out, "import cycle in {name}: {modules:?}");
    let package = name.split(' ').next().unwrap_or(name);
    for edge in &cycle.edges {
        let _ = writeln!(
            out,
            "    {package}/{} -> {package}/{}  ({})",
            edge.from, edge.to, edge.via
        );
    }
    let _ = writeln!(
        out,
        "  Move what these modules share into a module of its own, or a function to the module whose concern it is.\n"
    );
}
