//! Progress on a terminal (docs/reference.md §3, "Progress"): a bar or spinner on
//! stderr once the command has run a second, and nothing at all on a pipe, in a file or
//! with `--format json`, so no output a program reads ever carries it.

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a command runs before its progress appears: shorter commands finish without any.
const SHOWN_AFTER: Duration = Duration::from_secs(1);

/// When the command started ([`command_started`]): what [`SHOWN_AFTER`] counts from, so the
/// time spent before the phase that shows progress (opening stores, validating) counts.
static COMMAND_STARTED: OnceLock<Instant> = OnceLock::new();

/// Marks the start of the command; called first in `main`.
pub fn command_started() {
    COMMAND_STARTED.get_or_init(Instant::now);
}

/// How long progress made at `now` stays hidden, for a command started at `started`: what
/// is left of [`SHOWN_AFTER`], nothing once the command has run that long.
pub fn hidden_for(started: Instant, now: Instant) -> Duration {
    SHOWN_AFTER.saturating_sub(now.saturating_duration_since(started))
}

/// Whether progress may be drawn: only for human output on a terminal's stderr.
pub fn wanted(stderr_is_terminal: bool, human_output: bool) -> bool {
    stderr_is_terminal && human_output
}

/// Progress of one piece of work; hidden until the command has run [`SHOWN_AFTER`]
/// ([`hidden_for`]), and for good where [`wanted`] says no. Cleared when dropped.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar over `{pos}/{len}` items: "`verb` 3/12 `noun`" ("packaging", "agents").
    pub fn bar(verb: &str, noun: &str, human_output: bool) -> Self {
        let template =
            format!("{{spinner}} {verb} {{pos}}/{{len}} {noun} {{wide_bar}} {{elapsed}}");
        Self::start(ProgressBar::new(0), &template, human_output)
    }

    /// A spinner for work whose size is not known ahead ("importing export.json").
    pub fn spinner(message: &str, human_output: bool) -> Self {
        let template = format!("{{spinner}} {message} {{elapsed}}");
        let progress = Self::start(ProgressBar::new_spinner(), &template, human_output);
        progress.bar.enable_steady_tick(Duration::from_millis(120));
        progress
    }

    fn start(bar: ProgressBar, template: &str, human_output: bool) -> Self {
        bar.set_draw_target(ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        if wanted(std::io::stderr().is_terminal(), human_output) {
            let now = Instant::now();
            let hidden = hidden_for(*COMMAND_STARTED.get_or_init(|| now), now);
            let shown = bar.clone();
            // indicatif draws from the first update on; the delay is ours.
            std::thread::spawn(move || {
                std::thread::sleep(hidden);
                if !shown.is_finished() {
                    shown.set_draw_target(ProgressDrawTarget::stderr());
                }
            });
        }
        Self { bar }
    }

    /// `done` of `total` items.
    pub fn set(&self, done: usize, total: usize) {
        self.bar.set_length(total as u64);
        self.bar.set_position(done as u64);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_drawn_only_for_human_output_on_a_terminal() {
        assert!(wanted(true, true));
        assert!(!wanted(false, true), "a pipe or a file");
        assert!(!wanted(true, false), "--format json");
        assert!(!wanted(false, false));
    }

    #[test]
    fn progress_is_timed_from_the_start_of_the_command() {
        let started = Instant::now();
        let at = |millis| started + Duration::from_millis(millis);
        // Made as the command starts: hidden for the whole second.
        assert_eq!(hidden_for(started, started), SHOWN_AFTER);
        // Made 300 ms in (stores opened, the tree validated): the rest of the second.
        assert_eq!(hidden_for(started, at(300)), Duration::from_millis(700));
        // Made once the command has run a second or more: drawn at once.
        assert_eq!(hidden_for(started, at(1_000)), Duration::ZERO);
        assert_eq!(hidden_for(started, at(1_200)), Duration::ZERO);
        // A clock read before the start (never in practice) hides it no longer than a second.
        assert_eq!(hidden_for(at(5), started), SHOWN_AFTER);
    }
}
