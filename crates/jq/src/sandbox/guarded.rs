//! A program compiled with guards: every definition body (the program's and
//! the standard library's) starts with the budget check, and `range/3` is
//! replaced by a copy that checks it before each output (see [`super`]).

use jaq_core::box_iter::box_once;
use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Def, Pattern, Term};
use jaq_core::load::{Arena, File, Loader};
use jaq_core::native::v;
use jaq_core::path::{Part, Path};
use jaq_core::{Compiler, Ctx, Error, Exn, Native, ValX, Vars};
use jaq_json::Val;

use super::budget::{check_budget, tripped};
use super::error::{SandboxError, bounded_message};
use crate::program::{JqData, JqError, JqErrorKind, JqProgram, REMOVED};

const GUARD: &str = "__astrolift_guard";
const MAIN: &str = "__astrolift_main";

/// A trigger program compiled with guards. Build once per binding and share.
pub struct SandboxedProgram {
    text: String,
    filter: jaq_core::Filter<JqData>,
}

impl std::fmt::Debug for SandboxedProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SandboxedProgram")
    }
}

impl SandboxedProgram {
    /// Compiles `text`. Errors are those of validation ([`JqProgram::compile`]),
    /// so a program that validated always compiles here.
    pub fn compile(text: &str) -> Result<SandboxedProgram, JqError> {
        JqProgram::compile(text)?;
        let unsupported = || JqError {
            offset: 0,
            len: 0,
            kind: JqErrorKind::Syntax,
            message: "jq program cannot be sandboxed".to_owned(),
            help: None,
        };
        let main = jaq_core::load::parse(text, |p| p.term()).ok_or_else(unsupported)?;
        let prelude = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs())
            .filter(|def| !REMOVED.contains(&def.name))
            .map(|def| guard_def(shorten(def)))
            .chain([guard_def(Def {
                name: MAIN,
                args: Vec::new(),
                body: main,
            })]);
        let funs = jaq_core::funs::<JqData>()
            .chain(jaq_std::funs::<JqData>())
            .chain(jaq_json::funs::<JqData>())
            .filter(|(name, _, _)| !REMOVED.contains(name) && *name != "range")
            .chain(guarded_natives());
        let arena = Arena::default();
        let modules = Loader::new(prelude)
            .load(
                &arena,
                File {
                    code: MAIN,
                    path: (),
                },
            )
            .map_err(|_| unsupported())?;
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|_| unsupported())?;
        Ok(SandboxedProgram {
            text: text.to_owned(),
            filter,
        })
    }

    /// The program's source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Runs the program on `input` in the current thread under `budget`
    /// (which must be [`Budget::enter`]ed on this thread), pulling at most
    /// `max_outputs + 1` outputs.
    pub(super) fn outputs(&self, input: Val, max_outputs: usize) -> Result<Vec<Val>, SandboxError> {
        let ctx = Ctx::<JqData>::new(&self.filter.lut, Vars::new([]));
        let mut outputs = Vec::new();
        for output in self.filter.id.run((ctx, input)).map(jaq_core::unwrap_valr) {
            tripped()?;
            let output =
                output.map_err(|e| SandboxError::Failed(bounded_message(&e.to_string())))?;
            if outputs.len() == max_outputs {
                return Err(SandboxError::TooManyOutputs(max_outputs));
            }
            outputs.push(output);
        }
        tripped()?;
        Ok(outputs)
    }
}

fn guard_exn<'a>(error: SandboxError) -> Exn<'a, Val> {
    Exn::from(Error::str(error))
}

/// The guard native and the guarded `range/3`.
fn guarded_natives() -> impl Iterator<Item = jaq_core::native::Filter<Native<JqData>>> {
    [
        (
            GUARD,
            v(0),
            Native::new(|cv| match check_budget() {
                Ok(()) => box_once(Ok(cv.1)),
                Err(error) => box_once(Err(guard_exn(error))),
            }),
        ),
        (
            "range",
            v(3),
            Native::new(|mut cv| {
                let by = cv.0.pop_var();
                let to = cv.0.pop_var();
                let from = cv.0.pop_var();
                Box::new(guarded_range(Ok(from), to, by))
            }),
        ),
    ]
    .into_iter()
}

