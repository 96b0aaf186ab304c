//! docs/reference.md's command tables against the `--help` of the `astrolift` this build
//! made: a flag, a default or a variable the reference names is the one the command has, and
//! every flag a command has is in the reference. The rules a table writer follows:
//!
//! - **The Commands table** (its first header cell `Command`) has a row for every command of
//!   `--help`. A row's first cell starts with its synopsis, `` `COMMAND [ARGS] [--flag V]` ``;
//!   a command may have several rows (`package` and `package --all`). Every `--flag` of a
//!   synopsis is a flag of that command's `--help`, and the synopses of a command's rows and
//!   the flag tables together name every flag its `--help` lists (`--help`, `--version` and
//!   the global flags of `astrolift --help` aside: the reference names those once, anywhere).
//! - **A flag table** (its first header cell `Flag`) documents flags that several commands
//!   share, or the many of one command. A row's flag is a flag of some command; its `Default`
//!   cell starts with the `--help` default (`none` when there is none) and its variable (the
//!   `Variable` cell, or `` (`VAR`) `` in the flag's cell) is the `--help` `[env: VAR]`, for
//!   every command that has the flag and whose rows do not list it (when every such command
//!   lists it: for each of them).
//! - **A default** `--help` shows for a flag that a synopsis lists is stated in a row of the
//!   command: as the first value of a choice (`[--format human\|json]`), as the value itself
//!   (`[--ref main]`), or as `default D` (`defaults to D`) after a mention of the flag and
//!   before the next flag; or by a flag table's row for it. Any other default a row states
//!   that way is wrong. Its variable is named in a row of the command, or by a flag table.
//! - **The environment table** (§13, header `Variable | Read by`) has a row for every
//!   variable of a `[env: VAR]`. When its flag has a default, a row of that one variable
//!   that mentions a default states the flag's, and any other row names the flag or states
//!   its default.
//!
//! A failure names the line of docs/reference.md and the flag.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::support::astrolift;

const REFERENCE: &str = "docs/reference.md";

/// A flag of one `--help` page: its default and its variable, as `--help` shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct HelpFlag {
    default: Option<String>,
    env: Option<String>,
}

/// What one `astrolift … --help` lists.
#[derive(Debug, Default)]
struct HelpPage {
    flags: BTreeMap<String, HelpFlag>,
    subcommands: Vec<String>,
    arguments: bool,
}

/// One row of a Markdown table: its line (1-based), its cells and its whole text.
#[derive(Debug)]
struct Row {
    line: usize,
    cells: Vec<String>,
    text: String,
}

#[derive(Debug)]
struct Table {
    line: usize,
    header: Vec<String>,
    rows: Vec<Row>,
}

/// A row of the Commands table, read.
#[derive(Debug)]
struct CommandRow<'a> {
    row: &'a Row,
    command: String,
    synopsis: String,
    flags: BTreeSet<String>,
}

/// A row of a flag table, read.
#[derive(Debug)]
struct FlagRow {
    line: usize,
    flag: String,
    default: Option<String>,
    env: Option<String>,
}

#[test]
fn the_command_tables_of_the_reference_match_help() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(REFERENCE),
    )
    .expect("docs/reference.md");
    let tables = tables(&text);
    let top = help_page(&[]);
    let pages = commands(&top);
    let globals: BTreeSet<String> = top
        .flags
        .keys()
        .filter(|flag| !is_builtin(flag))
        .cloned()
        .collect();
    let mut failures = Vec::new();

    let commands_table = tables
        .iter()
        .find(|t| t.header.first().map(String::as_str) == Some("Command"));
    let Some(commands_table) = commands_table else {
        panic!("{REFERENCE}: no table whose first header cell is `Command`");
    };
    let rows = command_rows(commands_table, &pages, &mut failures);
    let flag_rows: Vec<FlagRow> = tables
        .iter()
        .filter(|t| t.header.first().map(String::as_str) == Some("Flag"))
        .flat_map(flag_rows)
        .collect();

    for global in &globals {
        if !text.contains(&format!("`{global}")) {
            failures.push(format!(
                "{REFERENCE}: the global flag `{global}` of `astrolift --help` is named nowhere"
            ));
        }
    }
    for (command, page) in &pages {
        let own = |flag: &&String| !is_builtin(flag) && !globals.contains(*flag);
        let documentable = page.subcommands.is_empty()
            || page.arguments
            || page.flags.keys().any(|flag| own(&flag));
        let of_command: Vec<&CommandRow> = rows.iter().filter(|r| &r.command == command).collect();
        if documentable && of_command.is_empty() {
            failures.push(format!(
                "{REFERENCE}:{}: `astrolift {command}` (in --help) has no row in the Commands table",
                commands_table.line
            ));
            continue;
        }
        for (flag, shown) in page.flags.iter().filter(|(flag, _)| own(flag)) {
            check_help_flag(
                command,
                flag,
                shown,
                &of_command,
                &flag_rows,
                commands_table.line,
                &mut failures,
            );
        }
        for row in &of_command {
            for flag in row.flags.iter().filter(|f| !page.flags.contains_key(*f)) {
                failures.push(format!(
                    "{REFERENCE}:{}: `{flag}` is in the synopsis of `astrolift {command}` but not in its --help",
                    row.row.line
                ));
            }
        }
    }
    for documented in &flag_rows {
        check_flag_row(documented, &pages, &rows, &mut failures);
    }
    check_environment_table(&tables, &pages, &mut failures);
    assert!(
        failures.is_empty(),
        "docs/reference.md and --help disagree:\n{}",
        failures.join("\n")
    );
}

