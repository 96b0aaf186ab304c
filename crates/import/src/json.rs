//! A JSON export with positions: the parsed value (within [`MAX_VALUE_BYTES`] of
//! memory) plus the byte offset of every container, object member and leading array
//! element down to [`MAX_DEPTH`], addressed by JSON pointer.
//!
//! Written by hand because `serde_json` keeps no positions and the position
//! crates we found are either unmaintained or parse into their own value type
//! (so every importer would walk a second model). The input is first parsed
//! by `serde_json` (which reports syntax errors and truncation with line and
//! column, and bounds nesting at 128), so this scanner only ever runs over
//! valid JSON and stays a few dozen lines; it still never indexes out of
//! bounds on any input.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::BuildHasher;

use astrolift_manifest::Span;
use astrolift_manifest::position::LineIndex;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::ImportError;

/// Values nested deeper than this get no position of their own: gaps point at
/// nodes and their fields (Langflow's `/data/nodes/3/data/node/template/x` is
/// depth 7), never deeper.
pub const MAX_DEPTH: usize = 7;

/// The memory the parsed value of one export may take, estimated as it is parsed
/// ([`charge`]): an export of millions of one-character strings would otherwise take
/// many times its size as a `serde_json::Value`. Documented in docs/import.md.
pub const MAX_VALUE_BYTES: usize = 128 * 1024 * 1024;

/// The scalar elements of an array that get a position of their own: the first
/// this many (containers always do, down to [`MAX_DEPTH`]). Gaps point at nodes,
/// fields and short lists; an element past these points at its array.
pub const SCALAR_ELEMENTS_INDEXED: usize = 256;

/// A parsed JSON source.
#[derive(Debug)]
pub struct JsonSource<'t> {
    pub path: String,
    pub value: Value,
    /// Offsets by the hash of their JSON pointer (a random-keyed SipHash): a fixed
    /// 12 bytes per position, whatever the pointer's length. A collision could only
    /// misplace a gap's position, never change what is imported.
    offsets: HashMap<u64, u32>,
    hasher: std::collections::hash_map::RandomState,
    lines: LineIndex<'t>,
}

impl<'t> JsonSource<'t> {
    /// Parses `bytes` (UTF-8, an optional BOM) or says why it is not JSON.
    pub fn parse(path: &str, bytes: &'t [u8]) -> Result<Self, ImportError> {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let text = std::str::from_utf8(bytes).map_err(|_| ImportError::NotUtf8 {
            path: path.to_owned(),
        })?;
        let value = parse_budgeted(path, text)?;
        let hasher = std::collections::hash_map::RandomState::new();
        let mut scanner = Scanner {
            text,
            bytes: text.as_bytes(),
            at: 0,
            offsets: HashMap::new(),
            hasher: &hasher,
        };
        scanner.value(&mut String::new(), 0);
        Ok(Self {
            path: path.to_owned(),
            value,
            offsets: scanner.offsets,
            hasher,
            lines: LineIndex::new(text),
        })
    }

    /// The span of the value at `pointer` (a one-character span at its first
    /// byte), or of its closest indexed ancestor; the file start if none.
    pub fn span(&self, pointer: &str) -> Span {
        let mut pointer = pointer;
        loop {
            if let Some(&offset) = self.offsets.get(&self.hasher.hash_one(pointer)) {
                let offset = offset as usize;
                return self.lines.span(offset..offset + 1);
            }
            match pointer.rfind('/') {
                Some(i) => pointer = &pointer[..i],
                None => return Span::FILE,
            }
        }
    }
}

/// `text` as a JSON value, refused past [`MAX_VALUE_BYTES`] of estimated memory.
fn parse_budgeted(path: &str, text: &str) -> Result<Value, ImportError> {
    let left = Cell::new(MAX_VALUE_BYTES);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = Budgeted { left: &left }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    match parsed {
        Ok(value) => Ok(value),
        Err(_) if left.get() == 0 => Err(ImportError::TooComplex {
            path: path.to_owned(),
            limit: MAX_VALUE_BYTES as u64,
        }),
        Err(error) => Err(json_error(path, &error)),
    }
}

/// What one value costs in memory, besides what its children cost: its `Value`
/// slot, and for a string or key its heap block (allocators round up and keep a header).
fn charge(heap_bytes: usize) -> usize {
    let block = if heap_bytes == 0 {
        0
    } else {
        heap_bytes.next_multiple_of(16) + 16
    };
    std::mem::size_of::<Value>() + block
}

/// A `serde_json::Value` built against a memory budget (`left`, set to 0 once spent).
struct Budgeted<'b> {
    left: &'b Cell<usize>,
}

impl Budgeted<'_> {
    fn spend<E: serde::de::Error>(&self, bytes: usize) -> Result<(), E> {
        match self.left.get().checked_sub(bytes) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.left.set(0);
                Err(E::custom("over the memory budget of an import"))
            }
        }
    }
}

impl Budgeted<'_> {
    /// A value with no heap block of its own (null, a boolean, a number).
    fn scalar<E: serde::de::Error>(&self, value: Value) -> Result<Value, E> {
        self.spend(charge(0))?;
        Ok(value)
    }
}

