//! The diagnostic catalogue: unique kebab-case `area/name` ids, each documented
//! in `docs/diagnostics.md`, and nothing documented that the code cannot emit.

use std::collections::BTreeSet;

use astrolift_manifest::catalogue;

use crate::support::crate_dir;

fn is_kebab(part: &str) -> bool {
    !part.is_empty()
        && part
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !part.starts_with('-')
        && !part.ends_with('-')
        && !part.contains("--")
}

#[test]
fn ids_are_unique_kebab_case_area_slash_name() {
    let mut seen = BTreeSet::new();
    for code in catalogue() {
        let parts: Vec<_> = code.id.split('/').collect();
        assert!(
            parts.len() == 2 && parts.iter().all(|p| is_kebab(p)),
            "`{}` is not kebab-case `area/name`",
            code.id
        );
        assert!(seen.insert(code.id), "`{}` is declared twice", code.id);
        assert!(!code.summary.is_empty(), "`{}` has no summary", code.id);
    }
}

/// The codes `docs/diagnostics.md` documents: every `### `area/name`` heading,
/// except the `package/` area, which the package crate checks against its own codes.
fn documented() -> BTreeSet<String> {
    let path = crate_dir().join("../../docs/diagnostics.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter_map(|line| line.strip_prefix("### `"))
        .filter_map(|rest| rest.split('`').next())
        .filter(|code| !code.starts_with("package/"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_code_is_documented_and_every_documented_code_exists() {
    let documented = documented();
    let declared: BTreeSet<String> = catalogue().iter().map(|c| c.id.to_owned()).collect();
    let undocumented: Vec<_> = declared.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&declared).collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/diagnostics.md: {undocumented:?}"
    );
    assert!(
        unknown.is_empty(),
        "documented but not in catalogue(): {unknown:?}"
    );
}

#[test]
fn documented_severity_matches_the_code() {
    let path = crate_dir().join("../../docs/diagnostics.md");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    for code in catalogue() {
        let heading = format!("### `{}`", code.id);
        let Some(start) = text.find(&heading) else {
            continue;
        };
        let section = &text[start + heading.len()..];
        let section = &section[..section.find("\n### ").unwrap_or(section.len())];
        let severity = format!("Severity: **{}**", code.severity);
        assert!(
            section.contains(&severity),
            "`{}`: expected `{severity}` in its section",
            code.id
        );
    }
}
