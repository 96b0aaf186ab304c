//! The `/astrolift` commands of a comment on a pull request (docs/reference.md §17),
//! parsed without I/O, and the escapes that make comment text safe to echo in a reply.
//!
//! **Command lines.** A line is a command line when its text, after leading spaces or
//! tabs, is `/astrolift` alone or starts with `/astrolift` and a space or a tab. Lines end
//! at `\n`, with a `\r` before it dropped (comments written on GitHub end their lines in
//! CRLF). At most [`MAX_COMMANDS`] command lines of a comment are parsed: the scan stops
//! at the next command line after them, which only sets [`ParsedComment::more_than_five`],
//! so a comment costs at most five parses however many command lines it holds. Each
//! command line keeps its 1-based index among the comment's command lines
//! ([`CommandLine::index`]): with the comment's id, the idempotency key of what it starts.
//!
//! **Words** are split as a POSIX shell splits a line, and never run: spaces and tabs
//! separate words; `'…'` keeps everything inside as it is; `"…"` does too, except that `\"`
//! is `"` and `\\` is `\`; outside quotes a backslash keeps the next character as it is;
//! quoted and unquoted parts next to each other make one word. `$(…)`, backticks, `;`, `|`,
//! `&&`, `>` and every other character are plain data. An unterminated quote, a line that
//! ends in a backslash, and a control character (other than a tab) or a bidirectional
//! formatting character anywhere in the line are errors of that line alone.
//!
//! **Commands:** `dispatch AGENT [--env-spec NAME] [--input JSON]` (each flag also as
//! `--flag=VALUE`; `--` ends the flags; `--input` must be a JSON object), `recheck`,
//! `preview` (these two take no arguments), `help` (its arguments are ignored); any other
//! name, or none, is [`Command::Unknown`], which a reply answers with [`help_text`].
//!
//! **Echoing.** Comment text quoted in a reply goes through [`code_span`] (or [`echo`],
//! which also cuts it) or [`escape_markdown_inline`], so that it can add no link, image,
//! HTML, heading, list, emphasis or line break, and mention (ping) nobody.

use std::fmt;

use serde_json::{Map, Value};

/// The word that starts a command line.
pub const COMMAND_PREFIX: &str = "/astrolift";
/// Command lines run per comment; later ones are ignored (and the reply says so).
pub const MAX_COMMANDS: usize = 5;
/// Characters of comment text one echo shows ([`echo`]); the rest is cut.
pub const MAX_ECHO_CHARS: usize = 200;

/// A comment's command lines: at most [`MAX_COMMANDS`], in the comment's order.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedComment {
    pub commands: Vec<CommandLine>,
    /// The comment has more command lines than [`MAX_COMMANDS`]: the rest were not read.
    pub more_than_five: bool,
}

/// One command line and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandLine {
    /// 1-based, among the comment's command lines (not among all its lines).
    pub index: u32,
    /// The line from `/astrolift` on, without its line break: for echoing ([`echo`]).
    pub text: String,
    /// The command, or why the line is not one.
    pub command: Result<Command, CommandError>,
}

/// A command of a comment.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `dispatch AGENT [--env-spec NAME] [--input JSON]`.
    Dispatch(DispatchCommand),
    /// `recheck`: the head checked again, as the check run's **Re-run** does.
    Recheck,
    /// `preview`: a fork's head approved for previews; elsewhere the previews synced again.
    Preview,
    /// `help`: the reply lists the commands.
    Help,
    /// Any other command name (`""` for `/astrolift` alone): answered with the help.
    Unknown { name: String },
}

impl Command {
    /// The command's name as written (`dispatch`, …; an unknown one's own).
    pub fn name(&self) -> &str {
        match self {
            Command::Dispatch(_) => "dispatch",
            Command::Recheck => "recheck",
            Command::Preview => "preview",
            Command::Help => "help",
            Command::Unknown { name } => name,
        }
    }