impl<'de> DeserializeSeed<'de> for Budgeted<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Budgeted<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.scalar(Value::Bool(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.scalar(Value::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.scalar(Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.scalar(Value::from(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.spend(charge(v.len()))?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.spend(charge(v.len()))?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.scalar(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.spend(charge(0))?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Budgeted { left: self.left })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.spend(charge(0))?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // The key's heap block and the map's node slot (key, value, links).
            self.spend(charge(key.len()) + std::mem::size_of::<String>())?;
            let value = map.next_value_seed(Budgeted { left: self.left })?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

fn json_error(path: &str, error: &serde_json::Error) -> ImportError {
    let (line, column) = (error.line(), error.column());
    if error.is_eof() {
        ImportError::Truncated {
            path: path.to_owned(),
            line,
            column,
        }
    } else {
        ImportError::NotJson {
            path: path.to_owned(),
            line,
            column,
            message: error.to_string(),
        }
    }
}

/// RFC 6901 escaping of one pointer token.
pub fn escape_token(token: &str) -> String {
    let mut escaped = String::with_capacity(token.len());
    push_token(&mut escaped, token);
    escaped
}

/// Appends `token`, escaped, to `pointer` (no allocation for plain keys).
fn push_token(pointer: &mut String, token: &str) {
    if !token.contains(['~', '/']) {
        pointer.push_str(token);
        return;
    }
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

struct Scanner<'b> {
    text: &'b str,
    bytes: &'b [u8],
    at: usize,
    offsets: HashMap<u64, u32>,
    hasher: &'b std::collections::hash_map::RandomState,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }

    fn value(&mut self, pointer: &mut String, depth: usize) {
        self.value_indexed(pointer, depth, true);
    }

    /// One value; its position is kept when `indexed` (and it is within [`MAX_DEPTH`]),
    /// and always for a container.
    fn value_indexed(&mut self, pointer: &mut String, depth: usize, indexed: bool) {
        self.skip_ws();
        let container = matches!(self.peek(), Some(b'{' | b'['));
        if depth <= MAX_DEPTH && (indexed || container) {
            // Offsets fit u32: an import source is at most 32 MiB (docs/import.md).
            let offset = u32::try_from(self.at).unwrap_or(u32::MAX);
            self.offsets
                .insert(self.hasher.hash_one(pointer.as_str()), offset);
        }
        match self.peek() {
            Some(b'{') => self.object(pointer, depth),
            Some(b'[') => self.array(pointer, depth),
            Some(b'"') => {
                self.skip_string();
            }
            Some(_) => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
                ) {
                    self.at += 1;
                }
            }
            None => {}
        }
    }

    fn object(&mut self, pointer: &mut String, depth: usize) {
        self.at += 1;
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b'"') => {}
                Some(b',') => {
                    self.at += 1;
                    continue;
                }
                _ => {
                    self.at += 1; // `}` (or the end)
                    return;
                }
            }
            let (start, escaped) = self.skip_string();
            let key_end = self.at;
            self.skip_ws();
            if self.peek() == Some(b':') {
                self.at += 1;
            }
            let len = pointer.len();
            if depth < MAX_DEPTH {
                pointer.push('/');
                let raw = self.text.get(start..key_end).unwrap_or_default();
                if escaped {
                    let key: String = serde_json::from_str(raw).unwrap_or_default();
                    push_token(pointer, &key);
                } else {
                    push_token(
                        pointer,
                        raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default(),
                    );
                }
            }
            self.value(pointer, depth + 1);
            pointer.truncate(len);
        }
    }

    fn array(&mut self, pointer: &mut String, depth: usize) {
        self.at += 1;
        let mut index = 0usize;
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b']') | None => {
                    self.at += 1;
                    return;
                }
                Some(b',') => {
                    self.at += 1;
                    continue;
                }
                _ => {}
            }
            let len = pointer.len();
            if depth < MAX_DEPTH {
                pointer.push('/');
                pointer.push_str(&index.to_string());
            }
            self.value_indexed(pointer, depth + 1, index < SCALAR_ELEMENTS_INDEXED);
            pointer.truncate(len);
            index += 1;
        }
    }

    /// Skips a string: where it started and whether it has escapes. Jumps
    /// from quote or backslash to the next one (most of an export's bytes
    /// are long strings of component code).
    fn skip_string(&mut self) -> (usize, bool) {
        let start = self.at;
        self.at += 1;
        let mut escaped = false;
        loop {
            let rest = self.bytes.get(self.at..).unwrap_or_default();
            let Some(i) = rest.iter().position(|&b| b == b'"' || b == b'\\') else {
                self.at = self.bytes.len();
                break;
            };
            self.at += i;
            if self.peek() == Some(b'"') {
                self.at += 1;
                break;
            }
            self.at += 2;
            escaped = true;
        }
        (start, escaped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_of_nested_values() {
        let text = "{\n  \"data\": {\"nodes\": [\n    {\"id\": \"a/b\"},\n    {\"x~\": 1}\n  ]}\n}";
        let doc = JsonSource::parse("f.json", text.as_bytes()).expect("valid");
        assert_eq!(doc.span("/data/nodes/0").line, 3);
        assert_eq!(doc.span("/data/nodes/0").column, 5);
        assert_eq!(doc.span("/data/nodes/1/x~0").column, 12);
        // An unknown pointer falls back to its closest ancestor.
        assert_eq!(doc.span("/data/nodes/1/nope").line, 4);
    }

    #[test]
    fn truncated_and_invalid() {
        assert!(matches!(
            JsonSource::parse("f.json", b"{\"data\": {"),
            Err(ImportError::Truncated { .. })
        ));
        assert!(matches!(
            JsonSource::parse("f.json", b"name: x"),
            Err(ImportError::NotJson { .. })
        ));
    }
}
