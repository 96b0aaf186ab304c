//! The crates of the workspace this analysis covers, and the dependencies a
//! crate's `Cargo.toml` declares.

use std::collections::BTreeMap;
use std::path::Path;

/// One crate root: a library (`src/lib.rs`) or a binary (`src/main.rs`) of a
/// package directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CrateRoot {
    /// The package directory from the workspace root, e.g. `crates/manifest`.
    pub package: String,
    /// The root file from the package directory, e.g. `src/lib.rs`.
    pub root: String,
}

impl CrateRoot {
    /// `crates/manifest` for a library, `crates/cli (src/main.rs)` for a binary.
    pub fn name(&self) -> String {
        if self.root == "src/lib.rs" {
            self.package.clone()
        } else {
            format!("{} ({})", self.package, self.root)
        }
    }
}

/// The package directories whose crates are checked.
pub const PACKAGE_GROUPS: &[&str] = &["crates", "functions"];

/// Every library and binary root under `crates/*/src` and `functions/*/src`,
/// sorted.
pub fn crate_roots(workspace: &Path) -> std::io::Result<Vec<CrateRoot>> {
    let mut roots = Vec::new();
    for group in PACKAGE_GROUPS {
        for entry in std::fs::read_dir(workspace.join(group))? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            let package = format!("{group}/{name}");
            for root in ["src/lib.rs", "src/main.rs"] {
                if workspace.join(&package).join(root).is_file() {
                    roots.push(CrateRoot {
                        package: package.clone(),
                        root: root.to_owned(),
                    });
                }
            }
        }
    }
    roots.sort();
    Ok(roots)
}

/// How a `Cargo.toml` declares one dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// Only built with a feature that turns it on.
    pub optional: bool,
}

/// The normal and build dependencies (for every target) a `Cargo.toml`
/// declares, by package name; dev-dependencies are left out (they build
/// only the crate's tests).
pub fn dependencies(manifest: &str) -> Result<BTreeMap<String, Dependency>, toml::de::Error> {
    let document: toml::Table = toml::from_str(manifest)?;
    let mut tables: Vec<&toml::Table> = dependency_tables(&document);
    if let Some(targets) = document.get("target").and_then(toml::Value::as_table) {
        for target in targets.values().filter_map(toml::Value::as_table) {
            tables.extend(dependency_tables(target));
        }
    }
    let mut found = BTreeMap::new();
    for (key, spec) in tables.into_iter().flatten() {
        let package = spec
            .get("package")
            .and_then(toml::Value::as_str)
            .unwrap_or(key.as_str());
        let optional = spec
            .get("optional")
            .and_then(toml::Value::as_bool)
            .unwrap_or(false);
        found.insert(package.to_owned(), Dependency { optional });
    }
    Ok(found)
}

fn dependency_tables(table: &toml::Table) -> Vec<&toml::Table> {
    ["dependencies", "build-dependencies"]
        .iter()
        .filter_map(|key| table.get(*key).and_then(toml::Value::as_table))
        .collect()
}
