//! Property tests: hostile text never panics, and TOML-string offset mapping is exact.

use astrolift_jq::JqProgram;
use astrolift_manifest::Limits;
use astrolift_manifest::toml_walk::TomlFile;
use astrolift_manifest::triggers::decoded_to_source;
use astrolift_manifest::workspace::validate_workspace_text;
use proptest::prelude::*;
use toml::de::DeValue;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// jq-like text compiles or fails with an offset inside the text, never a panic.
    #[test]
    fn jq_compile_never_panics(text in r#"[.\[\]{}()|,:;a-z$"\\ 0-9=<>+*/?@-]{0,40}"#) {
        if let Err(error) = JqProgram::compile(&text) {
            prop_assert!(error.offset + error.len <= text.len());
        }
    }

    /// YAML-like text yields a model or diagnostics, never a panic.
    #[test]
    fn workspace_yaml_never_panics(text in r#"[a-zA-Z:\-\[\]{}&*!|>'"\# \n0-9.,]{0,200}"#) {
        let (_, diagnostics) = validate_workspace_text("w.yaml", &text, &Limits::DEFAULT);
        for d in diagnostics {
            prop_assert!(d.span.line >= 1 && d.span.column >= 1);
        }
    }

    /// For any string written as a TOML basic or literal string (one- or
    /// multi-line), every decoded character maps back to the source
    /// character it came from.
    #[test]
    fn toml_string_offsets_map_back(value in "[a-z \"'\\\\\t\né✓.|]{0,30}", style in 0usize..4) {
        let literal = match style {
            0 => toml_basic(&value),
            1 if !value.contains('\'') && !value.contains('\n') => format!("'{value}'"),
            2 if !value.contains("'''") && !value.ends_with('\'') && !value.starts_with('\n') => {
                format!("'''{value}'''")
            }
            _ => toml_basic(&value),
        };
        let text = format!("k = {literal}\n");
        let (_, root) = TomlFile::parse("a.toml", &text);
        let item = root.get_ref().get("k").expect("k");
        let DeValue::String(decoded) = item.get_ref() else { panic!("not a string") };
        prop_assert_eq!(decoded.as_ref(), value.as_str());
        let source = &text[item.span()];
        for (offset, c) in value.char_indices() {
            let range = decoded_to_source(source, &value, offset..offset + c.len_utf8()).expect("maps");
            let written = &source[range];
            let expected = match c {
                '"' => "\\\"",
                '\\' => "\\\\",
                '\t' => "\\t",
                '\n' => "\\n",
                _ => "",
            };
            if style == 0 || !written.starts_with('\\') {
                if written.starts_with('\\') {
                    prop_assert_eq!(written, expected);
                } else {
                    prop_assert_eq!(written.chars().next(), Some(c));
                }
            }
        }
    }
}

/// A TOML basic string for `value`, escaping what must be escaped.
fn toml_basic(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