/// A flag of `astrolift COMMAND --help` is in a synopsis of the command or in a flag table;
/// when a synopsis lists it, the command's rows (or a flag table) state its default and
/// variable.
fn check_help_flag(
    command: &str,
    flag: &str,
    shown: &HelpFlag,
    rows: &[&CommandRow],
    flag_rows: &[FlagRow],
    table_line: usize,
    failures: &mut Vec<String>,
) {
    let listing: Vec<&&CommandRow> = rows.iter().filter(|r| r.flags.contains(flag)).collect();
    let tabled: Vec<&FlagRow> = flag_rows.iter().filter(|r| r.flag == flag).collect();
    let line = rows.first().map_or(table_line, |r| r.row.line);
    if listing.is_empty() {
        if tabled.is_empty() {
            failures.push(format!(
                "{REFERENCE}:{line}: `{flag}` of `astrolift {command} --help` is in no synopsis of the command and no flag table"
            ));
        }
        // A flag table documents it: `check_flag_row` compares its default and variable.
        return;
    }
    if let Some(default) = &shown.default {
        for row in rows {
            for wrong in defaults_after(&row.row.text, flag)
                .into_iter()
                .filter(|stated| stated != default)
            {
                failures.push(format!(
                    "{REFERENCE}:{}: `astrolift {command}`'s row says `{flag}` defaults to `{wrong}`, \
                     but --help shows `{default}`",
                    row.row.line
                ));
            }
        }
        let stated = listing.iter().any(|r| states_default(r, flag, default))
            || tabled.iter().any(|t| t.default.as_ref() == Some(default));
        if !stated {
            failures.push(format!(
                "{REFERENCE}:{}: `astrolift {command}`'s row does not state the default of `{flag}`, `{default}` in --help \
                 (write `[{flag} {default}]`, a choice starting with it, or `{flag}` ... default `{default}`)",
                listing[0].row.line
            ));
        }
    }
    if let Some(env) = &shown.env {
        let named = rows.iter().any(|r| r.row.text.contains(env.as_str()))
            || tabled.iter().any(|t| t.env.as_ref() == Some(env));
        if !named {
            failures.push(format!(
                "{REFERENCE}:{}: `astrolift {command}`'s rows do not name `{env}`, the variable of `{flag}` in --help",
                listing[0].row.line
            ));
        }
    }
}

/// A flag table's row matches the `--help` of the commands it documents the flag for.
fn check_flag_row(
    documented: &FlagRow,
    pages: &BTreeMap<String, HelpPage>,
    rows: &[CommandRow],
    failures: &mut Vec<String>,
) {
    let flag = &documented.flag;
    let having: Vec<(&String, &HelpFlag)> = pages
        .iter()
        .filter_map(|(command, page)| page.flags.get(flag).map(|shown| (command, shown)))
        .collect();
    if having.is_empty() {
        failures.push(format!(
            "{REFERENCE}:{}: `{flag}` is in a flag table but in no command's --help",
            documented.line
        ));
        return;
    }
    let unlisted: Vec<(&String, &HelpFlag)> = having
        .iter()
        .copied()
        .filter(|(command, _)| {
            !rows
                .iter()
                .any(|r| &r.command == *command && r.flags.contains(flag))
        })
        .collect();
    let documents = if unlisted.is_empty() {
        having
    } else {
        unlisted
    };
    // The commands whose --help disagrees, by what they show instead.
    let mut disagreeing: BTreeMap<(&str, Option<&str>), Vec<&str>> = BTreeMap::new();
    for (command, shown) in documents {
        let pairs = [
            ("default", &documented.default, &shown.default),
            ("variable", &documented.env, &shown.env),
        ];
        for (what, here, help) in pairs {
            if here != help {
                let key = (what, help.as_deref());
                disagreeing.entry(key).or_default().push(command);
            }
        }
    }
    for ((what, help), commands) in disagreeing {
        let here = match what {
            "default" => &documented.default,
            _ => &documented.env,
        };
        failures.push(format!(
            "{REFERENCE}:{}: `{flag}`'s {what} is {} here but {} in the --help of `{}`",
            documented.line,
            shown_or_none(here.as_deref()),
            shown_or_none(help),
            commands.join("`, `"),
        ));
    }
}

