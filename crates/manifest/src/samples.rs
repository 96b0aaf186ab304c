//! Trigger samples: the folder a `[[triggers]]` entry names with `samples = "PATH"`
//! (docs/reference.md §5.5), holding `NAME.json` requests, each with an optional
//! `NAME.expected.json`.
//!
//! - A sample is `{"headers": {…}, "body": …}`: `body` (any JSON value) is required,
//!   `headers` (an object of strings) is optional, and no other key is allowed. Header
//!   names are compared case-insensitively, so they are kept lowercased.
//! - An expected file is the payload the sample must map to (an object; `null` or `{}`
//!   is the empty payload), or exactly `{"filtered": true}`: the filter drops it.
//! - A sample or expected file over [`MAX_SAMPLE_BYTES`] is refused by its listed size,
//!   before it is read; a folder holds at most [`MAX_SAMPLES`] samples (counted from the
//!   tree's listing, never by reading).
//!
//! Pure: this module only lists and reads the [`SourceTree`]. The samples are evaluated
//! by `astrolift-trigger` (`samples::check_samples`), in the jq sandbox.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::diagnostic::{Code, Diagnostic, Severity, Span};
use crate::paths;
use crate::tree::{FileEntry, ReadError, SourceTree};

/// The most samples one `samples` folder may hold; exactly this many is accepted.
pub const MAX_SAMPLES: usize = 100;
/// The largest sample or expected file, in bytes (256 KiB); exactly this size is accepted.
pub const MAX_SAMPLE_BYTES: u64 = 256 * 1024;
/// How a sample's file name ends.
pub const SAMPLE_SUFFIX: &str = ".json";
/// How a sample's expected file's name ends (`NAME.expected.json` pins `NAME.json`).
pub const EXPECTED_SUFFIX: &str = ".expected.json";

pub const INVALID_SAMPLE: Code = Code::new(
    "trigger/invalid-sample",
    Severity::Error,
    "A sample request or its expected file that cannot be read: over 256 KiB, not JSON, or not of the sample's shape.",
);
pub const ORPHAN_EXPECTED: Code = Code::new(
    "trigger/orphan-expected",
    Severity::Warning,
    "A `NAME.expected.json` in a samples folder without its `NAME.json`: it pins nothing.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[&INVALID_SAMPLE, &ORPHAN_EXPECTED];

/// One sample of a folder, as listed: nothing is read yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleFile {
    /// `NAME` of `NAME.json`.
    pub name: String,
    /// Repo-relative path of `NAME.json`.
    pub path: String,
    /// Repo-relative path of `NAME.expected.json`, when the folder has one.
    pub expected_path: Option<String>,
}

/// One sample, read and parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// Repo-relative path of `NAME.json`.
    pub path: String,
    /// Header names lowercased (names are case-insensitive), values as written.
    pub headers: BTreeMap<String, String>,
    /// The body as compact JSON text: the bytes a sender would post.
    pub body: String,
    pub expected: Option<Expected>,
}

/// What a sample's `NAME.expected.json` pins.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    /// Repo-relative path of `NAME.expected.json`.
    pub path: String,
    pub outcome: ExpectedOutcome,
}

/// The outcome an expected file pins.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpectedOutcome {
    /// `{"filtered": true}`: the filter drops the request.
    Filtered,
    /// The payload it dispatches with; `None` is the empty payload (`null` or `{}`).
    Payload(Option<Value>),
}

/// The repo-relative folder `samples_path` names, relative to `manifest_dir`; `None`
/// when it climbs above the repository's root (`..` components are resolved).
pub fn sample_folder(manifest_dir: &str, samples_path: &str) -> Option<String> {
    paths::resolve_lexically(manifest_dir, samples_path)
}

/// The samples of the folder `samples_path` (relative to `manifest_dir`), ordered by
/// name; empty when the folder climbs above the root or holds none. Only the files
/// directly in the folder count.
pub fn sample_files(
    tree: &dyn SourceTree,
    manifest_dir: &str,
    samples_path: &str,
) -> Vec<SampleFile> {
    let Some(folder) = sample_folder(manifest_dir, samples_path) else {
        return Vec::new();
    };
    let listing = Listing::of(tree, &folder);
    listing
        .samples
        .iter()
        .map(|(name, entry)| SampleFile {
            name: (*name).to_owned(),
            path: entry.path.clone(),
            expected_path: listing.expected.get(name).map(|e| e.path.clone()),
        })
        .collect()
}

