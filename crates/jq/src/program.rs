//! Compiling jq programs with `jaq`, against restricted definitions.
//!
//! Programs run on webhook bodies from the outside world, inside our
//! infrastructure, so the definitions offered are the jaq standard library
//! minus everything that reads the environment, reads further input, writes
//! to stderr or stops the process: `env`, `$ENV`, `input`, `inputs`,
//! `input_filename`, `debug`, `stderr`, `halt`, `halt_error` and `$__loc__`.
//! Using one of them is a compile error ("undefined filter").
//!
//! [`JqProgram::compile`] is what validation uses (a syntax error becomes a
//! diagnostic at the exact position); the trigger runtime reuses the compiled
//! program with [`JqProgram::run`].

use std::fmt;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::Val;

/// The data type programs run on: JSON values.
pub type JqData = data::JustLut<Val>;

/// Names that are not offered to trigger programs, whether defined in jq
/// (`debug`, `halt_error`…) or natively (`env`, `halt`…).
pub const REMOVED: &[&str] = &[
    "env",
    "input",
    "inputs",
    "input_filename",
    "debug",
    "debug_empty",
    "stderr",
    "stderr_empty",
    "halt",
    "halt_error",
];

/// Variables that jq offers and we do not; listed for the error's help text.
pub const REMOVED_VARS: &[&str] = &["$ENV", "$__loc__", "$__prog_args"];

/// A compiled jq program.
pub struct JqProgram {
    filter: jaq_core::Filter<JqData>,
}

impl fmt::Debug for JqProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JqProgram")
    }
}

/// Why a program does not compile: a byte range in the program text and a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at byte {offset})")]
pub struct JqError {
    /// Byte offset of the offending token in the program text.
    pub offset: usize,
    /// Byte length of the offending token (0 at the end of the text).
    pub len: usize,
    pub kind: JqErrorKind,
    pub message: String,
    pub help: Option<String>,
}

/// Syntax (lexing or parsing) or compilation (an undefined name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JqErrorKind {
    Syntax,
    Undefined,
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JqRunError {
    #[error("jq error: {0}")]
    Failed(String),
    #[error("the program yields more than {0} outputs")]
    TooManyOutputs(usize),
}

impl JqProgram {
    /// Parses and compiles `text` against the restricted definitions.
    pub fn compile(text: &str) -> Result<JqProgram, JqError> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs())
            .filter(|def| !REMOVED.contains(&def.name));
        let funs = jaq_core::funs::<JqData>()
            .chain(jaq_std::funs::<JqData>())
            .chain(jaq_json::funs::<JqData>())
            .filter(|(name, _, _)| !REMOVED.contains(name));
        let arena = Arena::default();
        let program = File {
            code: text,
            path: (),
        };
        let modules = Loader::new(defs)
            .load(&arena, program)
            .map_err(|errors| load_error(text, errors))?;
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errors| compile_error(text, errors))?;
        Ok(JqProgram { filter })
    }

    /// Runs the program on `input`, collecting at most `max_outputs` outputs.
    pub fn run(&self, input: Val, max_outputs: usize) -> Result<Vec<Val>, JqRunError> {
        let ctx = Ctx::<JqData>::new(&self.filter.lut, Vars::new([]));
        let mut outputs = Vec::new();
        for output in self.filter.id.run((ctx, input)).map(jaq_core::unwrap_valr) {
            if outputs.len() == max_outputs {
                return Err(JqRunError::TooManyOutputs(max_outputs));
            }
            outputs.push(output.map_err(|e| JqRunError::Failed(e.to_string()))?);
        }
        Ok(outputs)
    }
}

/// Byte range of `part` inside `whole`, when `part` is a slice of it.
fn offset_in(whole: &str, part: &str) -> Option<(usize, usize)> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (start + part.len() <= whole.len()).then_some((start, part.len()))
}

fn at(text: &str, part: &str) -> (usize, usize) {
    offset_in(text, part).unwrap_or((0, 0))
}

fn load_error(text: &str, errors: jaq_core::load::Errors<&str, ()>) -> JqError {
    use jaq_core::load::Error;
    let error = errors.into_iter().map(|(_, e)| e).next();
    let (offset, len, message) = match error {
        Some(Error::Lex(errors)) => match errors.first() {
            Some((expect, part)) => {
                let (offset, _) = at(text, part);
                let len = part.chars().next().map_or(0, char::len_utf8);
                (offset, len, format!("expected {}", expect.as_str()))
            }
            None => (0, 0, "invalid jq".to_owned()),
        },
        Some(Error::Parse(errors)) => match errors.first() {
            Some((expect, found)) => {
                let (offset, len) = at(text, found);
                let found = if found.is_empty() {
                    "end of program".to_owned()
                } else {
                    format!("`{found}`")
                };
                (
                    offset,
                    len,
                    format!("expected {}, found {found}", expect.as_str()),
                )
            }
            None => (0, 0, "invalid jq".to_owned()),
        },
        Some(Error::Io(errors)) => {
            let (part, message) = errors
                .first()
                .map_or(("", "cannot load module"), |(p, m)| (*p, m.as_str()));
            let (offset, len) = at(text, part);
            (
                offset,
                len,
                format!("modules cannot be imported: {message}"),
            )
        }
        None => (0, 0, "invalid jq".to_owned()),
    };
    JqError {
        offset,
        len,
        kind: JqErrorKind::Syntax,
        message: format!("jq syntax error: {message}"),
        help: None,
    }
}

fn compile_error(text: &str, errors: jaq_core::compile::Errors<&str, ()>) -> JqError {
    let first = errors.into_iter().flat_map(|(_, e)| e).next();
    let Some((name, undefined)) = first else {
        return JqError {
            offset: 0,
            len: 0,
            kind: JqErrorKind::Undefined,
            message: "jq program does not compile".to_owned(),
            help: None,
        };
    };
    let (offset, len) = at(text, name);
    let removed = REMOVED.contains(&name) || REMOVED_VARS.contains(&name);
    JqError {
        offset,
        len,
        kind: JqErrorKind::Undefined,
        message: format!("undefined {} `{name}`", undefined.as_str()),
        help: removed.then(|| {
            format!("`{name}` is not available to trigger programs: they cannot read the environment, read further input, log or halt")
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_and_runs() {
        let program = JqProgram::compile("{mode: \"triage\", key: .issue.key}").expect("compiles");
        let input = jaq_json::read::parse_single(br#"{"issue":{"key":"A-1"}}"#).expect("json");
        let out = program.run(input, 4).expect("runs");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].to_string(), r#"{"mode":"triage","key":"A-1"}"#);
    }

    #[test]
    fn syntax_errors_have_offsets() {
        let error = JqProgram::compile(".a | {b: }").expect_err("bad");
        assert_eq!(error.kind, JqErrorKind::Syntax);
        assert_eq!(error.offset, 9, "{error:?}");
    }

    #[test]
    fn environment_and_io_are_removed() {
        for program in [
            "env",
            "$ENV",
            "input",
            "inputs",
            "debug",
            "stderr",
            "halt",
            "halt_error",
            "input_filename",
            "$__loc__",
        ] {
            let error = JqProgram::compile(program).expect_err(program);
            assert_eq!(error.kind, JqErrorKind::Undefined, "{program}: {error:?}");
            assert_eq!(error.offset, 0, "{program}");
        }
        assert!(JqProgram::compile(".a | map(. + 1) | length").is_ok());
    }
}