/// Every `[env: VAR]` of a `--help` has a row in the environment table that names its flag
/// or states its default.
fn check_environment_table(
    tables: &[Table],
    pages: &BTreeMap<String, HelpPage>,
    failures: &mut Vec<String>,
) {
    let Some(environment) = tables.iter().find(|t| {
        t.header
            .iter()
            .take(2)
            .map(String::as_str)
            .eq(["Variable", "Read by"])
    }) else {
        failures.push(format!(
            "{REFERENCE}: no environment table (header `Variable | Read by`)"
        ));
        return;
    };
    // Each variable once, with the flag it sets and that flag's default.
    let mut variables: BTreeMap<&str, (&str, Option<&str>, &str)> = BTreeMap::new();
    for (command, page) in pages {
        for (flag, shown) in &page.flags {
            let Some(env) = &shown.env else { continue };
            let this = (flag.as_str(), shown.default.as_deref(), command.as_str());
            let known = variables.entry(env.as_str()).or_insert(this);
            // A command that gives the variable's flag no default (`validate --state`)
            // does not hide another's default.
            if known.1.is_none() {
                *known = this;
            }
        }
    }
    for (variable, (flag, default, command)) in variables {
        let row = environment.rows.iter().find(|row| {
            row.cells
                .first()
                .is_some_and(|cell| code_spans(cell).any(|span| span == variable))
        });
        let Some(row) = row else {
            failures.push(format!(
                "{REFERENCE}:{}: `{variable}` (`{flag}` of `astrolift {command} --help`) has no row in the environment table",
                environment.line
            ));
            continue;
        };
        let alone = row
            .cells
            .first()
            .is_some_and(|cell| code_spans(cell).count() == 1);
        let stated = stated_defaults(&row.text);
        let states = default.is_some_and(|d| stated.contains(&d));
        let names_flag = flag_mentions(&row.text, flag).next().is_some();
        if let Some(default) = default.filter(|_| alone && !stated.is_empty() && !states) {
            failures.push(format!(
                "{REFERENCE}:{}: `{variable}` states a default, but not `{default}`, the one of `{flag}` in `astrolift {command} --help`",
                row.line
            ));
        } else if default.is_some() && !states && !names_flag {
            failures.push(format!(
                "{REFERENCE}:{}: `{variable}` names neither `{flag}` (`astrolift {command}`) nor its default",
                row.line
            ));
        }
    }
}

fn shown_or_none(value: Option<&str>) -> String {
    value.map_or_else(|| "none".to_owned(), |v| format!("`{v}`"))
}

fn is_builtin(flag: &str) -> bool {
    flag == "--help" || flag == "--version"
}

/// Every command under `top` that --help lists, by its words (`env-spec upsert`).
fn commands(top: &HelpPage) -> BTreeMap<String, HelpPage> {
    let mut pages = BTreeMap::new();
    let mut pending: Vec<Vec<String>> = top.subcommands.iter().map(|c| vec![c.clone()]).collect();
    while let Some(path) = pending.pop() {
        let page = help_page(&path);
        for sub in &page.subcommands {
            pending.push([path.clone(), vec![sub.clone()]].concat());
        }
        pages.insert(path.join(" "), page);
    }
    pages
}

fn help_page(path: &[String]) -> HelpPage {
    let run = astrolift(path.iter().map(String::as_str).chain(["--help"]));
    assert_eq!(
        run.code,
        0,
        "astrolift {} --help: {}",
        path.join(" "),
        run.stderr
    );
    parse_help(&run.stdout)
}

