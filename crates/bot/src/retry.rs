//! How `serve` tries a failed job again (docs/operations.md, "How a delivery flows"):
//! exponential backoff with full jitter for a retryable failure, the wait GitHub asked
//! for when it named one (a rate limit's reset or `Retry-After`), and a bounded number
//! of attempts. On Lambda the sync queue's redrive does the same job.

use std::time::Duration;

use crate::job_error::JobError;

/// Attempts and waits of one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The wait ceiling after the first failure; it doubles after each further one.
    pub base: Duration,
    /// No wait is longer than this: a jittered one is cut to it, and when GitHub asks
    /// for longer (a primary rate limit's reset can be an hour away) the job gives up
    /// rather than sleep past its delivery's lease: it is dead-lettered
    /// ([`crate::durable`]), and `astrolift jobs retry` or **Re-run** runs it later.
    pub cap: Duration,
}

impl RetryPolicy {
    /// `serve`'s policy: 5 attempts, waits drawn from up to 1, 2, 4 and 8 seconds; at
    /// most 4 minutes of waiting in all, well inside a delivery's 15-minute lease.
    pub const SERVE: RetryPolicy = RetryPolicy {
        attempts: 5,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(60),
    };

    /// The wait before the attempt after `failed_attempt` (1 for the first) failed with
    /// `error`, or `None` when the job gives up: the failure is permanent, or no attempt
    /// is left. `unit` is a uniform draw in `[0, 1)` (the jitter), passed in so the
    /// policy is a pure function.
    pub fn wait_after(&self, error: &JobError, failed_attempt: u32, unit: f64) -> Option<Duration> {
        if !error.is_retryable() || failed_attempt >= self.attempts {
            return None;
        }
        if let Some(asked) = error.retry_after() {
            return (asked <= self.cap).then_some(asked);
        }
        let doublings = failed_attempt.saturating_sub(1).min(31);
        let ceiling = self.base.saturating_mul(1 << doublings).min(self.cap);
        Some(ceiling.mul_f64(unit.clamp(0.0, 1.0)))
    }
}

/// A uniform draw in `[0, 1)` from the OS CSPRNG (0.5 if it cannot be read: jitter
/// spreads retries, it guards nothing).
pub fn jitter() -> f64 {
    let mut bytes = [0u8; 8];
    match getrandom::fill(&mut bytes) {
        Ok(()) => (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use astrolift_forge::github::GitHubError;
    use astrolift_store::StoreError;
    use http::{Method, StatusCode};

    fn unavailable() -> JobError {
        JobError::Store(StoreError::Unavailable("busy".into()))
    }

    #[test]
    fn waits_double_under_the_cap_and_jitter_scales_them() {
        let policy = RetryPolicy::SERVE;
        assert_eq!(
            policy.wait_after(&unavailable(), 1, 1.0),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            policy.wait_after(&unavailable(), 3, 1.0),
            Some(Duration::from_secs(4))
        );
        assert_eq!(
            policy.wait_after(&unavailable(), 4, 0.5),
            Some(Duration::from_secs(4))
        );
        assert_eq!(
            policy.wait_after(&unavailable(), 2, 0.0),
            Some(Duration::ZERO)
        );
        let long = RetryPolicy {
            attempts: 40,
            ..policy
        };
        assert_eq!(long.wait_after(&unavailable(), 39, 1.0), Some(policy.cap));
    }

    #[test]
    fn the_last_attempt_and_a_permanent_failure_give_up() {
        let policy = RetryPolicy::SERVE;
        assert_eq!(policy.wait_after(&unavailable(), 5, 0.5), None);
        let refused = JobError::GitHub(GitHubError::Status {
            method: Method::GET,
            path: "/repos/o/r".into(),
            status: StatusCode::NOT_FOUND,
            message: "Not Found".into(),
        });
        assert_eq!(policy.wait_after(&refused, 1, 0.5), None);
    }

    #[test]
    fn a_rate_limit_waits_as_long_as_github_asked_up_to_the_cap() {
        let limited = JobError::GitHub(GitHubError::RateLimited {
            method: Method::GET,
            path: "/repos/o/r/tarball/x".into(),
            status: StatusCode::TOO_MANY_REQUESTS,
            message: "secondary rate limit".into(),
            wait: Duration::from_secs(90),
        });
        assert!(limited.is_retryable());
        let policy = RetryPolicy {
            cap: Duration::from_secs(120),
            ..RetryPolicy::SERVE
        };
        assert_eq!(
            policy.wait_after(&limited, 1, 0.0),
            Some(Duration::from_secs(90))
        );
        // Past the cap the job gives up instead of sleeping.
        assert_eq!(RetryPolicy::SERVE.wait_after(&limited, 1, 0.0), None);
    }

    #[test]
    fn jitter_is_a_unit_draw() {
        for _ in 0..100 {
            let unit = jitter();
            assert!((0.0..1.0).contains(&unit), "{unit}");
        }
    }
}
