//! The shell commands that diagnostics, check runs and CLI messages suggest,
//! built in one place (docs/reference.md §9: a suggested shell command quotes
//! every argument).
//!
//! Every suggestion names the `astrolift` subcommand with each required flag,
//! using an upper-case placeholder (`ID`, `TYPE`, `RUNTIME`) where the value
//! is the user's to choose.

/// A shell command line with every word quoted by [`shell_quote`].
pub fn shell_command(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
    quoted.join(" ")
}

/// `word` in POSIX single quotes, always (a `'` inside becomes `'\''`): the
/// shell expands nothing between single quotes. By hand because `shlex`'s
/// quoting leaves "safe" words bare, and we quote every argument.
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The command that registers `repository` (`OWNER/REPO`) for `git_ref`,
/// with a placeholder project id. Every argument is quoted: the repository
/// and the ref come from a webhook.
pub fn register_command(repository: &str, git_ref: &str) -> String {
    register_words(repository, git_ref, None)
}

/// The command that registers the one manifest `manifest_path` of `repository` for
/// `git_ref`, with a placeholder project id; every argument quoted.
pub fn register_manifest_command(repository: &str, git_ref: &str, manifest_path: &str) -> String {
    register_words(repository, git_ref, Some(manifest_path))
}

fn register_words(repository: &str, git_ref: &str, manifest_path: Option<&str>) -> String {
    let mut words = vec![
        "astrolift",
        "register-repo",
        repository,
        "--project-id",
        "ID",
        "--ref",
        git_ref,
    ];
    if let Some(path) = manifest_path {
        words.extend(["--manifest-path", path]);
    }
    shell_command(&words)
}

/// The command that defines the env spec `name` in `project`, with
/// placeholders for the agent type and runtime it requires.
pub fn env_spec_upsert_command(name: &str, project: &str) -> String {
    shell_command(&[
        "astrolift",
        "env-spec",
        "upsert",
        name,
        "--project-id",
        project,
        "--agent-type",
        "TYPE",
        "--runtime",
        "RUNTIME",
    ])
}
