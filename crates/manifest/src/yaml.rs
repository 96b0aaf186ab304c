//! Reading YAML with positions, under the §11 limits, while collecting every problem.
//!
//! `serde-saphyr` parses (with its budget: nesting depth, alias replay,
//! node count) into a small spanned tree, [`Node`]; [`YamlFile`] then offers
//! typed getters that report wrong types, missing keys and unknown keys (with
//! a did-you-mean), the same way `toml_walk` does for TOML. Deserializing
//! straight into `serde` structs would stop at the first problem and lose
//! the position of every value we want to annotate.

use std::fmt;
use std::ops::Range;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::options::AliasLimits;
use serde_saphyr::{Budget, DuplicateKeyPolicy, Location, Options, Spanned};

use crate::diagnostic::{Code, Diagnostic, Fix, Severity, Span};
use crate::limits::Limits;
use crate::position::{LineIndex, push_at};
use crate::toml_walk::{rename_fix, unknown_key_help};

pub const SYNTAX: Code = Code::new(
    "yaml/syntax",
    Severity::Error,
    "The file is not valid YAML (or holds more than one document).",
);
pub const LIMIT: Code = Code::new(
    "yaml/limit",
    Severity::Error,
    "The YAML exceeds a parsing limit: nesting depth, alias expansions or node count.",
);
pub const UNKNOWN_KEY: Code = Code::new(
    "yaml/unknown-key",
    Severity::Error,
    "A key that the format does not define.",
);
pub const WRONG_TYPE: Code = Code::new(
    "yaml/wrong-type",
    Severity::Error,
    "A value of the wrong YAML type.",
);
pub const MISSING_KEY: Code = Code::new(
    "yaml/missing-key",
    Severity::Error,
    "A required key is absent.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[&SYNTAX, &LIMIT, &UNKNOWN_KEY, &WRONG_TYPE, &MISSING_KEY];

/// Most YAML nodes (scalars, sequences, mappings) one file may hold. A
/// workspace manifest has a few hundred; this bounds memory and time on
/// hostile input far below the parser's own default.
pub const MAX_NODES: usize = 20_000;

/// Most parser events replayed (or recorded for replay) through anchors and
/// aliases in one file. A workspace manifest that reuses a block with an
/// alias replays tens of events; alias bombs ("billion laughs") fail here
/// long before memory grows. The parser's cost per recorded event is a few
/// µs (tens in debug builds), so this bound also keeps a bomb well under
/// 100 ms. The §11 limit on the number of aliases applies as well.
pub const MAX_REPLAYED_EVENTS: usize = 4_000;

/// A YAML value with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    /// Byte range in the file text (empty at the node's start when unknown).
    pub range: Range<usize>,
}

/// A YAML value. Mappings keep their order and their keys' positions.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Value {
    pub fn type_str(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a sequence",
            Value::Map(_) => "a mapping",
        }
    }
}

/// A mapping's entries.
pub type Mapping = [(Node, Node)];

/// The entry of `map` whose key is the string `key`.
pub fn entry<'m>(map: &'m Mapping, key: &str) -> Option<(&'m Node, &'m Node)> {
    map.iter()
        .find(|(k, _)| matches!(&k.value, Value::Str(s) if s == key))
        .map(|(k, v)| (k, v))
}

/// One YAML file being read: its path, line index and diagnostics so far.
#[derive(Debug)]
pub struct YamlFile<'t> {
    pub path: String,
    pub index: LineIndex<'t>,
    pub diagnostics: Vec<Diagnostic>,
}

impl<'t> YamlFile<'t> {
    /// Parses `text` under `limits`. A syntax error or an exceeded limit
    /// becomes one diagnostic and no tree.
    pub fn parse(path: impl Into<String>, text: &'t str, limits: &Limits) -> (Self, Option<Node>) {
        let mut file = Self {
            path: path.into(),
            index: LineIndex::new(text),
            diagnostics: Vec::new(),
        };
        let root = match parse_on_big_stack(text, *limits) {
            Ok(spanned) => Some(into_node(spanned)),
            Err(failure) => {
                file.report(failure.code, failure.range, failure.message);
                None
            }
        };
        (file, root)
    }

