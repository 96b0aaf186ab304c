//! GitHub code scanning's ingestion rules, checked as properties of real
//! `--format sarif` output (no network tool in CI). The rules are those of the
//! SARIF Multitool's GitHub rule set (`validate --rule-kind Ghas`), named by
//! their ids:
//!
//! - GH1011: `$schema` is the final SARIF 2.1.0 schema.
//! - GH1013: the log has `version` 2.1.0 and a `runs` array.
//! - GH1014: each run has a `tool` and a `results` array.
//! - GH1018: the tool has a `driver` with a `name` and a `rules` array.
//! - GH2012: each rule has an `id`, `shortDescription.text`,
//!   `fullDescription.text` and `help.text`.
//! - GH1015: each result has `message.text`, a non-empty `locations` array
//!   and `partialFingerprints`.
//! - GH1016/GH1017/GH1003: each location has a `physicalLocation` with an
//!   `artifactLocation` and a `region` with `startLine` ≥ 1, its end not
//!   before its start.
//! - GH1005: artifact URIs are relative (no scheme, not absolute).
//! - GH1004: at most 5 runs, 1000 rules per run, 10 locations per result.
//! - GH1007: messages are plain text, not `id`/`arguments` templates.
//!
//! Beyond the Multitool: `ruleIndex` names the rule of `ruleId`, `helpUri`
//! points at an anchor `docs/diagnostics.md` has, and fingerprints stay the
//! same across runs and across lines added above a finding.

use std::collections::BTreeSet;
use std::path::Path;

use astrolift_cli::render::{Report, rule_docs, sarif};
use astrolift_manifest::{Diagnostic, MemTree, Span, catalogue};
use serde_json::Value;

use crate::sarif_schema::assert_valid_sarif;
use crate::support::{astrolift, copy_tree, fixture, json, validate_fixture};

const FIXTURES: &[&str] = &["valid-single", "warnings-only", "no-agents", "errors"];

/// Every property of the module docs; panics with all the violations.
pub fn assert_github_accepts(log: &Value) {
    let mut problems = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            problems.push(what);
        }
    };
    check(log["$schema"] == sarif::SCHEMA_URI, "GH1011 $schema".into());
    check(log["version"] == "2.1.0", "GH1013 version".into());
    let runs = log["runs"].as_array().map_or(&[][..], Vec::as_slice);
    check(
        !runs.is_empty() && runs.len() <= 5,
        "GH1013/GH1004 runs".into(),
    );
    for run in runs {
        let driver = &run["tool"]["driver"];
        check(is_text(&driver["name"]), "GH1018 driver.name".into());
        let rules = driver["rules"].as_array().map_or(&[][..], Vec::as_slice);
        check(driver["rules"].is_array(), "GH1018 driver.rules".into());
        check(rules.len() <= 1000, "GH1004 rules per run".into());
        for rule in rules {
            let id = rule["id"].as_str().unwrap_or("<no id>");
            for field in ["shortDescription", "fullDescription", "help"] {
                check(
                    is_text(&rule[field]["text"]),
                    format!("GH2012 {id}: {field}.text"),
                );
            }
            check(
                is_text(&rule["help"]["markdown"]),
                format!("{id}: help.markdown"),
            );
            check(
                has_documented_anchor(rule["helpUri"].as_str().unwrap_or_default()),
                format!("{id}: helpUri {} has no anchor", rule["helpUri"]),
            );
        }
        check(run["results"].is_array(), "GH1014 results".into());
        for result in run["results"].as_array().map_or(&[][..], Vec::as_slice) {
            check_result(result, rules, &mut check);
        }
    }
    assert!(
        problems.is_empty(),
        "GitHub would reject this SARIF:\n{}",
        problems.join("\n")
    );
}