/// How many samples the repo-relative `folder` holds, from the tree's listing.
pub fn count_samples(tree: &dyn SourceTree, folder: &str) -> usize {
    Listing::of(tree, folder).samples.len()
}

/// One `trigger/orphan-expected` warning for each `NAME.expected.json` of the
/// repo-relative `folder` whose `NAME.json` is not there.
pub fn orphan_expected(tree: &dyn SourceTree, folder: &str) -> Vec<Diagnostic> {
    let listing = Listing::of(tree, folder);
    listing
        .expected
        .iter()
        .filter(|(name, _)| !listing.samples.contains_key(*name))
        .map(|(name, entry)| {
            let sample = format!("{name}{SAMPLE_SUFFIX}");
            Diagnostic::new(
                &ORPHAN_EXPECTED,
                entry.path.as_str(),
                Span::FILE,
                format!(
                    "`{}` pins no sample: there is no `{sample}` next to it",
                    paths::file_name(&entry.path)
                ),
            )
            .with_help(format!(
                "add the request as `{sample}`, or remove this file"
            ))
        })
        .collect()
}

/// The files directly in one folder, by sample name.
struct Listing<'t> {
    samples: BTreeMap<&'t str, &'t FileEntry>,
    expected: BTreeMap<&'t str, &'t FileEntry>,
}

impl<'t> Listing<'t> {
    fn of(tree: &'t dyn SourceTree, folder: &str) -> Self {
        let mut listing = Listing {
            samples: BTreeMap::new(),
            expected: BTreeMap::new(),
        };
        let skip = if folder.is_empty() {
            0
        } else {
            folder.len() + 1
        };
        for entry in tree.entries_under(folder) {
            let Some(file) = entry.path.get(skip..).filter(|rest| !rest.contains('/')) else {
                continue;
            };
            if let Some(name) = file.strip_suffix(EXPECTED_SUFFIX) {
                listing.expected.insert(name, entry);
            } else if let Some(name) = file.strip_suffix(SAMPLE_SUFFIX)
                && !name.is_empty()
            {
                listing.samples.insert(name, entry);
            }
        }
        listing
    }
}

/// Reads and parses `file` and its expected file. The first problem of either is the
/// `trigger/invalid-sample` error on that file (boxed: a diagnostic is large).
pub fn read_sample(tree: &dyn SourceTree, file: &SampleFile) -> Result<Sample, Box<Diagnostic>> {
    let value = read_json(tree, &file.path)?;
    let invalid = |message: String| invalid(&file.path, Span::FILE, message);
    let Value::Object(mut sample) = value else {
        return Err(invalid(format!(
            "sample `{}` is not an object `{{\"headers\": {{…}}, \"body\": …}}`",
            file.name
        )));
    };
    if let Some(key) = sample.keys().find(|k| *k != "headers" && *k != "body") {
        return Err(invalid(format!(
            "sample `{}` has the key `{key}`; a sample has only `headers` and `body`",
            file.name
        )));
    }
    let Some(body) = sample.remove("body") else {
        return Err(invalid(format!(
            "sample `{}` has no `body`: write the request's JSON body as `\"body\": …`",
            file.name
        )));
    };
    let headers = match sample.remove("headers") {
        None => BTreeMap::new(),
        Some(headers) => sample_headers(&file.name, headers).map_err(invalid)?,
    };
    let expected = match &file.expected_path {
        None => None,
        Some(path) => Some(Expected {
            path: path.clone(),
            outcome: expected_outcome(tree, path)?,
        }),
    };
    Ok(Sample {
        name: file.name.clone(),
        path: file.path.clone(),
        headers,
        body: body.to_string(),
        expected,
    })
}