    /// Whether running it needs write, maintain or admin permission on the repository:
    /// every command but `help` (and an unknown one, which is answered with the help).
    pub fn needs_write(&self) -> bool {
        matches!(
            self,
            Command::Dispatch(_) | Command::Recheck | Command::Preview
        )
    }
}

/// What `dispatch` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchCommand {
    /// The agent's name, or its preview's (`<agent>-pr<N>`), as written.
    pub agent: String,
    /// `--env-spec NAME`.
    pub env_spec: Option<String>,
    /// `--input JSON`: the dispatch's input.
    pub input: Option<Map<String, Value>>,
}

/// Why a command line is not a command. [`fmt::Display`] is plain text (user text in it
/// cut and with control characters escaped); [`CommandError::markdown`] is for a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("the {} quote is not closed", quote_name(*quote))]
    UnterminatedQuote { quote: char },
    #[error("the line ends with a backslash")]
    TrailingBackslash,
    #[error("the line holds the invisible character {}", character.escape_unicode())]
    HiddenCharacter { character: char },
    #[error("`dispatch` needs an AGENT")]
    MissingAgent,
    #[error("`{command}` does not take the argument `{}`", plain(argument))]
    UnexpectedArgument {
        command: &'static str,
        argument: String,
    },
    #[error(
        "`dispatch` has no flag `{}` (it has `--env-spec` and `--input`)",
        plain(flag)
    )]
    UnknownFlag { flag: String },
    #[error("`{flag}` needs a value")]
    MissingValue { flag: &'static str },
    #[error("`{flag}` is given more than once")]
    RepeatedFlag { flag: &'static str },
    /// The value is JSON of another kind: `got` names it (`an array`, `a string`, …).
    #[error("`--input` must be a JSON object, not {got}")]
    InputNotAnObject { got: &'static str },
    /// The value is not JSON: `reason` is serde_json's (a position and what it expected).
    #[error("`--input` must be a JSON object, not text that is not JSON ({reason})")]
    InputNotJson { reason: String },
}

impl CommandError {
    /// The message as Markdown for a reply: comment text in it shown with [`echo`].
    pub fn markdown(&self) -> String {
        match self {
            CommandError::UnterminatedQuote { quote } => {
                format!("the {} quote is not closed", quote_name(*quote))
            }
            CommandError::TrailingBackslash => "the line ends with a backslash".to_owned(),
            CommandError::HiddenCharacter { character } => format!(
                "the line holds the invisible character {}",
                code_span(&character.escape_unicode().to_string())
            ),
            CommandError::MissingAgent => "`dispatch` needs an AGENT".to_owned(),
            CommandError::UnexpectedArgument { command, argument } => {
                format!("`{command}` does not take the argument {}", echo(argument))
            }
            CommandError::UnknownFlag { flag } => format!(
                "`dispatch` has no flag {} (it has `--env-spec` and `--input`)",
                echo(flag)
            ),
            CommandError::MissingValue { flag } => format!("`{flag}` needs a value"),
            CommandError::RepeatedFlag { flag } => format!("`{flag}` is given more than once"),
            CommandError::InputNotAnObject { got } => {
                format!("`--input` must be a JSON object, not {got}")
            }
            CommandError::InputNotJson { reason } => format!(
                "`--input` must be a JSON object, not text that is not JSON ({})",
                echo(reason)
            ),
        }
    }
}

fn quote_name(quote: char) -> &'static str {
    if quote == '"' { "double" } else { "single" }
}

/// User text in a plain message: cut, and control characters shown as escapes.
fn plain(raw: &str) -> String {
    let (kept, cut) = cut(raw, MAX_ECHO_CHARS);
    let mut out = visible(kept);
    if cut {
        out.push('…');
    }
    out
}

/// Parses the command lines of a comment's `body` (see the module docs).
pub fn parse_comment(body: &str) -> ParsedComment {
    parse_comment_with(body, parse_command)
}

/// [`parse_comment`] with the parse of one command line's arguments handed in, so a
/// test can count the parses.
fn parse_comment_with(
    body: &str,
    mut parse: impl FnMut(&str) -> Result<Command, CommandError>,
) -> ParsedComment {
    let mut lines = body.split('\n').filter_map(command_line);
    let mut commands = Vec::new();
    for ((text, arguments), index) in lines.by_ref().take(MAX_COMMANDS).zip(1u32..) {
        commands.push(CommandLine {
            index,
            text: text.to_owned(),
            command: parse(arguments),
        });
    }
    ParsedComment {
        commands,
        more_than_five: lines.next().is_some(),
    }
}

/// A command line's text from `/astrolift` on and its arguments (what follows
/// `/astrolift`), when `line` is one.
fn command_line(line: &str) -> Option<(&str, &str)> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let text = line.trim_start_matches([' ', '\t']);
    let arguments = text.strip_prefix(COMMAND_PREFIX)?;
    (arguments.is_empty() || arguments.starts_with([' ', '\t'])).then_some((text, arguments))
}