    pub fn span(&self, range: Range<usize>) -> Span {
        self.index.span(range)
    }

    /// Records a diagnostic at `range` and returns it for `help` or severity tweaks.
    pub fn report(
        &mut self,
        code: &Code,
        range: Range<usize>,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        push_at(
            &mut self.diagnostics,
            &self.index,
            &self.path,
            code,
            range,
            message,
        )
    }

    /// `node` as a mapping, or a wrong-type diagnostic naming `what`.
    pub fn as_map<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n Mapping> {
        match &node.value {
            Value::Map(map) => Some(map),
            other => self.wrong_type(node, what, "a mapping", other),
        }
    }

    /// `node` as a sequence.
    pub fn as_seq<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n [Node]> {
        match &node.value {
            Value::Seq(items) => Some(items),
            other => self.wrong_type(node, what, "a sequence", other),
        }
    }

    /// `node` as a string. YAML scalars that look like numbers are not
    /// strings: quote them.
    pub fn as_str<'n>(&mut self, node: &'n Node, what: &str) -> Option<&'n str> {
        match &node.value {
            Value::Str(s) => Some(s),
            other => self.wrong_type(node, what, "a string", other),
        }
    }

    /// Reports every key of `map` not in `known` (and every non-string key).
    pub fn check_keys(&mut self, map: &Mapping, known: &[&str], context: &str) {
        for (key, _) in map {
            let Value::Str(name) = &key.value else {
                let found = key.value.type_str();
                self.report(
                    &WRONG_TYPE,
                    key.range.clone(),
                    format!("keys in {context} must be strings, found {found}"),
                );
                continue;
            };
            if known.contains(&name.as_str()) {
                continue;
            }
            let help = unknown_key_help(name, known);
            // Only a plain key whose text is its name is renamed in place (the
            // span of a quoted or unlocated key is not the name's).
            let plain = self.index.text().get(key.range.clone()) == Some(name.as_str());
            let fix = rename_fix(name, known, |k| entry(map, k).is_some())
                .filter(|_| plain)
                .map(|(d, to)| Fix::one(d, self.index.edit(&self.path, key.range.clone(), to)));
            let diagnostic = self.report(
                &UNKNOWN_KEY,
                key.range.clone(),
                format!("unknown key `{name}` in {context}"),
            );
            diagnostic.help = Some(help);
            diagnostic.fix = fix;
        }
    }

    /// A string value of `key`.
    pub fn str<'n>(&mut self, map: &'n Mapping, key: &str) -> Option<(&'n str, Range<usize>)> {
        let (_, value) = entry(map, key)?;
        self.as_str(value, &format!("`{key}`"))
            .map(|s| (s, value.range.clone()))
    }

    /// A required string value of `key`; reports its absence at `at`.
    pub fn required_str<'n>(
        &mut self,
        map: &'n Mapping,
        key: &str,
        at: Range<usize>,
        context: &str,
    ) -> Option<(&'n str, Range<usize>)> {
        if entry(map, key).is_none() {
            self.missing(at, key, context);
            return None;
        }
        self.str(map, key)
    }

    /// A boolean value of `key`.
    pub fn bool(&mut self, map: &Mapping, key: &str) -> Option<(bool, Range<usize>)> {
        let (_, value) = entry(map, key)?;
        match &value.value {
            Value::Bool(b) => Some((*b, value.range.clone())),
            other => self.wrong_type(value, &format!("`{key}`"), "a boolean", other),
        }
    }

    /// An integer value of `key`.
    pub fn int(&mut self, map: &Mapping, key: &str) -> Option<(i64, Range<usize>)> {
        let (_, value) = entry(map, key)?;
        match &value.value {
            Value::Int(n) => Some((*n, value.range.clone())),
            other => self.wrong_type(value, &format!("`{key}`"), "an integer", other),
        }
    }

    /// A mapping value of `key`.
    pub fn map<'n>(&mut self, map: &'n Mapping, key: &str) -> Option<(&'n Mapping, Range<usize>)> {
        let (_, value) = entry(map, key)?;
        self.as_map(value, &format!("`{key}`"))
            .map(|m| (m, value.range.clone()))
    }

    /// A sequence value of `key`; `null` counts as empty.
    pub fn seq<'n>(&mut self, map: &'n Mapping, key: &str) -> Option<&'n [Node]> {
        let (_, value) = entry(map, key)?;
        if value.value == Value::Null {
            return Some(&[]);
        }
        self.as_seq(value, &format!("`{key}`"))
    }

    /// A sequence of strings; non-strings are reported and skipped.
    pub fn str_seq(&mut self, map: &Mapping, key: &str) -> Option<Vec<(String, Range<usize>)>> {
        let items = self.seq(map, key)?;
        let what = format!("entries of `{key}`");
        Some(
            items
                .iter()
                .filter_map(|item| {
                    self.as_str(item, &what)
                        .map(|s| (s.to_owned(), item.range.clone()))
                })
                .collect(),
        )
    }

    /// The mappings of a sequence of mappings.
    pub fn map_seq<'n>(&mut self, map: &'n Mapping, key: &str) -> Vec<(&'n Mapping, Range<usize>)> {
        let Some(items) = self.seq(map, key) else {
            return Vec::new();
        };
        let what = format!("entries of `{key}`");
        items
            .iter()
            .filter_map(|item| self.as_map(item, &what).map(|m| (m, item.range.clone())))
            .collect()
    }

    pub fn missing(&mut self, at: Range<usize>, key: &str, context: &str) {
        self.report(
            &MISSING_KEY,
            at,
            format!("missing required key `{key}` in {context}"),
        );
    }

    fn wrong_type<T>(
        &mut self,
        node: &Node,
        what: &str,
        expected: &str,
        found: &Value,
    ) -> Option<T> {
        let found = found.type_str();
        self.report(
            &WRONG_TYPE,
            node.range.clone(),
            format!("{what} must be {expected}, found {found}"),
        );
        None
    }
}

