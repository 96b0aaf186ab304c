//! Docs that run: every command example in README.md and `docs/*.md` is executed here, so a
//! change that breaks a documented example fails CI (README.md, "The CLI").
//!
//! The rules a doc writer follows:
//!
//! - A ```` ```console ```` block runs. A line `$ COMMAND` is a command (a line ending in `\`
//!   continues it on the next line); the lines after it, up to the next `$ ` line or the end
//!   of the block, are what it prints, stdout and stderr together. In the expected output
//!   `[..]` matches any text within a line and `...` alone on a line any number of lines; a
//!   line `? N` right under the command says its exit status is `N` (`0` without one). A
//!   comment for the reader goes at the end of the command line (`$ cmd   # why`).
//! - All console blocks of one file run in order in one `bash` (variables, `cd` and
//!   background jobs carry from one command to the next), in a fresh temporary directory
//!   that holds a copy of the repository's `examples/` and `crates/import/tests/fixtures/`
//!   at the same paths, with the `astrolift` this build made first on `PATH`, the embedded
//!   stores' defaults (`sqlite:.astrolift/state.db`, `file:.astrolift/blobs`), and no
//!   `ASTROLIFT_*`, `GITHUB_*` or `AWS_*` variable. A reader at the repository root types
//!   the same. The temporary directory's path prints as `[CWD]`; the loopback address
//!   `127.0.0.1:3000` is replaced by a free port, so a `serve` the doc starts does not
//!   collide with anything. Background jobs are stopped when the file ends.
//! - A ```` ```sh ```` block does not run: it is for commands that need real AWS or GitHub (or a
//!   toolchain the tests do not have). Every `astrolift` command in it is parsed: with
//!   `--help` appended, clap must accept its subcommand and flags; run as written against
//!   unreachable stores and GitHub (`dynamodb:`, `s3://`, `GITHUB_API_URL` on a closed
//!   loopback port), it may fail as an I/O failure but never as a usage error (clap's
//!   `For more information, try '--help'.`). Write a placeholder the flag accepts (a
//!   number for a number) and say in the text what to put there.
//! - A `$ ` line in any other block is an error: write it as ```` ```console ````.
//! - A new file under `docs/` gets a line in [`DOCS`] and a test of its own.
//!
//! Format examples (```` ```toml ````, ```` ```yaml ````, ```` ```json ````, ```` ```text ````)
//! are not commands and are not run; docs/diagnostics.md's codes and severities are checked
//! against the catalogue by `crates/manifest/tests/it/catalogue.rs`. Inline code spans
//! (`` `astrolift check` `` in a sentence) name commands and flags, and are not run either.
//! The examples use `bash`, `curl`, `openssl` and `jq`, which the machine must have.

use std::fmt::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};

/// How long one doc's examples may take, together.
const DOC_TIMEOUT: Duration = Duration::from_secs(300);

/// The address a doc's `serve` listens on, replaced by a free port.
const DOC_ADDRESS: &str = "127.0.0.1:3000";

/// The folders of the repository a doc's working directory holds a copy of.
const COPIED: &[&str] = &["examples", "crates/import/tests/fixtures"];

/// One fenced block of a doc: its info string, the line its first content line is on, and
/// its text.
struct Block {
    lang: String,
    line: usize,
    text: String,
}

/// One command of a console block and what it should print.
#[derive(Debug)]
struct Step {
    line: usize,
    command: String,
    status: i32,
    expected: String,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    for (event, range) in Parser::new(markdown).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))) => {
                let line = markdown[..range.start].lines().count() + 2;
                current = Some(Block {
                    lang: lang.split_whitespace().next().unwrap_or("").to_owned(),
                    line,
                    text: String::new(),
                });
            }
            Event::Text(text) => {
                if let Some(block) = current.as_mut() {
                    block.text.push_str(&text);
                }
            }
            Event::End(pulldown_cmark::TagEnd::CodeBlock) => blocks.extend(current.take()),
            _ => {}
        }
    }
    blocks
}

