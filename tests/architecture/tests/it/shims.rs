//! docs/operations.md, "Compatibility shims", names the code that reads each
//! record shape older builds wrote: every `path`: `item` it names must exist,
//! so a shim renamed or removed without its row fails here.

use crate::workspace_root;

/// The section's text, up to the next `## ` heading.
fn section(operations: &str) -> Option<&str> {
    let start = operations.find("\n## Compatibility shims\n")? + 1;
    let rest = &operations[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |at| at + 3);
    Some(&rest[..end])
}

/// Each "`crates/….rs`: `item`" of `text`: a path and the item named right after it.
fn named_items(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('`') {
        rest = &rest[at + 1..];
        let Some(end) = rest.find('`') else { break };
        let quoted = &rest[..end];
        rest = &rest[end + 1..];
        if !quoted.ends_with(".rs") || quoted.contains(' ') {
            continue;
        }
        let Some(after) = rest.strip_prefix(": `") else {
            continue;
        };
        if let Some(close) = after.find('`') {
            found.push((quoted.to_owned(), after[..close].to_owned()));
        }
    }
    found
}

/// Whether `source` defines `item` (its last `::` segment) as a function, type or constant.
fn defines(source: &str, item: &str) -> bool {
    let name = item.rsplit("::").next().unwrap_or(item);
    ["fn", "struct", "enum", "const", "trait"]
        .iter()
        .any(|kind| {
            let definition = format!("{kind} {name}");
            source.match_indices(&definition).any(|(at, _)| {
                let next = source[at + definition.len()..].chars().next();
                !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
}

#[test]
fn compatibility_shims_name_code_that_exists() {
    let root = workspace_root();
    let operations = std::fs::read_to_string(root.join("docs/operations.md")).expect("reads");
    let section = section(&operations).expect("docs/operations.md has \"Compatibility shims\"");
    let named = named_items(section);
    assert!(named.len() >= 10, "too few `path`: `item` pairs: {named:?}");
    let mut missing = Vec::new();
    for (path, item) in &named {
        match std::fs::read_to_string(root.join(path)) {
            Ok(source) if defines(&source, item) => {}
            Ok(_) => missing.push(format!("{path}: {item} is not defined there")),
            Err(_) => missing.push(format!("{path}: no such file")),
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_parser_reads_paths_and_items() {
    let text = "| x | `crates/a.rs`: `A::f` (`G`), and `g`; `crates/b.rs` | `crates/c.rs`: `h` |";
    assert_eq!(
        named_items(text),
        [
            ("crates/a.rs".to_owned(), "A::f".to_owned()),
            ("crates/c.rs".to_owned(), "h".to_owned()),
        ]
    );
    assert!(defines("pub fn f() {}", "A::f"));
    assert!(!defines("fn fx() {}", "f"));
}
