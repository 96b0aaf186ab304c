//! The one rule for colour, of diagnostics on stdout and of log lines on stderr alike
//! (docs/reference.md §3, "Colour"): ANSI styles only when the stream is a terminal
//! and `NO_COLOR` is unset or empty; `CLICOLOR_FORCE` forces them on a file or pipe.

use std::ffi::OsStr;
use std::io::IsTerminal;

/// The environment the rule reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct Env<'a> {
    /// `NO_COLOR`: any non-empty value turns colour off, whatever else is set.
    pub no_color: Option<&'a OsStr>,
    /// `CLICOLOR_FORCE`: any value other than empty or `0` turns colour on.
    pub clicolor_force: Option<&'a OsStr>,
}

/// Whether a stream may carry colour.
pub fn allowed(is_terminal: bool, env: Env<'_>) -> bool {
    let set = |value: Option<&OsStr>| value.is_some_and(|v| !v.is_empty());
    if set(env.no_color) {
        return false;
    }
    is_terminal || (set(env.clicolor_force) && env.clicolor_force != Some(OsStr::new("0")))
}

fn from_process(is_terminal: bool) -> bool {
    let no_color = std::env::var_os("NO_COLOR");
    let clicolor_force = std::env::var_os("CLICOLOR_FORCE");
    let env = Env {
        no_color: no_color.as_deref(),
        clicolor_force: clicolor_force.as_deref(),
    };
    allowed(is_terminal, env)
}

/// Whether standard output (diagnostics) may carry colour.
pub fn stdout() -> bool {
    from_process(std::io::stdout().is_terminal())
}

/// Whether standard error (log lines) may carry colour.
pub fn stderr() -> bool {
    from_process(std::io::stderr().is_terminal())
}

#[cfg(test)]
mod tests {
    use super::{Env, allowed};
    use std::ffi::OsStr;

    fn env<'a>(no_color: Option<&'a str>, force: Option<&'a str>) -> Env<'a> {
        Env {
            no_color: no_color.map(OsStr::new),
            clicolor_force: force.map(OsStr::new),
        }
    }

    #[test]
    fn colour_needs_a_terminal() {
        assert!(allowed(true, env(None, None)));
        assert!(!allowed(false, env(None, None)));
    }

    #[test]
    fn any_non_empty_no_color_turns_colour_off() {
        assert!(allowed(true, env(Some(""), None)));
        assert!(!allowed(true, env(Some("1"), None)));
        assert!(!allowed(true, env(Some("false"), None)));
        assert!(!allowed(false, env(Some("1"), Some("1"))));
    }

    #[test]
    fn clicolor_force_colours_a_file_or_pipe() {
        assert!(allowed(false, env(None, Some("1"))));
        assert!(!allowed(false, env(None, Some("0"))));
        assert!(!allowed(false, env(None, Some(""))));
    }
}