/// Characters refused anywhere in a command line: control characters but the tab, and
/// the bidirectional formatting characters, which make text read otherwise than it runs.
fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// One command line's arguments (what follows `/astrolift`) as a command.
fn parse_command(arguments: &str) -> Result<Command, CommandError> {
    if let Some(character) = arguments.chars().find(|c| is_hidden(*c)) {
        return Err(CommandError::HiddenCharacter { character });
    }
    let mut words = split_words(arguments)?.into_iter();
    let Some(name) = words.next() else {
        return Ok(Command::Unknown {
            name: String::new(),
        });
    };
    match name.as_str() {
        "dispatch" => parse_dispatch(words).map(Command::Dispatch),
        "recheck" => no_arguments("recheck", words).map(|()| Command::Recheck),
        "preview" => no_arguments("preview", words).map(|()| Command::Preview),
        "help" => Ok(Command::Help),
        _ => Ok(Command::Unknown { name }),
    }
}

/// The words of `line`, split as a POSIX shell splits them (see the module docs).
fn split_words(line: &str) -> Result<Vec<String>, CommandError> {
    let mut words = Vec::new();
    // `Some` once a word has begun, even with nothing in it yet (`''` is a word).
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take()),
            '\'' => {
                let word = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(CommandError::UnterminatedQuote { quote: '\'' }),
                    }
                }
            }
            '"' => {
                let word = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(CommandError::UnterminatedQuote { quote: '"' }),
                        },
                        Some(c) => word.push(c),
                        None => return Err(CommandError::UnterminatedQuote { quote: '"' }),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err(CommandError::TrailingBackslash),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

fn no_arguments(
    command: &'static str,
    mut words: impl Iterator<Item = String>,
) -> Result<(), CommandError> {
    match words.next() {
        None => Ok(()),
        Some(argument) => Err(CommandError::UnexpectedArgument { command, argument }),
    }
}

fn parse_dispatch(words: impl Iterator<Item = String>) -> Result<DispatchCommand, CommandError> {
    let mut words = words;
    let mut agent = None;
    let mut env_spec = None;
    let mut input = None;
    let mut flags_ended = false;
    while let Some(word) = words.next() {
        if flags_ended || !word.starts_with('-') || word == "-" {
            if agent.is_some() {
                return Err(CommandError::UnexpectedArgument {
                    command: "dispatch",
                    argument: word,
                });
            }
            agent = Some(word);
            continue;
        }
        if word == "--" {
            flags_ended = true;
            continue;
        }
        let (flag, inline) = match word.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_owned())),
            None => (word.as_str(), None),
        };
        let flag = match flag {
            "--env-spec" => "--env-spec",
            "--input" => "--input",
            other => {
                return Err(CommandError::UnknownFlag {
                    flag: other.to_owned(),
                });
            }
        };
        // A flag's value is the next word unless that is another flag.
        let value = match inline {
            Some(value) => Some(value),
            None => match words.next() {
                Some(next) if next.starts_with("--") => None,
                next => next,
            },
        };
        let value = value
            .filter(|value| !value.is_empty())
            .ok_or(CommandError::MissingValue { flag })?;
        if flag == "--env-spec" {
            if env_spec.replace(value).is_some() {
                return Err(CommandError::RepeatedFlag { flag });
            }
        } else if input.replace(json_object(&value)?).is_some() {
            return Err(CommandError::RepeatedFlag { flag });
        }
    }
    let agent = agent
        .filter(|agent| !agent.is_empty())
        .ok_or(CommandError::MissingAgent)?;
    Ok(DispatchCommand {
        agent,
        env_spec,
        input,
    })
}

