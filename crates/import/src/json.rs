//! A JSON export with positions: the parsed value plus the byte offset of
//! every value down to [`MAX_DEPTH`], addressed by JSON pointer.
//!
//! Written by hand because `serde_json` keeps no positions and the position
//! crates we found are either unmaintained or parse into their own value type
//! (so every importer would walk a second model). The input is first parsed
//! by `serde_json` (which reports syntax errors and truncation with line and
//! column, and bounds nesting at 128), so this scanner only ever runs over
//! valid JSON and stays a few dozen lines; it still never indexes out of
//! bounds on any input.

use std::collections::HashMap;

use astrolift_manifest::Span;
use astrolift_manifest::position::LineIndex;
use serde_json::Value;

use crate::error::ImportError;

/// Values nested deeper than this get no position of their own: gaps point at
/// nodes and their fields (Langflow's `/data/nodes/3/data/node/template/x` is
/// depth 7), never deeper.
pub const MAX_DEPTH: usize = 7;

/// A parsed JSON source.
#[derive(Debug)]
pub struct JsonSource<'t> {
    pub path: String,
    pub value: Value,
    offsets: HashMap<String, usize>,
    lines: LineIndex<'t>,
}

impl<'t> JsonSource<'t> {
    /// Parses `bytes` (UTF-8, an optional BOM) or says why it is not JSON.
    pub fn parse(path: &str, bytes: &'t [u8]) -> Result<Self, ImportError> {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let text = std::str::from_utf8(bytes).map_err(|_| ImportError::NotUtf8 {
            path: path.to_owned(),
        })?;
        let value: Value = serde_json::from_str(text).map_err(|e| json_error(path, &e))?;
        let mut scanner = Scanner {
            text,
            bytes: text.as_bytes(),
            at: 0,
            offsets: HashMap::new(),
        };
        scanner.value(&mut String::new(), 0);
        Ok(Self {
            path: path.to_owned(),
            value,
            offsets: scanner.offsets,
            lines: LineIndex::new(text),
        })
    }

    /// The span of the value at `pointer` (a one-character span at its first
    /// byte), or of its closest indexed ancestor; the file start if none.
    pub fn span(&self, pointer: &str) -> Span {
        let mut pointer = pointer;
        loop {
            if let Some(&offset) = self.offsets.get(pointer) {
                return self.lines.span(offset..offset + 1);
            }
            match pointer.rfind('/') {
                Some(i) => pointer = &pointer[..i],
                None => return Span::FILE,
            }
        }
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
    offsets: HashMap<String, usize>,
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
        self.skip_ws();
        if depth <= MAX_DEPTH {
            self.offsets.insert(pointer.clone(), self.at);
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
            self.value(pointer, depth + 1);
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
