//! Data-driven fixes: every folder under `tests/fixes/` is a repository whose
//! `CASE.md` names the rule it covers (`Rule: \`code\``, or `Rule: none` for
//! findings that must carry no fix) and, optionally, config manifests to
//! validate (`Config: \`path\``). For each: the fixes the rule offers and the
//! fixed files are the snapshot `snapshots/it__fixes__case@<folder>__CASE.md.snap`;
//! the fixed tree has no finding of that rule left, and fixing it again
//! changes nothing.

use std::path::Path;

use astrolift_manifest::fix::{Fixed, fix_tree};
use astrolift_manifest::{
    Diagnostic, DirTree, Limits, MemTree, SourceTree, ValidateOptions, validate_repository,
};
use serde_json::{Value, json};

struct Case {
    rule: Option<String>,
    options: ValidateOptions,
}

fn read_case(case: &Path) -> Case {
    let text = std::fs::read_to_string(case).unwrap_or_default();
    let quoted = |prefix: &str| -> Vec<String> {
        text.lines()
            .filter_map(|line| line.strip_prefix(prefix))
            .map(|rest| rest.trim().trim_matches('`').to_owned())
            .collect()
    };
    let rule = quoted("Rule:").into_iter().next().filter(|r| r != "none");
    let options = ValidateOptions {
        config_paths: quoted("Config:"),
        ..ValidateOptions::default()
    };
    Case { rule, options }
}

fn fix(tree: &dyn SourceTree, options: &ValidateOptions) -> Fixed {
    let validate = |tree: &dyn SourceTree| validate_repository(tree, options).diagnostics;
    match fix_tree(tree, Limits::DEFAULT.manifest_file, validate) {
        Ok(fixed) => fixed,
        Err(error) => panic!("fixing failed: {error}"),
    }
}

fn of_rule<'d>(diagnostics: &'d [Diagnostic], rule: &str) -> Vec<&'d Diagnostic> {
    diagnostics.iter().filter(|d| d.code == rule).collect()
}

/// The fixed repository, in memory: the original files with the changed ones replaced.
fn fixed_tree(dir: &DirTree, fixed: &Fixed) -> MemTree {
    let mut tree = MemTree::new();
    for entry in dir.entries() {
        let bytes = match fixed.files.get(&entry.path) {
            Some(changed) => changed.after.clone().into_bytes(),
            None => dir
                .read(&entry.path, u64::MAX)
                .map(|b| b.into_owned())
                .unwrap_or_default(),
        };
        tree.insert(entry.path.clone(), bytes, entry.executable);
    }
    tree
}

#[test]
fn case() {
    insta::glob!("../fixes", "*/CASE.md", |case| {
        let dir = case.parent().unwrap_or(case);
        let Case { rule, options } = read_case(case);
        let tree = DirTree::open(dir, Limits::DEFAULT.tarball_files)
            .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()));
        let before = validate_repository(&tree, &options).diagnostics;
        let fixed = fix(&tree, &options);
        let offered: Vec<&Diagnostic> = match &rule {
            Some(rule) => of_rule(&before, rule),
            None => before.iter().collect(),
        };
        let with_fix: Vec<&Diagnostic> = offered
            .iter()
            .copied()
            .filter(|d| d.fix.is_some())
            .collect();
        match &rule {
            Some(rule) => {
                assert!(!with_fix.is_empty(), "{rule}: no fix offered");
                let left: Vec<_> = of_rule(&fixed.diagnostics, rule);
                assert!(
                    left.is_empty(),
                    "{rule} still reported after fixing: {left:#?}"
                );
            }
            None => assert!(with_fix.is_empty(), "a fix was offered: {with_fix:#?}"),
        }
        let again = fix(&fixed_tree(&tree, &fixed), &options);
        assert!(
            again.files.is_empty(),
            "a second run changed {:?}",
            again.files.keys()
        );
        let without_fix: Vec<String> = offered
            .iter()
            .filter(|d| d.fix.is_none())
            .map(|d| format!("{}:{} {}", d.path, d.span.line, d.code))
            .collect();
        insta::assert_json_snapshot!(snapshot(&with_fix, &without_fix, &fixed));
    });
}

fn snapshot(with_fix: &[&Diagnostic], without_fix: &[String], fixed: &Fixed) -> Value {
    let files: serde_json::Map<String, Value> = fixed
        .files
        .iter()
        .map(|(path, changed)| (path.clone(), Value::String(changed.after.clone())))
        .collect();
    json!({ "diagnostics": with_fix, "without_fix": without_fix, "fixed": files })
}
