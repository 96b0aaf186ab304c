//! Progress on a terminal (docs/reference.md §3, "Progress"): a bar or spinner on
//! stderr for work that has already taken a second, and nothing at all on a pipe, in
//! a file or with `--format json`, so no output a program reads ever carries it.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work runs before its progress appears: shorter work finishes without any.
const SHOWN_AFTER: Duration = Duration::from_secs(1);

/// Whether progress may be drawn: only for human output on a terminal's stderr.
pub fn wanted(stderr_is_terminal: bool, human_output: bool) -> bool {
    stderr_is_terminal && human_output
}

/// Progress of one piece of work; hidden until [`SHOWN_AFTER`] has passed, and for good
/// where [`wanted`] says no. Cleared when dropped.
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
            let shown = bar.clone();
            // indicatif draws from the first update on; the delay is ours.
            std::thread::spawn(move || {
                std::thread::sleep(SHOWN_AFTER);
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
}