/// `--input`'s value as a JSON object, or what it is instead.
fn json_object(value: &str) -> Result<Map<String, Value>, CommandError> {
    let got = match serde_json::from_str::<Value>(value) {
        Ok(Value::Object(object)) => return Ok(object),
        Ok(Value::Array(_)) => "an array",
        Ok(Value::String(_)) => "a string",
        Ok(Value::Number(_)) => "a number",
        Ok(Value::Bool(_)) => "a boolean",
        Ok(Value::Null) => "`null`",
        Err(error) => {
            return Err(CommandError::InputNotJson {
                reason: error.to_string(),
            });
        }
    };
    Err(CommandError::InputNotAnObject { got })
}

/// The reply to `help` and to an unknown command: every command, as Markdown.
pub fn help_text() -> String {
    format!(
        "**Astrolift commands**, one per line of a comment on this pull request \
         (at most {MAX_COMMANDS} per comment):\n\
         \n\
         - `/astrolift dispatch AGENT [--env-spec NAME] [--input JSON]`: dispatches the \
         preview of `AGENT` (its name, or `AGENT-prN`) at this pull request's previewed head, \
         with the env spec `NAME` (one that allows previews) and the input `JSON` (an \
         object); the reply brings the result when the task ends.\n\
         - `/astrolift recheck`: checks the head again, as the check run's **Re-run** does.\n\
         - `/astrolift preview`: from a fork, previews the head as it is now (a later push \
         needs a new `preview`); otherwise syncs the previews again.\n\
         - `/astrolift help`: this list.\n\
         \n\
         Every command but `help` needs write, maintain or admin permission on the \
         repository. Arguments are quoted as in a shell (`'…'`, `\"…\"`, `\\`), and nothing \
         in them is run.\n"
    )
}

/// `raw` as a Markdown code span on one line, outside a table: the fence is one backtick
/// longer than the longest run of backticks inside (CommonMark's rule), and control and
/// bidirectional formatting characters are shown as escapes such as `\n` or `\u{202e}`,
/// so the span cannot end a paragraph or be read otherwise than it runs. GitHub neither
/// links nor mentions inside a code span, and shows HTML there as text.
pub fn code_span(raw: &str) -> String {
    let raw = visible(raw);
    if raw.is_empty() {
        return "` `".to_owned();
    }
    let longest = raw.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if longest > 0 { " " } else { "" };
    format!("{fence}{pad}{raw}{pad}{fence}")
}

/// [`code_span`] of at most [`MAX_ECHO_CHARS`] characters of `raw`, `…` after it when cut:
/// how a reply quotes a command line or an argument.
pub fn echo(raw: &str) -> String {
    let (kept, cut) = cut(raw, MAX_ECHO_CHARS);
    let span = code_span(kept);
    if cut { format!("{span}…") } else { span }
}

