//! Reading spanned TOML into models while collecting every problem.
//!
//! Written by hand on top of `toml::de::DeTable` rather than `serde` derive:
//! serde stops at the first error and drops positions, and our contract is
//! "every problem, each on its exact key or value". `DeTable` gives us a
//! recovering parser with spans on every key and value; this module adds
//! typed getters that report wrong types, missing keys and unknown keys
//! (with a did-you-mean from `strsim`).

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

use crate::diagnostic::{Code, Diagnostic, Edit, Fix, Severity, Span};
use crate::position::{LineIndex, push_at};

pub const SYNTAX: Code = Code::new(
    "toml/syntax",
    Severity::Error,
    "The file is not valid TOML.",
);
pub const UNKNOWN_KEY: Code = Code::new(
    "toml/unknown-key",
    Severity::Error,
    "A key that the format does not define.",
);
pub const WRONG_TYPE: Code = Code::new(
    "toml/wrong-type",
    Severity::Error,
    "A value of the wrong TOML type.",
);
pub const MISSING_KEY: Code = Code::new(
    "toml/missing-key",
    Severity::Error,
    "A required key is absent.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[&SYNTAX, &UNKNOWN_KEY, &WRONG_TYPE, &MISSING_KEY];

/// A spanned TOML value.
pub type Item<'i> = Spanned<DeValue<'i>>;

/// One TOML file being read: its path, its line index, and the diagnostics found so far.
#[derive(Debug)]
pub struct TomlFile<'i> {
    pub path: String,
    pub index: LineIndex<'i>,
    pub diagnostics: Vec<Diagnostic>,
}

impl<'i> TomlFile<'i> {
    /// Parses `text`, recovering from syntax errors; each becomes a `toml/syntax` diagnostic
    /// at the position the parser reports.
    pub fn parse(path: impl Into<String>, text: &'i str) -> (Self, Spanned<DeTable<'i>>) {
        let (root, errors) = DeTable::parse_recoverable(text);
        let mut file = Self {
            path: path.into(),
            index: LineIndex::new(text),
            diagnostics: Vec::new(),
        };
        for error in errors {
            let range = error.span().unwrap_or(0..0);
            let message = error.message().trim().to_owned();
            file.report(&SYNTAX, range, format!("invalid TOML: {message}"));
        }
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

    /// Reports every key of `table` not in `known`, with the closest known key as help.
    /// `context` names the table in messages, such as `[package]`.
    pub fn check_keys(&mut self, table: &DeTable<'_>, known: &[&str], context: &str) {
        for key in table.keys() {
            let name = key.get_ref().as_ref();
            if known.contains(&name) {
                continue;
            }
            let fix = rename_fix(name, known, |k| table.contains_key(k))
                .map(|(description, to)| Fix::one(description, self.edit(key.span(), to)));
            let diagnostic = self.report(
                &UNKNOWN_KEY,
                key.span(),
                format!("unknown key `{name}` in {context}"),
            );
            diagnostic.help = Some(unknown_key_help(name, known));
            diagnostic.fix = fix;
        }
    }

    /// An edit of this file replacing the bytes `range` by `replacement`.
    pub fn edit(&self, range: Range<usize>, replacement: impl Into<String>) -> Edit {
        self.index.edit(&self.path, range, replacement)
    }

    /// A fix deleting the entry at `range` with the lines it stands on,
    /// when it stands on lines of its own.
    pub fn remove_lines_fix(&self, range: Range<usize>, description: String) -> Option<Fix> {
        let lines = self.index.own_lines(range)?;
        Some(Fix::one(description, self.edit(lines, "")))
    }

    /// The value of `key`, if present.
    pub fn get<'t>(&self, table: &'t DeTable<'i>, key: &str) -> Option<&'t Item<'i>> {
        table.get(key)
    }