/// Stack for the parsing thread. Deserializing one nesting level costs tens
/// of KiB of stack in debug builds, so the §11 depth of 64 would overflow a
/// default 2 MiB thread stack; the depth budget bounds the recursion, and this
/// stack holds it with a wide margin.
const PARSE_STACK: usize = 64 * 1024 * 1024;

/// Why a text did not parse.
struct ParseFailure {
    code: &'static Code,
    range: Range<usize>,
    message: String,
}

impl ParseFailure {
    fn limit(message: impl Into<String>) -> Self {
        Self {
            code: &LIMIT,
            range: 0..0,
            message: message.into(),
        }
    }
}

/// Runs the parser on a scoped thread with [`PARSE_STACK`] bytes of stack.
fn parse_on_big_stack(text: &str, limits: Limits) -> Result<Spanned<Value>, ParseFailure> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("yaml-parse".to_owned())
            .stack_size(PARSE_STACK)
            .spawn_scoped(scope, move || {
                serde_saphyr::from_str_with_options::<Spanned<Value>>(text, options(&limits))
                    .map_err(|error| parse_failure(&error, text))
            })
            .map_err(|error| {
                ParseFailure::limit(format!("cannot start the YAML parser: {error}"))
            })?;
        handle
            .join()
            .unwrap_or_else(|_| Err(ParseFailure::limit("the YAML parser failed on this input")))
    })
}

fn parse_failure(error: &serde_saphyr::Error, text: &str) -> ParseFailure {
    use serde_saphyr::Error as E;
    let inner = error.without_snippet();
    let message = first_line(&inner.to_string());
    let code = match inner {
        _ if message.contains("recursion limit") || message.contains("budget breached") => &LIMIT,
        E::Budget { .. }
        | E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayStackDepthExceeded { .. }
        | E::AliasReplayCounterOverflow { .. } => &LIMIT,
        _ => &SYNTAX,
    };
    let range = inner
        .location()
        .map(|l| location_range(&l, text))
        .unwrap_or(0..0);
    ParseFailure {
        code,
        range,
        message: if code == &LIMIT {
            format!(
                "the YAML exceeds a parsing limit (nesting depth, alias expansions or node count): {message}"
            )
        } else {
            format!("invalid YAML: {message}")
        },
    }
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or(message).trim().to_owned()
}

