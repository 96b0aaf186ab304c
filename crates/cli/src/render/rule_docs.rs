//! Each diagnostic code's documentation, as `docs/diagnostics.md` writes it.
//!
//! That file is the one place a code's description and example are written:
//! it is compiled into the binary (`include_str!`) and cut into one section
//! per `### `code`` heading, so the SARIF rule descriptors (`fullDescription`,
//! `help`) and the file a reader opens never disagree. A test checks that
//! every code of the catalogue has a section here.
//!
//! Each section is linked by its heading's GitHub anchor: GitHub lower-cases
//! a heading's text, drops every character that is not a letter, digit,
//! space, `-` or `_`, and turns spaces into `-`. So `toml/syntax` is
//! `#tomlsyntax` and `manifest/plaintext-secret` is
//! `#manifestplaintext-secret` (`astrolift_manifest::diagnostic::heading_anchor`,
//! which the check run's links use too).

/// `docs/diagnostics.md`, as built into this binary.
pub const DIAGNOSTICS_MD: &str = include_str!("../../../../docs/diagnostics.md");

/// Where `docs/diagnostics.md` is published; rule `helpUri`s point into it.
pub use astrolift_manifest::diagnostic::DIAGNOSTICS_URL;

/// One code's section of `docs/diagnostics.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeDoc {
    /// The section's Markdown: what the code means, then its example.
    pub markdown: &'static str,
    /// The prose before the example, without the `Severity: **…**.` lead.
    pub description: &'static str,
    /// The body of the example's fenced block, if the section has one.
    pub example: Option<&'static str>,
}

/// The section of `id`, if `docs/diagnostics.md` documents it.
pub fn lookup(id: &str) -> Option<CodeDoc> {
    sections()
        .find(|(code, _)| *code == id)
        .map(|(_, body)| CodeDoc::of(body))
}

/// Every documented code with its section's Markdown, in file order.
pub fn sections() -> impl Iterator<Item = (&'static str, &'static str)> {
    DIAGNOSTICS_MD.split("\n### `").skip(1).filter_map(|chunk| {
        let (code, rest) = chunk.split_once('`')?;
        let (_, body) = rest.split_once('\n').unwrap_or((rest, ""));
        // A section ends at the next heading of any level.
        let end = body.find("\n## ").unwrap_or(body.len());
        Some((code, body[..end].trim()))
    })
}

/// GitHub's anchor for a heading's text (see the module docs).
pub use astrolift_manifest::diagnostic::heading_anchor as anchor;

/// The URL of `id`'s section of `docs/diagnostics.md`.
pub fn help_uri(id: &str) -> String {
    astrolift_manifest::diagnostic::doc_url(DIAGNOSTICS_URL, id)
}

impl CodeDoc {
    fn of(markdown: &'static str) -> Self {
        let (prose, example) = match markdown.split_once("\n```") {
            Some((prose, fenced)) => {
                // The fence's info string (`toml`, `text`, …) ends its first line.
                let body = fenced.split_once('\n').map_or("", |(_, b)| b);
                let body = match body.strip_prefix("```") {
                    Some(_) => "",
                    None => body.split_once("\n```").map_or(body, |(b, _)| b),
                };
                (prose, Some(body.trim_end()))
            }
            None => (markdown, None),
        };
        let prose = prose.trim();
        let description = prose
            .strip_prefix("Severity: **")
            .and_then(|rest| rest.split_once("**."))
            .map_or(prose, |(_, after)| after.trim());
        Self {
            markdown,
            description,
            example,
        }
    }

    /// Plain text: the description, then the example indented.
    pub fn text(&self) -> String {
        let mut text = self.description.to_owned();
        if let Some(example) = self.example.filter(|e| !e.trim().is_empty()) {
            text.push_str("\n\nExample:\n");
            for line in example.lines() {
                text.push_str("\n    ");
                text.push_str(line);
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_follow_github() {
        assert_eq!(anchor("toml/syntax"), "tomlsyntax");
        assert_eq!(
            anchor("manifest/plaintext-secret"),
            "manifestplaintext-secret"
        );
        assert_eq!(
            anchor("Trigger bindings (`triggers.rs`)"),
            "trigger-bindings-triggersrs"
        );
    }

    #[test]
    fn a_section_splits_into_description_and_example() {
        let doc = lookup("toml/unknown-key").expect("documented");
        assert!(
            doc.description
                .starts_with("A key that the format does not define.")
        );
        assert!(!doc.description.contains("Severity"));
        assert_eq!(
            doc.example,
            Some("breif = \"brief/README.md\"   # did you mean `brief`?")
        );
        assert!(
            doc.text()
                .ends_with("\n    breif = \"brief/README.md\"   # did you mean `brief`?")
        );
        assert!(doc.markdown.starts_with("Severity: **error**."));
        assert!(doc.markdown.ends_with("```"));
    }
}