fn check_result(result: &Value, rules: &[Value], check: &mut impl FnMut(bool, String)) {
    let id = result["ruleId"].as_str().unwrap_or("<no ruleId>");
    check(
        is_text(&result["message"]["text"]),
        format!("GH1015 {id}: message.text"),
    );
    check(
        result["message"].get("id").is_none() && result["message"].get("arguments").is_none(),
        format!("GH1007 {id}: templated message"),
    );
    let fingerprints = result["partialFingerprints"].as_object();
    check(
        fingerprints.is_some_and(|f| !f.is_empty() && f.values().all(is_text)),
        format!("GH1015 {id}: partialFingerprints"),
    );
    let index = result["ruleIndex"]
        .as_u64()
        .and_then(|i| usize::try_from(i).ok());
    check(
        index
            .and_then(|i| rules.get(i))
            .is_some_and(|rule| rule["id"] == id),
        format!("{id}: ruleIndex does not name its rule"),
    );
    let locations = result["locations"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    check(
        !locations.is_empty() && locations.len() <= 10,
        format!("GH1015/GH1004 {id}: locations"),
    );
    for location in locations {
        let physical = &location["physicalLocation"];
        let uri = physical["artifactLocation"]["uri"]
            .as_str()
            .unwrap_or_default();
        check(
            !uri.is_empty() && !uri.contains("://") && !uri.starts_with('/'),
            format!("GH1005/GH1017 {id}: artifactLocation.uri {uri:?}"),
        );
        let region = &physical["region"];
        let start_line = region["startLine"].as_u64().unwrap_or(0);
        check(start_line >= 1, format!("GH1003 {id}: region.startLine"));
        let end_line = region["endLine"].as_u64().unwrap_or(start_line);
        check(
            end_line >= start_line,
            format!("GH1017 {id}: endLine before startLine"),
        );
        if end_line == start_line {
            let start_column = region["startColumn"].as_u64().unwrap_or(1);
            let end_column = region["endColumn"].as_u64().unwrap_or(start_column);
            check(
                end_column >= start_column,
                format!("GH1017 {id}: endColumn"),
            );
        }
    }
}

fn is_text(value: &Value) -> bool {
    value.as_str().is_some_and(|s| !s.trim().is_empty())
}

/// The GitHub anchor of every heading of `docs/diagnostics.md`, with the
/// duplicates (which GitHub would suffix with `-1`, breaking links).
fn heading_anchors() -> (BTreeSet<String>, Vec<String>) {
    let mut anchors = BTreeSet::new();
    let mut duplicates = Vec::new();
    let mut in_fence = false;
    for line in rule_docs::DIAGNOSTICS_MD.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
        }
        let hashes = line.bytes().take_while(|&b| b == b'#').count();
        if in_fence || hashes == 0 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let anchor = rule_docs::anchor(line[hashes..].trim());
        if !anchors.insert(anchor.clone()) {
            duplicates.push(anchor);
        }
    }
    (anchors, duplicates)
}

fn has_documented_anchor(help_uri: &str) -> bool {
    let Some(anchor) = help_uri
        .strip_prefix(rule_docs::DIAGNOSTICS_URL)
        .and_then(|rest| rest.strip_prefix('#'))
    else {
        return false;
    };
    heading_anchors().0.contains(anchor)
}

fn all_codes() -> Vec<&'static astrolift_manifest::Code> {
    catalogue()
        .into_iter()
        .chain(astrolift_package::codes::CODES.iter().copied())
        .collect()
}

#[test]
fn every_fixture_passes_githubs_rules() {
    for name in FIXTURES {
        let run = validate_fixture(name, "sarif");
        assert_github_accepts(&json(&run.stdout));
    }
}

#[test]
fn every_code_has_a_section_an_anchor_and_a_complete_rule() {
    let (anchors, duplicates) = heading_anchors();
    assert!(
        duplicates.is_empty(),
        "headings with the same anchor: {duplicates:?}"
    );
    let diagnostics: Vec<Diagnostic> = all_codes()
        .into_iter()
        .map(|code| {
            let doc = rule_docs::lookup(code.id)
                .unwrap_or_else(|| panic!("`{}` has no section in docs/diagnostics.md", code.id));
            assert!(
                !doc.description.is_empty(),
                "`{}` has no description",
                code.id
            );
            assert!(doc.example.is_some(), "`{}` has no example", code.id);
            assert!(
                anchors.contains(&rule_docs::anchor(code.id)),
                "`{}`: no heading with anchor #{}",
                code.id,
                rule_docs::anchor(code.id)
            );
            Diagnostic::new(code, "astrolift.toml", Span::FILE, "x")
        })
        .collect();
    let log = sarif::log(
        &Report {
            agents: &[],
            diagnostics: &diagnostics,
        },
        &MemTree::default(),
    );
    assert_valid_sarif(&log);
    assert_github_accepts(&log);
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(rules.len(), diagnostics.len(), "one rule per code");
}