/// `raw` as plain Markdown text: every ASCII punctuation character backslash-escaped (so
/// no emphasis, link, image, HTML, entity, heading, list, table cell or autolink can
/// start), a word joiner (U+2060) after each `@` (so no `@user` or `@org/team` mentions
/// anyone: GitHub matches mentions in the rendered text, after the escapes), and control
/// and bidirectional formatting characters turned into spaces.
pub fn escape_markdown_inline(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() + raw.len() / 4);
    for c in raw.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
            out.push(c);
            if c == '@' {
                out.push('\u{2060}');
            }
        } else if is_hidden(c) || c.is_control() {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// Control and bidirectional formatting characters as Rust-style escapes; the rest as is.
fn visible(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        if is_hidden(c) || c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The first `max` characters of `raw`, and whether anything was cut.
fn cut(raw: &str, max: usize) -> (&str, bool) {
    match raw.char_indices().nth(max) {
        Some((index, _)) => (&raw[..index], true),
        None => (raw, false),
    }
}

impl fmt::Display for Command {
    /// The command as a reply names it: `dispatch`, …, or `/astrolift` with an unknown
    /// name (plain text; use [`echo`] for Markdown).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{COMMAND_PREFIX} {}", plain(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(body: &str) -> Result<Command, CommandError> {
        let parsed = parse_comment(body);
        assert_eq!(parsed.commands.len(), 1, "{body:?}: {parsed:?}");
        parsed.commands[0].command.clone()
    }

    fn dispatch(body: &str) -> DispatchCommand {
        match only(body) {
            Ok(Command::Dispatch(dispatch)) => dispatch,
            other => panic!("{body:?}: {other:?}"),
        }
    }

    fn error(body: &str) -> CommandError {
        match only(body) {
            Err(error) => error,
            other => panic!("{body:?}: expected an error, got {other:?}"),
        }
    }

    #[test]
    fn command_lines_start_with_the_prefix_after_leading_spaces() {
        let body = "Looks good.\n  /astrolift recheck\n\t/astrolift help\n\
                    /astrolifter help\n> /astrolift help\nsee /astrolift help\n/astrolift";
        let parsed = parse_comment(body);
        let commands: Vec<_> = parsed
            .commands
            .iter()
            .map(|line| (line.index, line.command.clone()))
            .collect();
        assert_eq!(
            commands,
            [
                (1, Ok(Command::Recheck)),
                (2, Ok(Command::Help)),
                (
                    3,
                    Ok(Command::Unknown {
                        name: String::new()
                    })
                ),
            ]
        );
        assert_eq!(parsed.commands[0].text, "/astrolift recheck");
        assert!(!parsed.more_than_five);
        assert_eq!(parse_comment("no commands here").commands, []);
    }

    #[test]
    fn crlf_line_ends_are_line_ends() {
        let parsed = parse_comment("/astrolift recheck\r\n/astrolift\r\n/astrolift help\r\n");
        let names: Vec<_> = parsed
            .commands
            .iter()
            .map(|line| line.command.as_ref().map(Command::name))
            .collect();
        assert_eq!(names, [Ok("recheck"), Ok(""), Ok("help")]);
        assert_eq!(parsed.commands[0].text, "/astrolift recheck");
    }

    #[test]
    fn dispatch_takes_an_agent_and_both_flag_forms() {
        let plain = dispatch("/astrolift dispatch triage");
        assert_eq!(
            plain,
            DispatchCommand {
                agent: "triage".to_owned(),
                env_spec: None,
                input: None
            }
        );
        let spaced =
            dispatch(r#"/astrolift dispatch triage-pr7 --env-spec staging --input '{"n": 1}'"#);
        let joined =
            dispatch(r#"/astrolift dispatch --env-spec=staging --input='{"n": 1}' triage-pr7"#);
        assert_eq!(spaced, joined);
        assert_eq!(spaced.agent, "triage-pr7");
        assert_eq!(spaced.env_spec.as_deref(), Some("staging"));
        assert_eq!(
            spaced.input.map(Value::Object),
            Some(serde_json::json!({"n": 1}))
        );
        let escaped = dispatch(r#"/astrolift dispatch a --input "{\"q\": \"say \\\"hi\\\"\\n\"}""#);
        assert_eq!(
            escaped.input.map(Value::Object),
            Some(serde_json::json!({"q": "say \"hi\"\n"}))
        );
        assert_eq!(dispatch("/astrolift dispatch -- -odd").agent, "-odd");
    }

    #[test]
    fn dispatch_errors_name_what_is_wrong() {
        assert_eq!(error("/astrolift dispatch"), CommandError::MissingAgent);
        assert_eq!(error("/astrolift dispatch ''"), CommandError::MissingAgent);
        assert_eq!(
            error("/astrolift dispatch a b"),
            CommandError::UnexpectedArgument {
                command: "dispatch",
                argument: "b".to_owned()
            }
        );
        assert_eq!(
            error("/astrolift dispatch a --force=yes"),
            CommandError::UnknownFlag {
                flag: "--force".to_owned()
            }
        );
        for missing in [
            "/astrolift dispatch a --env-spec",
            "/astrolift dispatch a --env-spec=",
            "/astrolift dispatch a --env-spec --input {}",
        ] {
            assert_eq!(
                error(missing),
                CommandError::MissingValue { flag: "--env-spec" },
                "{missing}"
            );
        }
        assert_eq!(
            error("/astrolift dispatch a --env-spec x --env-spec=y"),
            CommandError::RepeatedFlag { flag: "--env-spec" }
        );
        assert_eq!(
            error("/astrolift dispatch a --input {} --input {}"),
            CommandError::RepeatedFlag { flag: "--input" }
        );
        assert_eq!(
            error("/astrolift recheck now"),
            CommandError::UnexpectedArgument {
                command: "recheck",
                argument: "now".to_owned()
            }
        );
        assert_eq!(only("/astrolift help dispatch please"), Ok(Command::Help));
        assert_eq!(only("/astrolift preview"), Ok(Command::Preview));
    }

    #[test]
    fn input_must_be_a_json_object_and_the_error_says_what_it_got() {
        let got = |input: &str| match error(&format!("/astrolift dispatch a --input '{input}'")) {
            CommandError::InputNotAnObject { got } => got.to_owned(),
            CommandError::InputNotJson { reason } => format!("not JSON: {reason}"),
            other => panic!("{input}: {other:?}"),
        };
        assert_eq!(got("[1, 2]"), "an array");
        assert_eq!(got(r#""text""#), "a string");
        assert_eq!(got("42"), "a number");
        assert_eq!(got("true"), "a boolean");
        assert_eq!(got("null"), "`null`");
        let broken = got("{nope");
        assert!(
            broken.starts_with("not JSON: key must be a string"),
            "{broken}"
        );
        let message = CommandError::InputNotAnObject { got: "an array" }.to_string();
        assert_eq!(message, "`--input` must be a JSON object, not an array");
        let not_json = CommandError::InputNotJson {
            reason: "expected value at line 1 column 1".to_owned(),
        };
        assert_eq!(
            not_json.markdown(),
            "`--input` must be a JSON object, not text that is not JSON \
             (`expected value at line 1 column 1`)"
        );
    }

    #[test]
    fn quotes_and_backslashes_split_like_a_shell() {
        let words = |line: &str| split_words(line).expect("splits");
        assert_eq!(words(r#"a 'b c' "d e" f\ g"#), ["a", "b c", "d e", "f g"]);
        assert_eq!(words(r#"x'y'"z"\w"#), ["xyzw"]);
        assert_eq!(words("'' \"\""), ["", ""]);
        assert_eq!(words(r"'it\'s"), ["it\\s"]);
        assert_eq!(words(r#""a\$b\`c\"d\\e""#), ["a\\$b\\`c\"d\\e"]);
        assert_eq!(words("  \t a \t b  "), ["a", "b"]);
        assert_eq!(
            split_words("'open"),
            Err(CommandError::UnterminatedQuote { quote: '\'' })
        );
        assert_eq!(
            split_words(r#""open \""#),
            Err(CommandError::UnterminatedQuote { quote: '"' })
        );
        assert_eq!(split_words("a\\"), Err(CommandError::TrailingBackslash));
        assert_eq!(
            error("/astrolift dispatch 'a"),
            CommandError::UnterminatedQuote { quote: '\'' }
        );
    }

    #[test]
    fn shell_syntax_is_plain_data_and_never_runs() {
        assert_eq!(
            error("/astrolift dispatch $(rm -rf /)"),
            CommandError::UnknownFlag {
                flag: "-rf".to_owned()
            }
        );
        for agent in [
            "`id`",
            "a;reboot",
            "a|nc",
            "a&&b",
            "a>/etc/passwd",
            "$HOME",
            "*",
        ] {
            assert_eq!(
                dispatch(&format!("/astrolift dispatch {agent}")).agent,
                agent
            );
        }
        assert_eq!(
            dispatch("/astrolift dispatch 'a; rm -rf / && echo `id` > x | y'").agent,
            "a; rm -rf / && echo `id` > x | y"
        );
        assert_eq!(
            error("/astrolift recheck ; rm -rf /"),
            CommandError::UnexpectedArgument {
                command: "recheck",
                argument: ";".to_owned()
            }
        );
        assert_eq!(
            only("/astrolift recheck; rm -rf /"),
            Ok(Command::Unknown {
                name: "recheck;".to_owned()
            })
        );
        assert_eq!(dispatch("/astrolift dispatch $(id)").agent, "$(id)");
    }

    #[test]
    fn nul_control_and_bidi_characters_fail_their_line_only() {
        for (line, character) in [
            ("/astrolift dispatch a\0b", '\0'),
            ("/astrolift help\u{1b}[2J", '\u{1b}'),
            ("/astrolift recheck\rmore", '\r'),
            ("/astrolift dispatch evil\u{202e}txt", '\u{202e}'),
        ] {
            let body = format!("{line}\n/astrolift help");
            let parsed = parse_comment(&body);
            assert_eq!(
                parsed.commands[0].command,
                Err(CommandError::HiddenCharacter { character }),
                "{line:?}"
            );
            assert_eq!(parsed.commands[1].command, Ok(Command::Help));
        }
        let message = CommandError::HiddenCharacter { character: '\0' }.to_string();
        assert_eq!(message, "the line holds the invisible character \\u{0}");
        assert!(!message.contains('\0'));
        assert_eq!(only("/astrolift\thelp"), Ok(Command::Help));
    }

    #[test]
    fn at_most_five_command_lines_are_parsed_of_ten_thousand() {
        let body = "/astrolift dispatch a\n".repeat(10_000);
        let mut parses = 0;
        let parsed = parse_comment_with(&body, |arguments| {
            parses += 1;
            parse_command(arguments)
        });
        assert_eq!(parses, MAX_COMMANDS);
        assert_eq!(parsed.commands.len(), MAX_COMMANDS);
        assert!(parsed.more_than_five);
        let indexes: Vec<u32> = parsed.commands.iter().map(|line| line.index).collect();
        assert_eq!(indexes, [1, 2, 3, 4, 5]);

        let five = "/astrolift recheck\nprose\n".repeat(5);
        let parsed = parse_comment(&five);
        assert_eq!(parsed.commands.len(), 5);
        assert!(!parsed.more_than_five);
    }

    #[test]
    fn a_body_of_65536_characters_costs_at_most_five_parses() {
        let line = "/astrolift\n";
        let mut body = line.repeat(65_536 / line.len());
        body.push_str(&"x".repeat(65_536 - body.len()));
        assert_eq!(body.chars().count(), 65_536);
        let mut parses = 0;
        let parsed = parse_comment_with(&body, |arguments| {
            parses += 1;
            parse_command(arguments)
        });
        assert_eq!((parses, parsed.more_than_five), (MAX_COMMANDS, true));
    }

    #[test]
    fn a_line_of_65536_characters_parses_and_echoes_cut() {
        let agent = "a".repeat(65_536 - "/astrolift dispatch ".len());
        let body = format!("/astrolift dispatch {agent}");
        assert_eq!(body.len(), 65_536);
        let parsed = parse_comment(&body);
        assert_eq!(
            parsed.commands[0].command,
            Ok(Command::Dispatch(DispatchCommand {
                agent: agent.clone(),
                env_spec: None,
                input: None
            }))
        );
        let shown = echo(&parsed.commands[0].text);
        assert!(
            shown.chars().count() <= MAX_ECHO_CHARS + 3,
            "{}",
            shown.len()
        );
        assert!(shown.ends_with("`…"));
        let open_quote = format!("/astrolift dispatch '{agent}");
        assert_eq!(
            only(&open_quote),
            Err(CommandError::UnterminatedQuote { quote: '\'' })
        );
        let long_flag = format!("/astrolift dispatch a --{agent}");
        let message = error(&long_flag).to_string();
        assert!(message.chars().count() < MAX_ECHO_CHARS + 80, "{message}");
    }

    #[test]
    fn a_code_span_outgrows_every_backtick_run_and_stays_on_one_line() {
        assert_eq!(code_span("triage"), "`triage`");
        assert_eq!(code_span("a`b"), "`` a`b ``");
        assert_eq!(code_span("``x```"), "```` ``x``` ````");
        assert_eq!(code_span(""), "` `");
        assert_eq!(code_span("a\nb\r\0"), "`a\\nb\\r\\u{0}`");
        assert_eq!(code_span("evil\u{202e}txt"), "`evil\\u{202e}txt`");
        assert_eq!(code_span("@mona <img src=x>"), "`@mona <img src=x>`");
        assert_eq!(echo("abc"), "`abc`");
    }

    #[test]
    fn inline_text_cannot_format_link_or_mention() {
        let escaped =
            escape_markdown_inline("**bold** [x](https://e.vil) <b> @mona @org/team #1\n# h");
        assert_eq!(
            escaped,
            "\\*\\*bold\\*\\* \\[x\\]\\(https\\:\\/\\/e\\.vil\\) \\<b\\> \
             \\@\u{2060}mona \\@\u{2060}org\\/team \\#1 \\# h"
        );
        assert!(!escaped.contains("@m"));
        assert_eq!(escape_markdown_inline("a\0b\u{202e}c"), "a b c");
    }

    #[test]
    fn error_markdown_echoes_comment_text_as_code() {
        let unexpected = CommandError::UnexpectedArgument {
            command: "preview",
            argument: "@mona`<b>`".to_owned(),
        };
        assert_eq!(
            unexpected.markdown(),
            "`preview` does not take the argument `` @mona`<b>` ``"
        );
        let flag = CommandError::UnknownFlag {
            flag: "--x\n# y".to_owned(),
        };
        assert_eq!(
            flag.markdown(),
            "`dispatch` has no flag `--x\\n# y` (it has `--env-spec` and `--input`)"
        );
        assert_eq!(
            CommandError::MissingAgent.markdown(),
            "`dispatch` needs an AGENT"
        );
        assert_eq!(
            CommandError::HiddenCharacter { character: '\0' }.markdown(),
            "the line holds the invisible character `\\u{0}`"
        );
    }

    #[test]
    fn only_commands_that_act_need_write_permission() {
        let act = Command::Dispatch(DispatchCommand {
            agent: "a".to_owned(),
            env_spec: None,
            input: None,
        });
        assert!(
            act.needs_write() && Command::Recheck.needs_write() && Command::Preview.needs_write()
        );
        assert!(!Command::Help.needs_write());
        let unknown = Command::Unknown {
            name: "deploy".to_owned(),
        };
        assert!(!unknown.needs_write());
        assert_eq!(unknown.to_string(), "/astrolift deploy");
    }

    #[test]
    fn the_help_lists_every_command() {
        let help = help_text();
        for command in ["dispatch AGENT", "recheck", "preview", "help"] {
            assert!(
                help.contains(&format!("`/astrolift {command}")),
                "{command}"
            );
        }
        assert!(help.contains("write, maintain or admin"));
        assert!(help.contains("at most 5"));
    }
}
