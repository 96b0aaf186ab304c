//! The brief: a Markdown file whose relative links to files inside its own
//! directory become the agent's context files (docs/reference.md §5.1, "Brief").

use std::ops::Range;

use pulldown_cmark::{Event, Parser, Tag};

use crate::diagnostic::{Code, Diagnostic, Severity};
use crate::files;
use crate::limits::Limits;
use crate::model::Brief;
use crate::paths;
use crate::position::LineIndex;
use crate::toml_walk::TomlFile;
use crate::tree::SourceTree;

pub const MISSING: Code = Code::new(
    "brief/missing",
    Severity::Error,
    "`brief` names a file that does not exist.",
);
pub const NOT_MARKDOWN: Code = Code::new(
    "brief/not-markdown",
    Severity::Error,
    "`brief` names a file that is not Markdown (`.md` or `.markdown`).",
);
pub const OUTSIDE_LINK: Code = Code::new(
    "brief/outside-link",
    Severity::Notice,
    "A relative link leaves the brief's directory, so it is not a context file.",
);
pub const MISSING_CONTEXT: Code = Code::new(
    "brief/missing-context",
    Severity::Error,
    "A relative link inside the brief's directory names a file that does not exist.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[&MISSING, &NOT_MARKDOWN, &OUTSIDE_LINK, &MISSING_CONTEXT];

/// Checks the manifest's `brief` value (already a normalized repo-relative
/// path) and reads the brief's context links. Problems with the reference
/// land on `range` in the manifest; problems with links land in the brief.
pub fn read_brief(
    file: &mut TomlFile<'_>,
    tree: &dyn SourceTree,
    limits: &Limits,
    path: &str,
    range: Range<usize>,
) -> Option<Brief> {
    if !tree.is_file(path) {
        let message = if tree.is_dir(path) {
            format!("brief `{path}` is a directory, not a Markdown file")
        } else {
            format!("brief `{path}` does not exist")
        };
        file.report(&MISSING, range, message).help =
            Some("paths are relative to the directory of astrolift.toml".to_owned());
        return None;
    }
    if !is_markdown(path) {
        file.report(
            &NOT_MARKDOWN,
            range,
            format!("brief `{path}` is not a Markdown file"),
        )
        .help = Some("point `brief` at a `.md` file, such as `brief/README.md`".to_owned());
        return None;
    }
    let text = files::read_text(tree, path, limits.manifest_file, &mut file.diagnostics)?;
    let context_files = context_links(tree, path, &text, &mut file.diagnostics);
    Some(Brief {
        path: path.to_owned(),
        context_files,
    })
}

fn is_markdown(path: &str) -> bool {
    let name = paths::file_name(path).to_ascii_lowercase();
    name.ends_with(".md") || name.ends_with(".markdown")
}

/// The repo-relative files that the brief's relative links name inside its
/// directory, in link order and de-duplicated.
fn context_links(
    tree: &dyn SourceTree,
    brief: &str,
    text: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let dir = paths::parent(brief);
    let index = LineIndex::new(text);
    let mut context = Vec::new();
    for (target, range) in links(text) {
        let Some(relative) = relative_target(&target) else {
            continue;
        };
        let span = index.span(range);
        let resolved = paths::resolve_lexically(dir, &relative)
            .filter(|p| !relative.starts_with('/') && paths::is_within(p, dir) && p != dir);
        let Some(resolved) = resolved else {
            diagnostics.push(
                Diagnostic::new(
                    &OUTSIDE_LINK,
                    brief,
                    span,
                    format!(
                        "link `{target}` leaves the brief's directory, so it is not a context file"
                    ),
                )
                .with_help("move the file next to the brief to make it a context file"),
            );
            continue;
        };
        if resolved == brief || context.contains(&resolved) {
            continue;
        }
        if tree.is_file(&resolved) {
            context.push(resolved);
        } else {
            diagnostics.push(
                Diagnostic::new(
                    &MISSING_CONTEXT,
                    brief,
                    span,
                    format!("link `{target}` names `{resolved}`, which is not a file"),
                )
                .with_help("fix the link, or add the file next to the brief"),
            );
        }
    }
    context
}

/// Every link and image destination with its byte range in the Markdown.
pub fn links(text: &str) -> Vec<(String, Range<usize>)> {
    Parser::new(text)
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some((dest_url.to_string(), range))
            }
            _ => None,
        })
        .collect()
}

/// The path part of a relative link, percent-decoded; `None` for anchors,
/// URLs with a scheme, and protocol-relative URLs.
pub fn relative_target(target: &str) -> Option<String> {
    let path = target.split(['#', '?']).next().unwrap_or("");
    if path.is_empty() || path.starts_with("//") || has_scheme(path) {
        return None;
    }
    Some(percent_decode(path))
}

fn has_scheme(url: &str) -> bool {
    match url.split_once(':') {
        Some((scheme, _)) => {
            scheme.len() > 1
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// Decodes `%XX` escapes, as Markdown link destinations use for spaces.
/// Written by hand: one loop, not worth a dependency. Invalid escapes stay as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_link_targets() {
        assert_eq!(relative_target("notes.md#top").as_deref(), Some("notes.md"));
        assert_eq!(
            relative_target("my%20file.md").as_deref(),
            Some("my file.md")
        );
        assert_eq!(relative_target("https://x.y/z"), None);
        assert_eq!(relative_target("mailto:a@b"), None);
        assert_eq!(relative_target("#anchor"), None);
        assert_eq!(relative_target("//cdn/x"), None);
    }
}
