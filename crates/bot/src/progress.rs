//! The progress of a long sync on its check run (docs/reference.md §9, "Progress"): once a
//! sync has run [`ProgressTiming::first`] (5 s), its `in_progress` run shows `N of M agents
//! packaged`, updated at most every [`ProgressTiming::every`] (2 s), and only when the count
//! moved. Each update is one PATCH of the installation, so it counts against the
//! installation's rate limit like any other call; a failed update is logged and the sync goes
//! on (progress is information, never a reason to fail).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// When the first update goes out, and how long at least between two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressTiming {
    /// How long a sync runs before its run shows progress.
    pub first: Duration,
    /// The least time between two updates.
    pub every: Duration,
}

impl Default for ProgressTiming {
    fn default() -> Self {
        Self {
            first: Duration::from_secs(5),
            every: Duration::from_secs(2),
        }
    }
}

/// Agents packaged so far, of the total: written by the pipeline's progress callback (on the
/// sync's blocking thread), read by the reporter.
#[derive(Debug, Default)]
pub(crate) struct PackagingProgress {
    done: AtomicUsize,
    total: AtomicUsize,
}

impl PackagingProgress {
    /// The pipeline's callback: `done` of `total` agents are packaged.
    pub(crate) fn record(&self, done: usize, total: usize) {
        self.total.store(total, Ordering::Relaxed);
        self.done.store(done, Ordering::Relaxed);
    }

    fn get(&self) -> (usize, usize) {
        (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }
}

/// The run's in-progress summary.
pub(crate) fn summary(done: usize, total: usize) -> String {
    format!("{done} of {total} agents packaged")
}

/// Runs `work`; meanwhile, from `timing.first` on, calls `update(done, total)` at most every
/// `timing.every`, whenever the count differs from the last one sent (none before the first
/// agent is counted). An update in flight when `work` ends is finished first, so that it never
/// reaches GitHub after the run's completion.
pub(crate) async fn while_reporting<T, U>(
    work: impl Future<Output = T>,
    progress: &PackagingProgress,
    timing: ProgressTiming,
    mut update: impl FnMut(usize, usize) -> U,
) -> T
where
    U: Future<Output = ()>,
{
    tokio::pin!(work);
    let mut wait = timing.first;
    let mut sent = None;
    loop {
        tokio::select! {
            biased;
            result = &mut work => return result,
            () = tokio::time::sleep(wait) => {}
        }
        wait = timing.every;
        let (done, total) = progress.get();
        if total == 0 || sent == Some((done, total)) {
            continue;
        }
        sent = Some((done, total));
        let sending = update(done, total);
        tokio::pin!(sending);
        tokio::select! {
            biased;
            result = &mut work => {
                sending.await;
                return result;
            }
            () = &mut sending => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::time::Instant;

    use super::*;

    /// A sync that packages one agent every 500 ms for `agents` agents.
    async fn slow_sync(progress: &PackagingProgress, agents: usize) -> &'static str {
        for done in 1..=agents {
            tokio::time::sleep(Duration::from_millis(500)).await;
            progress.record(done, agents);
        }
        "done"
    }

    #[tokio::test(start_paused = true)]
    async fn updates_start_at_5_s_and_come_at_most_every_2_s() {
        let progress = PackagingProgress::default();
        let started = Instant::now();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let record = |done, total| {
            let sent = Arc::clone(&sent);
            async move {
                let at = started.elapsed().as_millis();
                sent.lock()
                    .expect("not poisoned")
                    .push((at, summary(done, total)));
            }
        };
        let result = while_reporting(
            slow_sync(&progress, 20),
            &progress,
            ProgressTiming::default(),
            record,
        )
        .await;
        assert_eq!(result, "done");
        let sent = sent.lock().expect("not poisoned").clone();
        assert_eq!(
            sent,
            [
                (5000, "10 of 20 agents packaged".to_owned()),
                (7000, "14 of 20 agents packaged".to_owned()),
                (9000, "18 of 20 agents packaged".to_owned()),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_sync_under_5_s_sends_nothing() {
        let progress = PackagingProgress::default();
        let mut calls = 0;
        let result = while_reporting(
            slow_sync(&progress, 9),
            &progress,
            ProgressTiming::default(),
            |_, _| {
                calls += 1;
                async {}
            },
        )
        .await;
        assert_eq!((result, calls), ("done", 0));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unmoved_count_is_not_sent_again() {
        let progress = PackagingProgress::default();
        progress.record(3, 10);
        let mut calls = Vec::new();
        let stalled = tokio::time::sleep(Duration::from_secs(11));
        while_reporting(stalled, &progress, ProgressTiming::default(), |done, _| {
            calls.push(done);
            async {}
        })
        .await;
        assert_eq!(calls, [3]);
    }
}
