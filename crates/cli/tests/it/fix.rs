//! `astrolift validate --fix [--dry-run]` on every fixture of
//! `crates/manifest/tests/fixes/` (copied to a temporary directory): the dry
//! run prints the expected diff (snapshot) and writes nothing; the fix
//! leaves no finding of the fixture's rule; a second run changes nothing;
//! the SARIF log carries the fixes and stays valid.

use std::path::Path;

use crate::sarif_github::assert_github_accepts;
use crate::sarif_schema::assert_valid_sarif;
use crate::support::{Run, astrolift, copy_tree, json};

fn fixes_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifest/tests/fixes")
}

/// The rule a fixture's `CASE.md` names (`Rule: \`code\``), and its `Config:` paths.
fn case(dir: &Path) -> (Option<String>, Vec<String>) {
    let text = std::fs::read_to_string(dir.join("CASE.md")).unwrap_or_default();
    let field = |prefix: &str| -> Vec<String> {
        text.lines()
            .filter_map(|line| line.strip_prefix(prefix))
            .map(|rest| rest.trim().trim_matches('`').to_owned())
            .collect()
    };
    let rule = field("Rule:").into_iter().next().filter(|r| r != "none");
    (rule, field("Config:"))
}

/// Every file under `dir` with its bytes, sorted.
fn snapshot_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files);
    files.sort();
    files
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else {
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            files.push((relative, std::fs::read(&path).unwrap_or_default()));
        }
    }
}

fn validate(dir: &Path, configs: &[String], extra: &[&str]) -> Run {
    let mut args: Vec<String> = vec!["validate".into(), dir.display().to_string()];
    for config in configs {
        args.push("--config".into());
        args.push(config.clone());
    }
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    astrolift(args)
}

#[test]
fn every_fixture() {
    let mut cases: Vec<_> = std::fs::read_dir(fixes_dir())
        .expect("fixes fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("CASE.md").is_file())
        .collect();
    cases.sort();
    assert!(cases.len() >= 8, "fixtures missing: {cases:?}");
    for fixture in cases {
        let name = fixture
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        let (rule, configs) = case(&fixture);
        let temp = tempfile::tempdir().expect("tempdir");
        let dir = temp.path().join("repo");
        copy_tree(&fixture, &dir);
        let original = snapshot_files(&dir);

        let dry = validate(&dir, &configs, &["--fix", "--dry-run"]);
        assert_eq!(snapshot_files(&dir), original, "{name}: --dry-run wrote");
        let expected_code = if rule.is_some() { 1 } else { 0 };
        assert_eq!(dry.code, expected_code, "{name}: {}", dry.stderr);
        insta::assert_snapshot!(format!("dry_run@{name}"), dry.stdout);

        // The fixes travel in SARIF too, and GitHub's rules still hold.
        let sarif = json(&validate(&dir, &configs, &["--format", "sarif"]).stdout);
        assert_valid_sarif(&sarif);
        assert_github_accepts(&sarif);
        let with_fixes = sarif["runs"][0]["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r.get("fixes").is_some())
            .count();
        assert_eq!(with_fixes > 0, rule.is_some(), "{name}: fixes in SARIF");

        let fixed = validate(&dir, &configs, &["--fix", "--format", "json"]);
        let report = json(&fixed.stdout);
        if let Some(rule) = &rule {
            let left: Vec<_> = report["diagnostics"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["code"] == rule.as_str())
                .collect();
            assert!(left.is_empty(), "{name}: {rule} left after --fix: {left:?}");
            assert!(
                fixed.stderr.contains(&format!("[{rule}]")),
                "{name}: {}",
                fixed.stderr
            );
        }
        let after_first = snapshot_files(&dir);

        let second = validate(&dir, &configs, &["--fix", "--format", "json"]);
        assert!(
            second.stderr.contains("0 fixes applied in 0 files"),
            "{name}: {}",
            second.stderr
        );
        assert_eq!(
            snapshot_files(&dir),
            after_first,
            "{name}: the second run changed files"
        );
        let dry_again = validate(&dir, &configs, &["--fix", "--dry-run"]);
        assert_eq!(
            (dry_again.code, dry_again.stdout.as_str()),
            (0, ""),
            "{name}"
        );
    }
}

#[test]
fn dry_run_requires_fix() {
    let run = astrolift(["validate", ".", "--dry-run"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn dry_run_on_a_folder_of_repositories_says_why_nothing_is_fixed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    copy_tree(&examples, &dir.path().join("examples"));
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(["validate", "--fix", "--dry-run", "examples/"])
        .current_dir(dir.path())
        .env_remove("RUST_LOG")
        .output()
        .expect("the astrolift binary runs");
    let run = crate::support::run_of(output);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!(run.stderr);
    // The command it suggests runs as it is, from the same folder.
    let suggested = run.stderr.split('`').nth(1).expect("a suggested command");
    let args: Vec<&str> = suggested.split(' ').skip(1).collect();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_astrolift"))
        .args(&args)
        .current_dir(dir.path())
        .output()
        .expect("the astrolift binary runs");
    // A dry run of `examples/layers`: the diff of its packager's skill-name fix, exit 1.
    let again = crate::support::run_of(output);
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert!(
        again
            .stdout
            .starts_with("--- a/agents/packager/skills/packager-default/SKILL.md"),
        "{}",
        again.stdout
    );
}