/// The steps of a console block, in order.
fn steps(block: &Block) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut continued = false;
    for (index, line) in block.text.lines().enumerate() {
        let line_number = block.line + index;
        if continued && let Some(step) = steps.last_mut() {
            step.command.push('\n');
            step.command.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(command) = line.strip_prefix("$ ") {
            continued = command.ends_with('\\');
            steps.push(Step {
                line: line_number,
                command: command.to_owned(),
                status: 0,
                expected: String::new(),
            });
        } else if let Some(step) = steps.last_mut() {
            let before_output = step.expected.is_empty();
            if let Some(status) = line.strip_prefix("? ").filter(|_| before_output) {
                step.status = status.trim().parse().unwrap_or_else(|_| {
                    panic!("line {line_number}: `? {status}` is not an exit status")
                });
            } else {
                step.expected.push_str(line);
                step.expected.push('\n');
            }
        } else {
            panic!("line {line_number}: a console block starts with a `$ ` command");
        }
    }
    steps
}

/// The bash script that runs `steps` in order, each one's output and status into `out`.
fn script(steps: &[Step], out: &Path) -> String {
    let mut script = String::from("trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n");
    for (index, step) in steps.iter().enumerate() {
        let out = out.join(index.to_string());
        let out = out.display();
        // The braces run the command in this shell, so what it sets stays set.
        let _ = writeln!(
            script,
            "{{\n{}\n}} >'{out}.out' 2>&1 </dev/null\necho $? >'{out}.status'",
            step.command
        );
    }
    script
}

/// A fresh working directory with the copied folders.
fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for folder in COPIED {
        let target = dir.path().join(folder);
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("mkdir");
        let status = Command::new("cp")
            .arg("-R")
            .arg(repo_root().join(folder))
            .arg(&target)
            .status()
            .expect("cp runs");
        assert!(status.success(), "copy {folder}");
    }
    dir
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("an address").port()
}

/// The environment of a doc's commands: `PATH` with this build's `astrolift` first, and
/// nothing of the caller's stores or credentials.
fn command_env(command: &mut Command, home: &Path) {
    command
        .env_clear()
        .env("PATH", crate::support::path_with_astrolift())
        .env("HOME", home)
        .env("LANG", "C.UTF-8");
}