/// The sections of clap's help: `Commands:` (one name per line), `Arguments:`, `Options:`
/// (a line per flag, `-h, --help` or `--flag <V>`, then its text, with `[default: D]` and
/// `[env: VAR=]` in it, on the same line or the lines below).
fn parse_help(help: &str) -> HelpPage {
    #[derive(PartialEq)]
    enum Section {
        Commands,
        Arguments,
        Options,
        Other,
    }
    let mut page = HelpPage::default();
    let mut section = Section::Other;
    let mut current: Option<(String, String)> = None;
    let finish = |current: &mut Option<(String, String)>, page: &mut HelpPage| {
        if let Some((flag, text)) = current.take() {
            let shown = HelpFlag {
                default: bracketed(&text, "[default: ", ']'),
                env: bracketed(&text, "[env: ", '='),
            };
            page.flags.insert(flag, shown);
        }
    };
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        if indent == 0 && !line.is_empty() {
            finish(&mut current, &mut page);
            section = match line {
                "Commands:" => Section::Commands,
                "Arguments:" => Section::Arguments,
                "Options:" => Section::Options,
                _ => Section::Other,
            };
            continue;
        }
        match section {
            Section::Commands if indent == 2 => {
                if let Some(name) = line.split_whitespace().next().filter(|n| *n != "help") {
                    page.subcommands.push(name.to_owned());
                }
            }
            Section::Arguments if indent == 2 => page.arguments = true,
            Section::Options if indent <= 6 && line.trim_start().starts_with('-') => {
                finish(&mut current, &mut page);
                let rest = line.trim_start();
                let long = rest.find("--").map(|at| &rest[at..]).unwrap_or(rest);
                let name: String = long
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '<' && *c != ',')
                    .collect();
                current = Some((name, rest.to_owned()));
            }
            Section::Options => {
                if let Some((_, text)) = &mut current {
                    text.push(' ');
                    text.push_str(line.trim());
                }
            }
            _ => {}
        }
    }
    finish(&mut current, &mut page);
    page
}

/// The text between `open` and the next `close`, if `text` holds `open`.
fn bracketed(text: &str, open: &str, close: char) -> Option<String> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(text[start..end].trim().to_owned())
}

/// The tables of a Markdown text, outside fenced code blocks.
fn tables(text: &str) -> Vec<Table> {
    let mut tables = Vec::new();
    let mut current: Option<Table> = None;
    let mut fenced = false;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let is_row = !fenced && line.trim_start().starts_with('|');
        match (&mut current, is_row) {
            (Some(table), true) => {
                let cells = cells(line);
                // The separator under the header.
                if !cells
                    .iter()
                    .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
                {
                    table.rows.push(Row {
                        line: number,
                        cells,
                        text: line.to_owned(),
                    });
                }
            }
            (None, true) => {
                current = Some(Table {
                    line: number,
                    header: cells(line),
                    rows: Vec::new(),
                });
            }
            (_, false) => tables.extend(current.take()),
        }
    }
    tables.extend(current);
    tables
}

/// A table line's cells, split at each `|` that is not escaped (`\|`), trimmed.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut escaped = false;
    for c in inner.chars() {
        if c == '|' && !escaped {
            cells.push(cell.trim().to_owned());
            cell.clear();
        } else {
            cell.push(c);
        }
        escaped = c == '\\';
    }
    cells.push(cell.trim().to_owned());
    cells
}

/// The contents of the code spans of `text`, `\|` read as `|`.
fn code_spans(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|span| span.replace("\\|", "|"))
}

/// The Commands table's rows, each with its command (the longest run of the synopsis's
/// first words that is a command of --help) and the flags of its synopsis.
fn command_rows<'a>(
    table: &'a Table,
    pages: &BTreeMap<String, HelpPage>,
    failures: &mut Vec<String>,
) -> Vec<CommandRow<'a>> {
    let mut rows = Vec::new();
    for row in &table.rows {
        let Some(synopsis) = row.cells.first().and_then(|cell| code_spans(cell).next()) else {
            failures.push(format!(
                "{REFERENCE}:{}: a command row without a synopsis",
                row.line
            ));
            continue;
        };
        let words: Vec<&str> = synopsis.split_whitespace().collect();
        let command = (1..=words.len())
            .rev()
            .map(|n| words[..n].join(" "))
            .find(|candidate| pages.contains_key(candidate));
        let Some(command) = command else {
            failures.push(format!(
                "{REFERENCE}:{}: `{synopsis}` names no command of `astrolift --help`",
                row.line
            ));
            continue;
        };
        let flags = flag_mentions(&synopsis, "")
            .map(|mention| mention.flag.to_owned())
            .collect();
        rows.push(CommandRow {
            row,
            command,
            synopsis,
            flags,
        });
    }
    rows
}

