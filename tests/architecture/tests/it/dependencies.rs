//! Dependencies point downwards only (ARCHITECTURE.md, "Code map"): the pure
//! crates reach no runtime, network, AWS or storage crate, and none above them.

use std::collections::BTreeMap;

use astrolift_architecture_tests::{Dependency, dependencies};

use crate::workspace_root;

/// Crates of the outside world: the async runtime, HTTP, GitHub, AWS, SQLite.
const OUTSIDE_WORLD: &[&str] = &["tokio", "octocrab", "rusqlite", "hyper", "reqwest"];

fn is_outside_world(name: &str) -> bool {
    OUTSIDE_WORLD.contains(&name) || name.starts_with("aws-")
}

fn dependencies_of(package: &str) -> BTreeMap<String, Dependency> {
    let path = workspace_root().join(package).join("Cargo.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    dependencies(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Our crates among `package`'s dependencies.
fn ours(package: &str) -> Vec<String> {
    dependencies_of(package)
        .into_keys()
        .filter(|name| name.starts_with("astrolift-"))
        .collect()
}

#[test]
fn dependency_direction() {
    let mut broken = Vec::new();
    // manifest and package: "No network, no AWS, no clock" (their crate docs
    // and ARCHITECTURE.md); not even behind a feature.
    for package in ["crates/manifest", "crates/package"] {
        for (name, _) in dependencies_of(package) {
            if is_outside_world(&name) {
                broken.push(format!(
                    "{package} depends on {name}: the pure core reaches no runtime, network, AWS or storage crate (ARCHITECTURE.md, \"Bird's-eye view\")"
                ));
            }
        }
    }
    // jq: only its `sandbox` feature (which `manifest` leaves off) may run
    // anything (ARCHITECTURE.md, `crates/jq`).
    for (name, dependency) in dependencies_of("crates/jq") {
        if is_outside_world(&name) && !dependency.optional {
            broken.push(format!(
                "crates/jq depends on {name} without a feature: only the `sandbox` feature may (ARCHITECTURE.md, `crates/jq`)"
            ));
        }
    }
    let downwards = [
        ("crates/manifest", &["astrolift-jq"][..]),
        ("crates/package", &["astrolift-manifest"][..]),
        // Dispatch never sees a request's signature, a secret or a webhook
        // (ARCHITECTURE.md, `crates/dispatch`): no trigger, no forge.
        (
            "crates/dispatch",
            &["astrolift-jq", "astrolift-manifest", "astrolift-store"][..],
        ),
    ];
    for (package, allowed) in downwards {
        for name in ours(package) {
            if !allowed.contains(&name.as_str()) {
                broken.push(format!(
                    "{package} depends on {name}: dependencies point downwards only, {package} may use {allowed:?} (ARCHITECTURE.md, \"Code map\")"
                ));
            }
        }
    }
    // Presentation is bot's (ARCHITECTURE.md, `crates/bot`): the pipeline
    // renders nothing for GitHub, and GitHub's shapes know no diagnostics.
    let never = [
        ("crates/sync", "astrolift-forge"),
        ("crates/forge", "astrolift-manifest"),
    ];
    for (package, forbidden) in never {
        if ours(package).iter().any(|name| name == forbidden) {
            broken.push(format!(
                "{package} depends on {forbidden}: presentation lives in bot, where the two meet (ARCHITECTURE.md, `crates/bot`)"
            ));
        }
    }
    assert!(broken.is_empty(), "\n{}\n", broken.join("\n"));
}

/// The packages of `package`'s normal (shipped) dependency graph with the features it
/// turns on, as Cargo resolves them when the package is built by itself (Cargo Lambda's
/// `--bin <name>`): `cargo tree -e normal`, one name per line.
fn shipped_graph(package: &str) -> Vec<String> {
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(workspace_root())
        .args([
            "tree",
            "--locked",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}", "-p", package])
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo tree: {e}"));
    assert!(
        output.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Each Lambda function links only what it runs (ARCHITECTURE.md, `functions/`): no
/// SQLite, no CLI and no importer (and so no SARIF renderer, which is the CLI's).
#[test]
fn lambda_functions_link_no_sqlite_cli_or_importer() {
    let absent = [
        "rusqlite",
        "libsqlite3-sys",
        "clap",
        "astrolift-cli",
        "astrolift-import",
    ];
    let mut broken = Vec::new();
    for package in [
        "astrolift-fn-webhook",
        "astrolift-fn-trigger",
        "astrolift-fn-sync",
    ] {
        let graph = shipped_graph(package);
        assert!(
            graph.iter().any(|name| name == "astrolift-bot"),
            "{package}: {graph:?}"
        );
        for name in absent {
            if graph.iter().any(|linked| linked == name) {
                broken.push(format!("{package} links {name}"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The CLI keeps its embedded stores: the guard above is not vacuous.
#[test]
fn the_cli_links_sqlite() {
    assert!(
        shipped_graph("astrolift-cli")
            .iter()
            .any(|name| name == "rusqlite")
    );
}