/// Runs `bash script` in `dir` in its own process group, and stops the group when it ends
/// or when `DOC_TIMEOUT` passes.
fn run_script(dir: &Path, script_path: &Path) {
    let mut command = Command::new("bash");
    command
        .args(["--noprofile", "--norc"])
        .arg(script_path)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    command_env(&mut command, dir);
    let mut child = command.spawn().expect("bash runs");
    let started = Instant::now();
    let finished = loop {
        if child.try_wait().expect("wait for bash").is_some() {
            break true;
        }
        if started.elapsed() > DOC_TIMEOUT {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let group = format!("-{}", child.id());
    let _ = Command::new("kill")
        .args(["-TERM", "--", &group])
        .stderr(Stdio::null())
        .status();
    let _ = child.wait();
    assert!(finished, "the examples did not finish in {DOC_TIMEOUT:?}");
}

/// Runs the console blocks of `doc` (relative to the repository root) and returns one
/// message per step whose status or output differs from the doc's.
fn run_console_blocks(doc: &str, markdown: &str) -> Vec<String> {
    let port = free_port().to_string();
    let address = format!("127.0.0.1:{port}");
    let steps: Vec<Step> = blocks(markdown)
        .iter()
        .filter(|block| block.lang == "console")
        .flat_map(steps)
        .map(|step| Step {
            command: step.command.replace(DOC_ADDRESS, &address),
            expected: step.expected.replace(DOC_ADDRESS, &address),
            ..step
        })
        .collect();
    if steps.is_empty() {
        return Vec::new();
    }
    let incomplete = incomplete_commands(doc, &steps);
    if !incomplete.is_empty() {
        return incomplete;
    }
    let dir = sandbox();
    let out = tempfile::tempdir().expect("a temporary directory");
    let script_path = out.path().join("doc.sh");
    std::fs::write(&script_path, script(&steps, out.path())).expect("write the script");
    run_script(dir.path(), &script_path);

    let mut redactions = snapbox::Redactions::new();
    let cwd = dir.path().canonicalize().expect("the sandbox's path");
    redactions.insert("[CWD]", cwd).expect("a placeholder");
    let assert = snapbox::Assert::new().redact_with(redactions);
    let mut failures = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let read = |ext: &str| {
            std::fs::read_to_string(out.path().join(format!("{index}.{ext}"))).unwrap_or_default()
        };
        let output = with_final_newline(&read("out"));
        let status: Option<i32> = read("status").trim().parse().ok();
        let header = format!("{doc}:{}: $ {}", step.line, step.command);
        if status != Some(step.status) {
            failures.push(format!(
                "{header}\nexit status {status:?}, the doc says {}; it printed:\n{output}",
                step.status
            ));
        } else if let Err(error) = assert.try_eq(
            Some(&"output"),
            output.clone().into(),
            with_final_newline(&step.expected).into(),
        ) {
            failures.push(format!("{header}\n{error}\nit printed:\n{output}"));
        }
    }
    failures
}

/// The steps bash cannot parse (`bash -n`): an unclosed quote would swallow every step
/// after it, so they are reported before anything runs.
fn incomplete_commands(doc: &str, steps: &[Step]) -> Vec<String> {
    steps
        .iter()
        .filter_map(|step| {
            let output = Command::new("bash")
                .args(["--noprofile", "--norc", "-n", "-c", &step.command])
                .stdin(Stdio::null())
                .output()
                .expect("bash runs");
            if output.status.success() {
                return None;
            }
            Some(format!(
                "{doc}:{}: `{}` is not a complete shell command (a line that continues it \
                 ends in `\\`):\n{}",
                step.line,
                step.command,
                String::from_utf8_lossy(&output.stderr)
            ))
        })
        .collect()
}

/// `text` without trailing blank lines, ending in one newline unless empty: `curl -s`'s
/// body has none, a doc's block has one.
fn with_final_newline(text: &str) -> String {
    let text = text.trim_end();
    if text.is_empty() {
        String::new()
    } else {
        format!("{text}\n")
    }
}

/// The `astrolift` invocations of a shell line: the text after each `astrolift` word that
/// starts a command (after variable assignments), up to the end of that command.
fn astrolift_invocations(line: &str) -> Vec<String> {
    let mut invocations = Vec::new();
    let mut rest = without_comment(line);
    while let Some(start) = command_start(rest) {
        let after = &rest[start + "astrolift".len()..];
        let end = command_end(after);
        invocations.push(after[..end].trim().to_owned());
        rest = &after[end..];
    }
    invocations
}

/// Where the next command named `astrolift` starts in `text`: at the start of the text or
/// after `|`, `;`, `&`, `(` or `$(`, past `NAME=value` assignments.
fn command_start(text: &str) -> Option<usize> {
    let mut offset = 0;
    for segment in text.split_inclusive(['|', ';', '&', '(']) {
        let mut words = segment.split_whitespace().peekable();
        while words.next_if(|word| is_assignment(word)).is_some() {}
        if words.next() == Some("astrolift")
            && let Some(position) = segment.find("astrolift")
        {
            let after = &segment[position + "astrolift".len()..];
            if !after.starts_with('(') {
                return Some(offset + position);
            }
        }
        offset += segment.len();
    }
    None
}

/// `line` up to its unquoted `#` comment.
fn without_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (index, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if previous.is_whitespace() => return &line[..index],
            _ => {}
        }
        previous = c;
    }
    line
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The length of the command at the start of `text`: up to the first unquoted `|`, `;`,
/// `&`, `>`, `<` or `)`.
fn command_end(text: &str) -> usize {
    let mut quote = None;
    let mut depth = 0usize;
    for (index, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') if depth > 0 => depth -= 1,
            (None, '|' | ';' | '&' | '>' | '<' | ')') if depth == 0 => return index,
            _ => {}
        }
    }
    text.len()
}