/// jaq-core's native `range/3` (MIT), with the budget checked before each output.
fn guarded_range<'a>(
    mut from: ValX<'a, Val>,
    to: Val,
    by: Val,
) -> impl Iterator<Item = ValX<'a, Val>> {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let cmp = by.partial_cmp(&Val::from(0isize)).unwrap_or(Equal);
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        if let Err(error) = check_budget() {
            done = true;
            return Some(Err(guard_exn(error)));
        }
        match from.clone() {
            Ok(x) => {
                let more = match cmp {
                    Greater => x < to,
                    Less => x > to,
                    Equal => x != to,
                };
                more.then(|| std::mem::replace(&mut from, (x + by.clone()).map_err(Exn::from)))
            }
            error @ Err(_) => {
                done = true;
                Some(error)
            }
        }
    })
}

/// A standard definition, seen with the program's (shorter) lifetime.
fn shorten<'a>(def: Def<&'static str>) -> Def<&'a str> {
    def
}

fn guard_def(def: Def<&str>) -> Def<&str> {
    Def {
        name: def.name,
        args: def.args,
        body: guarded(def.body),
    }
}

/// `__astrolift_guard | body`, with every nested definition guarded too.
fn guarded(body: Term<&str>) -> Term<&str> {
    Term::BinOp(
        Box::new(Term::Call(GUARD, Vec::new())),
        BinaryOp::Pipe(None),
        Box::new(guard_nested(body)),
    )
}

/// Guards every definition inside `term`. The match is exhaustive on
/// purpose: a new kind of term in jaq must be looked at here.
fn guard_nested(term: Term<&str>) -> Term<&str> {
    match term {
        Term::Id | Term::Recurse | Term::Num(_) | Term::Var(_) | Term::Break(_) => term,
        Term::Str(format, parts) => Term::Str(
            format,
            parts
                .into_iter()
                .map(|part| match part {
                    StrPart::Term(t) => StrPart::Term(guard_nested(t)),
                    other => other,
                })
                .collect(),
        ),
        Term::Arr(inner) => Term::Arr(inner.map(nested)),
        Term::Obj(entries) => Term::Obj(
            entries
                .into_iter()
                .map(|(k, v)| (guard_nested(k), v.map(guard_nested)))
                .collect(),
        ),
        Term::Neg(t) => Term::Neg(nested(t)),
        Term::BinOp(l, op, r) => {
            let op = match op {
                BinaryOp::Pipe(Some(pattern)) => BinaryOp::Pipe(Some(guard_pattern(pattern))),
                other => other,
            };
            Term::BinOp(nested(l), op, nested(r))
        }
        Term::Label(name, t) => Term::Label(name, nested(t)),
        Term::Fold(name, xs, pattern, args) => Term::Fold(
            name,
            nested(xs),
            guard_pattern(pattern),
            args.into_iter().map(guard_nested).collect(),
        ),
        Term::TryCatch(t, catch) => Term::TryCatch(nested(t), catch.map(nested)),
        Term::IfThenElse(branches, otherwise) => Term::IfThenElse(
            branches
                .into_iter()
                .map(|(c, t)| (guard_nested(c), guard_nested(t)))
                .collect(),
            otherwise.map(nested),
        ),
        Term::Def(defs, rest) => Term::Def(defs.into_iter().map(guard_def).collect(), nested(rest)),
        Term::Call(name, args) => Term::Call(name, args.into_iter().map(guard_nested).collect()),
        Term::Path(t, path) => Term::Path(nested(t), guard_path(path)),
    }
}

fn guard_path(path: Path<Term<&str>>) -> Path<Term<&str>> {
    Path(
        path.0
            .into_iter()
            .map(|(part, opt)| {
                let part = match part {
                    Part::Index(i) => Part::Index(guard_nested(i)),
                    Part::Range(from, upto) => {
                        Part::Range(from.map(guard_nested), upto.map(guard_nested))
                    }
                };
                (part, opt)
            })
            .collect(),
    )
}

/// Guards a boxed term in place (the box is reused).
fn nested(mut term: Box<Term<&str>>) -> Box<Term<&str>> {
    *term = guard_nested(std::mem::take(&mut *term));
    term
}

fn guard_pattern(pattern: Pattern<&str>) -> Pattern<&str> {
    match pattern {
        Pattern::Var(_) => pattern,
        Pattern::Arr(items) => Pattern::Arr(items.into_iter().map(guard_pattern).collect()),
        Pattern::Obj(entries) => Pattern::Obj(
            entries
                .into_iter()
                .map(|(k, p)| (guard_nested(k), guard_pattern(p)))
                .collect(),
        ),
    }
}