#[test]
fn a_rule_carries_its_section_of_the_catalogue() {
    let run = validate_fixture("errors", "sarif");
    let log = json(&run.stdout);
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let rule = rules
        .iter()
        .find(|r| r["id"] == "manifest/plaintext-secret")
        .expect("the errors fixture has a plaintext secret");
    let doc = rule_docs::lookup("manifest/plaintext-secret").expect("documented");
    assert_eq!(rule["fullDescription"]["text"], doc.description);
    assert_eq!(rule["help"]["markdown"], doc.markdown);
    assert_eq!(
        rule["helpUri"],
        format!("{}#manifestplaintext-secret", rule_docs::DIAGNOSTICS_URL)
    );
}

/// `(ruleId, startLine, fingerprint)` of every result.
fn findings(dir: &Path) -> Vec<(String, u64, String)> {
    let run = astrolift([
        "validate".as_ref(),
        dir.as_os_str(),
        "--format".as_ref(),
        "sarif".as_ref(),
    ]);
    let log = json(&run.stdout);
    let results = log["runs"][0]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    results
        .iter()
        .map(|r| {
            (
                r["ruleId"].as_str().unwrap_or_default().to_owned(),
                r["locations"][0]["physicalLocation"]["region"]["startLine"]
                    .as_u64()
                    .unwrap_or(0),
                r["partialFingerprints"][sarif::FINGERPRINT_KEY]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

fn fingerprints(findings: &[(String, u64, String)]) -> BTreeSet<String> {
    findings.iter().map(|(_, _, f)| f.clone()).collect()
}

#[test]
fn fingerprints_survive_reruns_and_lines_added_above() {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(&fixture("errors"), dir.path());
    let manifest = dir.path().join("astrolift.toml");
    let original = std::fs::read_to_string(&manifest).expect("manifest");

    let first = findings(dir.path());
    assert!(
        first.len() >= 2,
        "the errors fixture has several findings: {first:?}"
    );
    assert_eq!(findings(dir.path()), first, "a rerun gives the same output");
    let distinct = fingerprints(&first);
    assert_eq!(
        distinct.len(),
        first.len(),
        "each finding has its own fingerprint"
    );

    std::fs::write(&manifest, format!("# a comment\n\n{original}")).expect("write");
    let shifted = findings(dir.path());
    assert_eq!(
        fingerprints(&shifted),
        distinct,
        "two lines added above change nothing"
    );
    let moved = shifted
        .iter()
        .filter(|(_, line, _)| !first.iter().any(|(_, l, _)| l == line))
        .count();
    assert!(moved > 0, "the findings did move: {shifted:?}");

    let edited = original.replace("max_retrys = 3", "max_retrys = 4");
    assert_ne!(edited, original, "the fixture has `max_retrys = 3`");
    std::fs::write(&manifest, edited).expect("write");
    let after_edit = fingerprints(&findings(dir.path()));
    assert_eq!(
        distinct.difference(&after_edit).count(),
        1,
        "editing the offending line renews only its finding's fingerprint"
    );
}

#[test]
fn no_fingerprint_depends_on_a_secret_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(&fixture("errors"), dir.path());
    let manifest = dir.path().join("astrolift.toml");
    let original = std::fs::read_to_string(&manifest).expect("manifest");
    let before = findings(dir.path());
    let other = original.replace("sk-ant-plaintext-value", "sk-ant-differents-xxxx");
    assert_ne!(other, original, "the fixture holds the secret value");
    std::fs::write(&manifest, other).expect("write");
    assert_eq!(
        findings(dir.path()),
        before,
        "a secret of the same length is masked alike"
    );
}