    /// A string value, or a `toml/wrong-type` diagnostic if `key` holds something else.
    pub fn str<'t>(
        &mut self,
        table: &'t DeTable<'i>,
        key: &str,
    ) -> Option<(&'t str, Range<usize>)> {
        let item = table.get(key)?;
        match item.get_ref() {
            DeValue::String(s) => Some((s.as_ref(), item.span())),
            other => self.wrong_type(item.span(), key, "a string", other),
        }
    }

    /// A boolean value.
    pub fn bool(&mut self, table: &DeTable<'i>, key: &str) -> Option<(bool, Range<usize>)> {
        let item = table.get(key)?;
        match item.get_ref() {
            DeValue::Boolean(b) => Some((*b, item.span())),
            other => self.wrong_type(item.span(), key, "a boolean", other),
        }
    }

    /// An integer value (decimal, hex, octal or binary), as i64.
    pub fn int(&mut self, table: &DeTable<'i>, key: &str) -> Option<(i64, Range<usize>)> {
        let item = table.get(key)?;
        match item.get_ref() {
            DeValue::Integer(i) => match parse_integer(i.as_str(), i.radix()) {
                Some(n) => Some((n, item.span())),
                None => {
                    self.report(
                        &WRONG_TYPE,
                        item.span(),
                        format!("`{key}` is out of range for a 64-bit integer"),
                    );
                    None
                }
            },
            other => self.wrong_type(item.span(), key, "an integer", other),
        }
    }

    /// A table value (inline or standard).
    pub fn table<'t>(
        &mut self,
        table: &'t DeTable<'i>,
        key: &str,
    ) -> Option<(&'t DeTable<'i>, Range<usize>)> {
        let item = table.get(key)?;
        match item.get_ref() {
            DeValue::Table(t) => Some((t, item.span())),
            other => self.wrong_type(item.span(), key, "a table", other),
        }
    }

    /// An array value.
    pub fn array<'t>(
        &mut self,
        table: &'t DeTable<'i>,
        key: &str,
    ) -> Option<(&'t DeArray<'i>, Range<usize>)> {
        let item = table.get(key)?;
        match item.get_ref() {
            DeValue::Array(a) => Some((a, item.span())),
            other => self.wrong_type(item.span(), key, "an array", other),
        }
    }

    /// An array of strings; non-string elements are reported and skipped.
    pub fn str_array(
        &mut self,
        table: &DeTable<'i>,
        key: &str,
    ) -> Option<Vec<(String, Range<usize>)>> {
        let (array, _) = self.array(table, key)?;
        let mut out = Vec::with_capacity(array.len());
        for item in array.iter() {
            match item.get_ref() {
                DeValue::String(s) => out.push((s.to_string(), item.span())),
                other => {
                    let found = other.type_str();
                    self.report(
                        &WRONG_TYPE,
                        item.span(),
                        format!("`{key}` must hold strings, found {found}"),
                    );
                }
            }
        }
        Some(out)
    }

    /// An array of tables (`[[key]]` or an array of inline tables).
    pub fn table_array<'t>(
        &mut self,
        table: &'t DeTable<'i>,
        key: &str,
    ) -> Vec<(&'t DeTable<'i>, Range<usize>)> {
        let Some((array, _)) = self.array(table, key) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(array.len());
        for item in array.iter() {
            match item.get_ref() {
                DeValue::Table(t) => out.push((t, item.span())),
                other => {
                    let found = other.type_str();
                    self.report(
                        &WRONG_TYPE,
                        item.span(),
                        format!("`{key}` must hold tables, found {found}"),
                    );
                }
            }
        }
        out
    }

    /// Reports a required key that is absent, at `at` (usually the table header,
    /// or the start of the file for the root table).
    pub fn missing(&mut self, at: Range<usize>, key: &str, context: &str) {
        self.report(
            &MISSING_KEY,
            at,
            format!("missing required key `{key}` in {context}"),
        );
    }

    fn wrong_type<T>(
        &mut self,
        range: Range<usize>,
        key: &str,
        expected: &str,
        found: &DeValue<'_>,
    ) -> Option<T> {
        let found = found.type_str();
        self.report(
            &WRONG_TYPE,
            range,
            format!("`{key}` must be {expected}, found {found}"),
        );
        None
    }
}

/// The span of a key in `table`, for diagnostics about the key rather than its value.
pub fn key_span(table: &DeTable<'_>, key: &str) -> Option<Range<usize>> {
    table.get_key_value(key).map(|(k, _)| k.span())
}

/// The `help` of an unknown key: the closest known key, or the list of them.
pub fn unknown_key_help(name: &str, known: &[&str]) -> String {
    match closest(name, known) {
        Some(best) => format!("did you mean `{best}`?"),
        None => format!("known keys: {}", known.join(", ")),
    }
}

/// The known key closest to `name`, if it is close enough to be a likely typo.
pub fn closest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    close_matches(name, known)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// The rename that fixes an unknown key, as (description, new key): only
/// when exactly one known key is close (two would be a guess) and the
/// table does not hold that key already (a rename would duplicate it).
pub fn rename_fix<'k>(
    name: &str,
    known: &[&'k str],
    present: impl Fn(&str) -> bool,
) -> Option<(String, &'k str)> {
    let mut matches = close_matches(name, known);
    let (_, only) = matches.next()?;
    if matches.next().is_some() || present(only) {
        return None;
    }
    Some((format!("rename `{name}` to `{only}`"), only))
}

fn close_matches<'k, 'n>(
    name: &'n str,
    known: &'n [&'k str],
) -> impl Iterator<Item = (f64, &'k str)> + 'n {
    known
        .iter()
        .map(move |k| (strsim::jaro_winkler(name, k), *k))
        .filter(|(score, _)| *score >= 0.8)
}

fn parse_integer(digits: &str, radix: u32) -> Option<i64> {
    let cleaned: String = digits.chars().filter(|c| *c != '_').collect();
    i64::from_str_radix(&cleaned, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_syntax_unknown_and_wrong_types_together() {
        let text = "name = 1\nnmae = \"x\"\nbroken = \n";
        let (mut file, root) = TomlFile::parse("a.toml", text);
        file.check_keys(root.get_ref(), &["name"], "the manifest");
        assert!(file.str(root.get_ref(), "name").is_none());
        let codes: Vec<_> = file
            .diagnostics
            .iter()
            .map(|d| (d.code.as_str(), d.span.line))
            .collect();
        assert_eq!(
            codes,
            [
                ("toml/syntax", 3),
                ("toml/unknown-key", 2),
                ("toml/unknown-key", 3),
                ("toml/wrong-type", 1)
            ]
        );
        assert_eq!(
            file.diagnostics[1].help.as_deref(),
            Some("did you mean `name`?")
        );
    }

    #[test]
    fn integers_in_every_radix() {
        let (mut file, root) = TomlFile::parse("a.toml", "a = 0x1F\nb = 1_000\nc = -3\n");
        let t = root.get_ref();
        assert_eq!(file.int(t, "a").map(|v| v.0), Some(31));
        assert_eq!(file.int(t, "b").map(|v| v.0), Some(1000));
        assert_eq!(file.int(t, "c").map(|v| v.0), Some(-3));
    }
}