/// `headers`: an object of strings, the names lowercased (each name once).
fn sample_headers(name: &str, headers: Value) -> Result<BTreeMap<String, String>, String> {
    let Value::Object(headers) = headers else {
        return Err(format!(
            "the `headers` of sample `{name}` is not an object of strings"
        ));
    };
    let mut out = BTreeMap::new();
    for (header, value) in headers {
        let Value::String(value) = value else {
            return Err(format!(
                "header `{header}` of sample `{name}` is not a string"
            ));
        };
        if out.insert(header.to_ascii_lowercase(), value).is_some() {
            return Err(format!(
                "header `{header}` of sample `{name}` is given twice (header names are case-insensitive)"
            ));
        }
    }
    Ok(out)
}

/// An expected file: `{"filtered": true}`, or the payload (an object, or `null`).
fn expected_outcome(tree: &dyn SourceTree, path: &str) -> Result<ExpectedOutcome, Box<Diagnostic>> {
    match read_json(tree, path)? {
        Value::Null => Ok(ExpectedOutcome::Payload(None)),
        Value::Object(map) if map.is_empty() => Ok(ExpectedOutcome::Payload(None)),
        Value::Object(map) if map.len() == 1 && map.get("filtered") == Some(&Value::Bool(true)) => {
            Ok(ExpectedOutcome::Filtered)
        }
        object @ Value::Object(_) => Ok(ExpectedOutcome::Payload(Some(object))),
        _ => Err(invalid(
            path,
            Span::FILE,
            format!(
                "`{}` is neither the payload (an object, or `null` for the empty payload) nor `{{\"filtered\": true}}`",
                paths::file_name(path)
            ),
        )),
    }
}

/// The JSON value of `path`, refused over [`MAX_SAMPLE_BYTES`] by its listed size.
fn read_json(tree: &dyn SourceTree, path: &str) -> Result<Value, Box<Diagnostic>> {
    let listed = tree.entry(path).map_or(0, |e| e.size);
    let read = if listed > MAX_SAMPLE_BYTES {
        Err(ReadError::TooLarge {
            size: listed,
            limit: MAX_SAMPLE_BYTES,
        })
    } else {
        tree.read(path, MAX_SAMPLE_BYTES)
    };
    let shown = paths::file_name(path);
    let bytes = read.map_err(|error| {
        let message = match error {
            ReadError::TooLarge { size, limit } => format!(
                "`{shown}` is {size} bytes, over the {limit}-byte limit of a sample file, so it was not read"
            ),
            ReadError::NotAFile => {
                format!("`{shown}` is not a regular file (symlinks are never followed)")
            }
            ReadError::NotFound => format!("`{shown}` disappeared while it was being read"),
            ReadError::NotUtf8 => format!("`{shown}` is not valid UTF-8"),
            ReadError::Io(reason) => format!("cannot read `{shown}`: {reason}"),
        };
        invalid(path, Span::FILE, message)
    })?;
    serde_json::from_slice(&bytes).map_err(|error| {
        let span = error_span(&bytes, &error);
        invalid(path, span, format!("`{shown}` is not JSON: {error}"))
    })
}

/// Where serde_json's error is, as a one-character span whose column counts characters
/// (serde_json counts bytes).
fn error_span(bytes: &[u8], error: &serde_json::Error) -> Span {
    let line = error.line().max(1);
    let text = bytes
        .split(|b| *b == b'\n')
        .nth(line - 1)
        .unwrap_or_default();
    let before = &text[..error.column().saturating_sub(1).min(text.len())];
    let column = String::from_utf8_lossy(before).chars().count() + 1;
    let line = u32::try_from(line).unwrap_or(u32::MAX);
    let column = u32::try_from(column).unwrap_or(u32::MAX);
    Span::new(line, column, line, column.saturating_add(1))
}

fn invalid(path: &str, span: Span, message: String) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::new(&INVALID_SAMPLE, path, span, message).with_help(
            "a sample is `{\"headers\": {\"x-name\": \"value\"}, \"body\": …}` of at most 256 KiB; \
         its `NAME.expected.json` is the payload, `null`, or `{\"filtered\": true}`",
        ),
    )
}
