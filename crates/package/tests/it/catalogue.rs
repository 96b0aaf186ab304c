//! The packaging codes are documented in `docs/diagnostics.md`, and every
//! `package/` code documented there exists.

use std::collections::BTreeSet;

use astrolift_package::codes::CODES;

#[test]
fn package_codes_match_their_section_of_the_catalogue() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/diagnostics.md");
    let text = std::fs::read_to_string(&path).expect("docs/diagnostics.md is readable");
    let documented: BTreeSet<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("### `"))
        .filter_map(|rest| rest.split('`').next())
        .filter(|code| code.starts_with("package/"))
        .collect();
    let declared: BTreeSet<&str> = CODES.iter().map(|c| c.id).collect();
    assert_eq!(documented, declared);
}