/// The logical lines of a shell block: continuation lines joined.
fn shell_lines(block: &Block) -> Vec<(usize, String)> {
    let mut lines: Vec<(usize, String)> = Vec::new();
    let mut continued = false;
    for (index, line) in block.text.lines().enumerate() {
        let line_text = line.trim_start().strip_prefix("$ ").unwrap_or(line);
        if continued && let Some((_, last)) = lines.last_mut() {
            last.pop();
            last.push(' ');
            last.push_str(line_text.trim_start());
        } else {
            lines.push((block.line + index, line_text.to_owned()));
        }
        continued = line.ends_with('\\');
    }
    lines
}

/// What clap prints under every usage error, and none of our own errors does.
const CLAP_USAGE_ERROR: &str = "For more information, try '--help'.";

/// The stores and services a shell block's command is run against: unreachable, so a
/// command that would need real AWS or GitHub fails as an I/O failure, after clap has
/// accepted its arguments.
const UNREACHABLE: &[(&str, &str)] = &[
    ("ASTROLIFT_STATE", "dynamodb:docs-unreachable"),
    ("ASTROLIFT_BLOBS", "s3://docs-unreachable"),
    ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
    ("AWS_REGION", "us-east-1"),
    ("AWS_ACCESS_KEY_ID", "docs"),
    ("AWS_SECRET_ACCESS_KEY", "docs"),
    ("GITHUB_API_URL", "http://127.0.0.1:9"),
];

/// Runs `astrolift ARGUMENTS` (the shell expands them) in `dir`, stopped after 20 s.
fn run_shell_words(dir: &Path, arguments: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new("bash");
    command
        .args(["--noprofile", "--norc", "-c"])
        .arg(format!("exec timeout 20 astrolift {arguments}"))
        .current_dir(dir)
        .stdin(Stdio::null());
    command_env(&mut command, dir);
    command.envs(env.iter().copied());
    command.output().expect("bash runs")
}

/// Parses every `astrolift` command of the doc's shell blocks: clap must accept it with
/// `--help` appended (the subcommand and every flag exist), and run as it is against
/// unreachable stores and GitHub, it must not be a usage error (every required argument
/// is there). Returns one message per command refused.
fn parse_shell_blocks(doc: &str, markdown: &str) -> Vec<String> {
    let home = tempfile::tempdir().expect("a temporary directory");
    let mut failures = Vec::new();
    for block in blocks(markdown).iter().filter(|block| block.lang == "sh") {
        for (line, text) in shell_lines(block) {
            for arguments in astrolift_invocations(&text) {
                let help = run_shell_words(home.path(), &format!("{arguments} --help"), &[]);
                let stdout = String::from_utf8_lossy(&help.stdout);
                let run = run_shell_words(home.path(), &arguments, UNREACHABLE);
                let stderr = String::from_utf8_lossy(&run.stderr);
                if !help.status.success() || !stdout.contains("Usage: astrolift") {
                    failures.push(format!(
                        "{doc}:{line}: clap refuses `astrolift {arguments}`:\n{}",
                        String::from_utf8_lossy(&help.stderr)
                    ));
                } else if stderr.contains(CLAP_USAGE_ERROR) {
                    failures.push(format!(
                        "{doc}:{line}: `astrolift {arguments}` is a usage error:\n{stderr}"
                    ));
                }
            }
        }
    }
    failures
}

