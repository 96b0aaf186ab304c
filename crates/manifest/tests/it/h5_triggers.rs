//! Trigger bindings: every rule, and jq errors at exact positions inside TOML strings.

use std::path::PathBuf;

use astrolift_manifest::toml_walk::TomlFile;
use astrolift_manifest::triggers::{TriggerSpec, validate_triggers};

use crate::h5_support::render;

fn check(case: &str) -> (Vec<String>, Vec<TriggerSpec>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures5")
        .join(case)
        .join("astrolift.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{case}: {e}"));
    let (mut file, root) = TomlFile::parse("astrolift.toml", &text);
    let specs = validate_triggers(&mut file, root.get_ref());
    astrolift_manifest::diagnostic::sort(&mut file.diagnostics);
    (render(&file.diagnostics), specs)
}

#[test]
fn the_design_examples_are_valid() {
    let (diagnostics, specs) = check("trig_valid");
    assert!(diagnostics.is_empty(), "{diagnostics:#?}");
    assert_eq!(specs.len(), 6);
    insta::assert_yaml_snapshot!("trig_valid", specs);
}

#[test]
fn every_binding_rule_is_a_diagnostic() {
    let (diagnostics, specs) = check("trig_errors");
    insta::assert_yaml_snapshot!("trig_errors", diagnostics);
    let all = diagnostics.join("\n");
    assert!(!all.contains("hunter2"), "a plaintext secret was echoed");
    for code in [
        "trigger/invalid-name",
        "trigger/duplicate-name",
        "trigger/unknown-source",
        "trigger/events-not-allowed",
        "trigger/missing-events",
        "trigger/invalid-event",
        "trigger/missing-verify",
        "trigger/unknown-verify-kind",
        "trigger/verify-mismatch",
        "trigger/plaintext-secret",
        "trigger/untrusted-not-allowed",
        "trigger/invalid-tolerance",
        "toml/wrong-type",
        "toml/missing-key",
        "toml/unknown-key",
    ] {
        assert!(all.contains(&format!(" {code} ")), "{code} missing:\n{all}");
    }
    assert!(
        specs
            .iter()
            .all(|s| s.name != "Bad Name" || s.verify.is_some())
    );
}

/// The snippet of the fixture each diagnostic points at.
fn pointed_at(case: &str, diagnostics: &[String]) -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures5")
        .join(case)
        .join("astrolift.toml");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    diagnostics
        .iter()
        .map(|d| {
            let pos = d.split(' ').nth(2).unwrap_or_default();
            let mut parts = pos.rsplit(':');
            let (Some(end_col), Some(line_col_end_line), Some(line)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return String::new();
            };
            let (col, end_line) = line_col_end_line.split_once('-').unwrap_or_default();
            let (line, col, end_line, end_col): (usize, usize, usize, usize) = (
                line.parse().unwrap_or(1),
                col.parse().unwrap_or(1),
                end_line.parse().unwrap_or(1),
                end_col.parse().unwrap_or(1),
            );
            let text = lines.get(line - 1).copied().unwrap_or_default();
            let chars: Vec<char> = text.chars().collect();
            let stop = if end_line == line {
                end_col - 1
            } else {
                chars.len()
            };
            chars[(col - 1).min(chars.len())..stop.min(chars.len())]
                .iter()
                .collect()
        })
        .collect()
}

#[test]
fn jq_errors_point_inside_the_toml_string() {
    let (diagnostics, _) = check("trig_jq");
    let snippets = pointed_at("trig_jq", &diagnostics);
    insta::assert_yaml_snapshot!("trig_jq", (diagnostics.clone(), snippets.clone()));
    let expected = [
        ("literal", ""), // `|` at the end: error at the end of the program
        ("env", "env"),
        ("$ENV", "$ENV"),
        ("}", "}"),
        ("\n", ""),
        ("input", "input"),
        ("$__loc__", "$__loc__"),
    ];
    assert_eq!(diagnostics.len(), expected.len(), "{diagnostics:#?}");
    for ((_, want), (got, diagnostic)) in expected.iter().zip(snippets.iter().zip(&diagnostics)) {
        if !want.is_empty() {
            assert_eq!(got, want, "{diagnostic}");
        }
    }
}
