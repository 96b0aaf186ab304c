//! The shell commands that diagnostics, check runs and CLI messages suggest,
//! built in one place (docs/reference.md §15: a suggested shell command can be
//! pasted as it is, each argument quoted only where the shell needs it).
//!
//! Every suggestion names the `astrolift` subcommand with each required flag,
//! using an upper-case placeholder (`ID`) where the value is the user's to
//! choose and no value would be right.

/// A shell command line of `words`, each quoted by [`shell_quote`].
pub fn shell_command(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
    quoted.join(" ")
}

/// `word` as one POSIX shell word: bare when every character is one the shell
/// gives no meaning to (letters, digits and `-_./:@%+=,`, with no `=` or `~`
/// leading), otherwise in single quotes (a `'` inside becomes `'\''`), between
/// which the shell expands nothing. The empty word is `''`.
pub fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c);
    let bare = !word.is_empty()
        && word.chars().all(plain)
        && !word.starts_with('=')
        && !word.starts_with('~');
    if bare {
        word.to_owned()
    } else {
        single_quoted(word)
    }
}

/// `word` in POSIX single quotes, always (a `'` inside becomes `'\''`): for a
/// format that promises quotes on every value (`render --format env`).
pub fn single_quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The command that registers `repository` (`OWNER/REPO`) for `git_ref`,
/// with a placeholder project id. The repository and the ref come from a
/// webhook: [`shell_quote`] quotes any the shell would change.
pub fn register_command(repository: &str, git_ref: &str) -> String {
    register_words(repository, git_ref, None)
}

/// The command that registers the one manifest `manifest_path` of `repository` for
/// `git_ref`, with a placeholder project id.
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

/// The command that removes the registration of `repository` that covers a manifest:
/// the registration of `manifest_path` when it is one manifest's, else of every manifest.
pub fn unregister_command(repository: &str, manifest_path: Option<&str>) -> String {
    let mut words = vec!["astrolift", "unregister-repo", repository];
    if let Some(path) = manifest_path {
        words.extend(["--manifest-path", path]);
    }
    shell_command(&words)
}

/// The agent type an env-spec suggestion names when it knows none: the example
/// of docs/reference.md §3, a value `env-spec upsert` accepts.
pub const EXAMPLE_AGENT_TYPE: &str = "claude";
/// The runtime an env-spec suggestion names when it knows none (see
/// [`EXAMPLE_AGENT_TYPE`]).
pub const EXAMPLE_RUNTIME: &str = "claude-code";

/// The command that defines the env spec `name` in `project` for `agent_type`
/// and `runtime` (every flag `env-spec upsert` requires). A caller that knows
/// no agent type or runtime passes [`EXAMPLE_AGENT_TYPE`] and
/// [`EXAMPLE_RUNTIME`] and says they are examples.
pub fn env_spec_upsert_command(
    name: &str,
    project: &str,
    agent_type: &str,
    runtime: &str,
) -> String {
    env_spec_upsert_with_config(name, project, agent_type, runtime, None)
}

/// [`env_spec_upsert_command`] that keeps (or sets) the config manifest `config`,
/// `(repository, path)`.
pub fn env_spec_upsert_with_config(
    name: &str,
    project: &str,
    agent_type: &str,
    runtime: &str,
    config: Option<(&str, &str)>,
) -> String {
    let mut words = vec![
        "astrolift",
        "env-spec",
        "upsert",
        name,
        "--project-id",
        project,
        "--agent-type",
        agent_type,
        "--runtime",
        runtime,
    ];
    if let Some((repository, path)) = config {
        words.extend(["--config-repo", repository, "--manifest-path", path]);
    }
    shell_command(&words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_words_the_shell_would_change_are_quoted() {
        assert_eq!(
            register_command("octo/agents", "main"),
            "astrolift register-repo octo/agents --project-id ID --ref main"
        );
        for (word, quoted) in [
            ("", "''"),
            ("a b", "'a b'"),
            ("it's", r"'it'\''s'"),
            ("$(id)", "'$(id)'"),
            ("~root", "'~root'"),
            ("=x", "'=x'"),
            ("a=b", "a=b"),
            ("feat/x-1.2@v:3+4,5%", "feat/x-1.2@v:3+4,5%"),
            ("*", "'*'"),
            ("é", "'é'"),
        ] {
            assert_eq!(shell_quote(word), quoted, "{word:?}");
        }
    }
}