/// Parser options: §11 depth and alias limits, a node cap, duplicate keys rejected.
fn options(limits: &Limits) -> Options {
    let mut options = Options::default();
    let mut budget = Budget::default();
    budget.max_depth = limits.yaml_depth;
    budget.flow_nesting_limit = limits.yaml_depth;
    budget.max_aliases = limits.yaml_aliases;
    budget.max_nodes = MAX_NODES;
    budget.max_documents = 1;
    budget.max_events = MAX_NODES.saturating_mul(4);
    budget.max_recorded_anchor_events = MAX_REPLAYED_EVENTS;
    options.budget = Some(budget);
    let mut alias_limits = AliasLimits::default();
    alias_limits.max_total_replayed_events = MAX_REPLAYED_EVENTS;
    alias_limits.max_replay_stack_depth = limits.yaml_depth;
    options.alias_limits = alias_limits;
    options.duplicate_keys = DuplicateKeyPolicy::Error;
    options
}

/// The byte range of a location: exact when the parser knows byte offsets
/// (string input always does), otherwise the start of its line and column.
fn location_range(location: &Location, text: &str) -> Range<usize> {
    let span = location.span();
    if let (Some(start), Some(len)) = (span.byte_offset(), span.byte_len()) {
        let start = usize::try_from(start).unwrap_or(text.len()).min(text.len());
        let end = usize::try_from(len)
            .map_or(text.len(), |len| start.saturating_add(len))
            .min(text.len());
        return start..end;
    }
    let start = line_column_offset(text, location.line(), location.column());
    start..start
}

/// The byte offset of the parser's 1-based `line` and `column`. Lines are
/// counted as YAML counts them: `\r\n`, `\r` and `\n` each end one (a lone
/// `\r` is a line break to the parser but not to [`crate::position::LineIndex`],
/// so spans are built from this offset, never from the parser's line number).
pub(crate) fn line_column_offset(text: &str, line: u64, column: u64) -> usize {
    let mut breaks = text.match_indices(['\r', '\n']);
    let mut line_start = 0;
    for _ in 1..line {
        let Some((at, found)) = breaks.next() else {
            return text.len();
        };
        line_start = at + 1;
        if found == "\r" && text[line_start..].starts_with('\n') {
            breaks.next();
            line_start += 1;
        }
    }
    let rest = &text[line_start..];
    let skip = usize::try_from(column.saturating_sub(1)).unwrap_or(usize::MAX);
    line_start + rest.char_indices().nth(skip).map_or(rest.len(), |(i, _)| i)
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

/// Spans of children are resolved after parsing; during the visit a child
/// carries its location in a [`Spanned`], converted by [`into_node`].
impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Value::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Value>>()? {
            items.push(into_node(item));
        }
        Ok(Value::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<Value>>()? {
            let value = map.next_value::<Spanned<Value>>()?;
            entries.push((into_node(key), into_node(value)));
        }
        Ok(Value::Map(entries))
    }
}

/// A child node. Its byte range comes straight from the location; the
/// text is not at hand inside the visitor, so only byte-offset locations
/// (which string input always has) give a range here.
fn into_node(spanned: Spanned<Value>) -> Node {
    let span = spanned.referenced.span();
    let range = match (span.byte_offset(), span.byte_len()) {
        (Some(start), Some(len)) => {
            let start = usize::try_from(start).unwrap_or(usize::MAX);
            start..start.saturating_add(usize::try_from(len).unwrap_or(0))
        }
        _ => 0..0,
    };
    Node {
        value: spanned.value,
        range,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_carry_byte_ranges() {
        let text = "a:\n  b: [1, \"x\"]\n";
        let (file, root) = YamlFile::parse("w.yaml", text, &Limits::DEFAULT);
        assert!(file.diagnostics.is_empty(), "{:?}", file.diagnostics);
        let Some(Node {
            value: Value::Map(map),
            ..
        }) = root
        else {
            panic!("not a map")
        };
        let (_, a) = entry(&map, "a").expect("a");
        let Value::Map(inner) = &a.value else {
            panic!("a")
        };
        let (key, value) = entry(inner, "b").expect("b");
        assert_eq!(&text[key.range.clone()], "b");
        let Value::Seq(items) = &value.value else {
            panic!("seq")
        };
        assert_eq!(&text[items[1].range.clone()], "\"x\"");
    }
}
