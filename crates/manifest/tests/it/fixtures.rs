//! Data-driven: every folder under `tests/fixtures/` is a repository. Each has
//! a `CASE.md` saying which rule it covers; its expected agents and
//! diagnostics are the snapshot `snapshots/it__fixtures__case@<folder>__CASE.md.snap`.

use crate::support::{to_json, validate_dir};

#[test]
fn case() {
    insta::glob!("../fixtures", "*/CASE.md", |case| {
        let dir = case.parent().unwrap_or(case);
        let validation = validate_dir(dir);
        insta::assert_json_snapshot!(to_json(&validation));
    });
}