/// `$ astrolift` lines outside console and sh blocks, which would silently not run.
fn misplaced_commands(doc: &str, markdown: &str) -> Vec<String> {
    blocks(markdown)
        .iter()
        .filter(|block| block.lang != "console" && block.lang != "sh")
        .flat_map(|block| {
            block
                .text
                .lines()
                .enumerate()
                .filter(|(_, line)| line.trim_start().starts_with("$ "))
                .map(move |(index, _)| {
                    format!(
                        "{doc}:{}: a `$ ` command in a ```{} block: write it as ```console",
                        block.line + index,
                        block.lang
                    )
                })
        })
        .collect()
}

/// Runs and parses every example of `doc`, failing with every difference at once.
fn check_doc(doc: &str) {
    let markdown = std::fs::read_to_string(repo_root().join(doc)).expect("the doc reads");
    let mut failures = misplaced_commands(doc, &markdown);
    failures.extend(parse_shell_blocks(doc, &markdown));
    failures.extend(run_console_blocks(doc, &markdown));
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

/// The docs this module runs; `every_doc_is_run` keeps the list whole.
const DOCS: &[&str] = &[
    "README.md",
    "docs/deploy.md",
    "docs/diagnostics.md",
    "docs/fuzzing.md",
    "docs/import.md",
    "docs/operations.md",
    "docs/reference.md",
];

#[test]
fn every_doc_is_run() {
    let mut found: Vec<String> = std::fs::read_dir(repo_root().join("docs"))
        .expect("docs/ reads")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.ends_with(".md").then(|| format!("docs/{name}"))
        })
        .collect();
    found.push("README.md".to_owned());
    found.sort();
    assert_eq!(found, DOCS, "add the new doc to DOCS and a test for it");
}

#[test]
fn readme() {
    check_doc("README.md");
}

#[test]
fn deploy() {
    check_doc("docs/deploy.md");
}

#[test]
fn diagnostics() {
    check_doc("docs/diagnostics.md");
}

#[test]
fn fuzzing() {
    check_doc("docs/fuzzing.md");
}

#[test]
fn import() {
    check_doc("docs/import.md");
}

#[test]
fn operations() {
    check_doc("docs/operations.md");
}

#[test]
fn reference() {
    check_doc("docs/reference.md");
}

#[test]
fn the_runner_reads_commands_outputs_and_statuses() {
    let block = Block {
        lang: "console".to_owned(),
        line: 10,
        text: "$ astrolift a \\\n  --b\n? 2\nerror: x\n$ true\n".to_owned(),
    };
    let steps = steps(&block);
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].command, "astrolift a \\\n  --b");
    assert_eq!(
        (steps[0].status, steps[0].expected.as_str()),
        (2, "error: x\n")
    );
    assert_eq!((steps[1].line, steps[1].status), (14, 0));
}

#[test]
fn the_runner_finds_astrolift_in_shell_lines() {
    let found = astrolift_invocations(
        "GITHUB_TOKEN=x astrolift suggest . --head \"$(git rev-parse HEAD)\" # c | astrolift no",
    );
    assert_eq!(found, ["suggest . --head \"$(git rev-parse HEAD)\""]);
    let found = astrolift_invocations("astrolift jobs list --format json | jq '.[]' > x");
    assert_eq!(found, ["jobs list --format json"]);
    assert!(astrolift_invocations("astrolift() { cargo run -- \"$@\"; }").is_empty());
    assert!(
        astrolift_invocations("aws logs --log-group-name /aws/lambda/astrolift-sync").is_empty()
    );
}

/// The parse of a shell block's command tells a missing argument (clap's usage error)
/// from the I/O failure of a command that needs AWS.
#[test]
fn a_usage_error_is_told_from_an_unreachable_store() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let missing = run_shell_words(dir.path(), "register-repo octo/agents", UNREACHABLE);
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains(CLAP_USAGE_ERROR),
        "{missing:?}"
    );
    let unreachable = run_shell_words(dir.path(), "agents list", UNREACHABLE);
    assert_eq!(unreachable.status.code(), Some(2), "{unreachable:?}");
    assert!(!String::from_utf8_lossy(&unreachable.stderr).contains(CLAP_USAGE_ERROR));
}