/// The flags a flag table documents, with the default and variable it gives each.
fn flag_rows(table: &Table) -> Vec<FlagRow> {
    let column = |name: &str| table.header.iter().position(|h| h == name);
    let (default_column, variable_column) = (column("Default"), column("Variable"));
    let mut rows = Vec::new();
    for row in &table.rows {
        let first = row.cells.first().map(String::as_str).unwrap_or_default();
        let Some(flag) = flag_mentions(first, "").next().map(|m| m.flag) else {
            continue;
        };
        let is_variable = |span: &String| {
            !span.is_empty()
                && span
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        };
        let env = match variable_column {
            Some(at) => row
                .cells
                .get(at)
                .and_then(|cell| code_spans(cell).find(is_variable)),
            None => code_spans(first).find(is_variable),
        };
        let default = default_column
            .and_then(|at| row.cells.get(at))
            .and_then(|cell| match cell.strip_prefix('`') {
                Some(quoted) => quoted.split('`').next().map(str::to_owned),
                None => cell.split_whitespace().next().map(str::to_owned),
            })
            .filter(|d| d != "none");
        rows.push(FlagRow {
            line: row.line,
            flag: flag.to_owned(),
            default,
            env,
        });
    }
    rows
}

/// A flag named in a text: the flag, where it starts and where it ends.
struct Mention<'t> {
    flag: &'t str,
    start: usize,
    end: usize,
}

/// The mentions of a flag (`--name`, not part of a longer one) in `text`; with `only`
/// empty, the mentions of every flag.
fn flag_mentions<'t>(text: &'t str, only: &str) -> impl Iterator<Item = Mention<'t>> {
    let is_name = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    let only = only.to_owned();
    text.match_indices("--").filter_map(move |(start, _)| {
        if text[..start].chars().next_back().is_some_and(is_name) {
            return None;
        }
        let rest = &text[start + 2..];
        if !rest.starts_with(|c: char| c.is_ascii_lowercase()) {
            return None;
        }
        let end = start + 2 + rest.find(|c: char| !is_name(c)).unwrap_or(rest.len());
        let flag = &text[start..end];
        (only.is_empty() || flag == only).then_some(Mention { flag, start, end })
    })
}

/// Whether a command row states `default` as `flag`'s: as the synopsis value (or a choice's
/// first value) after the flag, or `default D` after a mention of the flag in the row,
/// before the next flag's.
fn states_default(row: &CommandRow, flag: &str, default: &str) -> bool {
    let synopsis = &row.synopsis;
    let in_synopsis = flag_mentions(synopsis, flag).any(|mention| {
        synopsis[mention.end..]
            .strip_prefix(' ')
            .and_then(|value| value.split([' ', ']']).next())
            .and_then(|value| value.split('|').next())
            .is_some_and(|first| first == default)
    });
    in_synopsis || defaults_after(&row.row.text, flag).contains(&default)
}

/// The defaults `text` states after each mention of `flag`, before the next flag's.
fn defaults_after<'t>(text: &'t str, flag: &str) -> Vec<&'t str> {
    flag_mentions(text, flag)
        .flat_map(|mention| {
            let until = flag_mentions(text, "")
                .find(|next| next.start >= mention.end)
                .map_or(text.len(), |next| next.start);
            stated_defaults(&text[mention.end..until])
        })
        .collect()
}

/// The values `text` states as a default: `default D`, `defaults to D` or `default: D`,
/// `D` in backticks or the word after (without the punctuation that ends it).
fn stated_defaults(text: &str) -> Vec<&str> {
    text.match_indices("default")
        .filter_map(|(at, word)| {
            let rest = &text[at + word.len()..];
            let rest = match rest.strip_prefix("s to") {
                Some(rest) => rest,
                // A longer word (`defaults are`): no value follows.
                None if rest.starts_with(|c: char| c.is_ascii_alphanumeric()) => return None,
                None => rest.strip_prefix(':').unwrap_or(rest),
            }
            .trim_start();
            let value = match rest.strip_prefix('`') {
                Some(quoted) => quoted.split('`').next().unwrap_or_default(),
                None => rest
                    .split(|c: char| c.is_whitespace() || ")];,`".contains(c))
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches('.'),
            };
            (!value.is_empty()).then_some(value)
        })
        .collect()
}
