//! When to retry a GitHub request, and how long to wait first.
//!
//! The policy is a pure function of the attempt number, what GitHub answered
//! and the current time, so it is unit-tested without a network or a clock.
//! The retry layer (`layers.rs`, under octocrab) does the sleeping.
//!
//! Rules (docs/reference.md §9):
//! - `retry-after` (seconds) is honoured on any retryable answer;
//! - `x-ratelimit-remaining: 0` waits until `x-ratelimit-reset` (epoch seconds);
//! - 403 and 429 are rate limits only when they carry those headers (or
//!   GitHub's secondary-rate-limit message); any other 4xx is final;
//! - 5xx and transport errors are retried with exponential backoff and jitter;
//! - attempts and the total wait are bounded, so a Lambda never sleeps past
//!   its timeout waiting for an hourly reset.

use std::time::{Duration, SystemTime};

use http::{HeaderMap, StatusCode};

/// GitHub's documented wait for a secondary rate limit without `retry-after`.
const SECONDARY_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// Bounds on retrying one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Backoff before the second attempt; doubled for each further one.
    pub base_delay: Duration,
    /// Largest single backoff (before jitter).
    pub max_delay: Duration,
    /// Largest sum of all waits for one request. A rate limit that asks for
    /// more is reported as an error instead of waited for.
    pub max_total_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_total_wait: Duration::from_secs(60),
        }
    }
}

/// What one attempt came to, as far as retrying is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// GitHub answered with this status and headers (body not needed, except
    /// `secondary` which the caller sets when the message names a secondary
    /// rate limit).
    Status {
        status: StatusCode,
        headers: &'a HeaderMap,
        secondary: bool,
    },
    /// The request never got an answer (connect, reset, timeout).
    Transport,
}

/// The policy's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Wait this long, then try again.
    RetryAfter(Duration),
    /// A rate limit asks for a wait past the budget: report it.
    RateLimitedTooLong(Duration),
    /// Do not retry: success, a final 4xx, or attempts exhausted.
    Stop,
}

impl RetryPolicy {
    /// Decides after attempt number `attempt` (1-based), having already waited
    /// `waited` in all. `jitter` is a fraction in `[0, 1)`.
    pub fn decide(
        &self,
        attempt: u32,
        waited: Duration,
        outcome: Outcome<'_>,
        now: SystemTime,
        jitter: f64,
    ) -> Decision {
        if attempt >= self.max_attempts {
            return Decision::Stop;
        }
        let wait = match outcome {
            Outcome::Transport => self.backoff(attempt, jitter),
            Outcome::Status {
                status,
                headers,
                secondary,
            } => match rate_limit_wait(status, headers, secondary, now) {
                Some(wait) => {
                    if waited + wait > self.max_total_wait {
                        return Decision::RateLimitedTooLong(wait);
                    }
                    wait
                }
                None if status.is_server_error() => {
                    retry_after(headers).unwrap_or_else(|| self.backoff(attempt, jitter))
                }
                None => return Decision::Stop,
            },
        };
        if waited + wait > self.max_total_wait {
            return Decision::Stop;
        }
        Decision::RetryAfter(wait)
    }

    /// Exponential backoff with "equal jitter": half fixed, half random, so
    /// waits never collapse to zero and concurrent callers spread out.
    pub fn backoff(&self, attempt: u32, jitter: f64) -> Duration {
        let exponent = attempt.saturating_sub(1).min(16);
        let full = self
            .base_delay
            .saturating_mul(1 << exponent)
            .min(self.max_delay);
        let half = full / 2;
        half + half.mul_f64(jitter.clamp(0.0, 1.0))
    }
}

/// The wait a rate-limit answer asks for, or `None` if it is not one.
pub fn rate_limit_wait(
    status: StatusCode,
    headers: &HeaderMap,
    secondary: bool,
    now: SystemTime,
) -> Option<Duration> {
    if status != StatusCode::FORBIDDEN && status != StatusCode::TOO_MANY_REQUESTS {
        return None;
    }
    if let Some(wait) = retry_after(headers) {
        return Some(wait);
    }
    if header_u64(headers, "x-ratelimit-remaining") == Some(0) {
        let reset = header_u64(headers, "x-ratelimit-reset")?;
        let reset = SystemTime::UNIX_EPOCH + Duration::from_secs(reset);
        return Some(reset.duration_since(now).unwrap_or(Duration::ZERO));
    }
    (secondary || status == StatusCode::TOO_MANY_REQUESTS).then_some(SECONDARY_RATE_LIMIT_WAIT)
}

/// `retry-after` in seconds (GitHub never sends the HTTP-date form).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    header_u64(headers, "retry-after").map(Duration::from_secs)
}

fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// A jitter fraction in `[0, 1)`. Hand-written from std's randomly keyed
/// hasher rather than adding `rand`: jitter needs spread, not quality.
pub fn random_jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    const NOW_SECS: u64 = 1_700_000_000;

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(NOW_SECS)
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let Ok(value) = HeaderValue::from_str(value) {
                map.insert(*name, value);
            }
        }
        map
    }

    fn decide(status: u16, map: &HeaderMap, attempt: u32, waited: Duration) -> Decision {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT);
        let outcome = Outcome::Status {
            status,
            headers: map,
            secondary: false,
        };
        RetryPolicy::default().decide(attempt, waited, outcome, now(), 0.0)
    }

    #[test]
    fn server_errors_back_off_exponentially() {
        let none = headers(&[]);
        assert_eq!(
            decide(500, &none, 1, Duration::ZERO),
            Decision::RetryAfter(Duration::from_millis(250))
        );
        assert_eq!(
            decide(502, &none, 2, Duration::ZERO),
            Decision::RetryAfter(Duration::from_millis(500))
        );
        assert_eq!(
            decide(503, &none, 3, Duration::ZERO),
            Decision::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(decide(500, &none, 4, Duration::ZERO), Decision::Stop);
    }

    #[test]
    fn jitter_stays_within_the_upper_half() {
        let policy = RetryPolicy::default();
        let high = policy.backoff(1, 0.999_999);
        assert!(high >= Duration::from_millis(250) && high < Duration::from_millis(500));
        assert_eq!(policy.backoff(30, 0.0), Duration::from_secs(4));
        let jitter = random_jitter();
        assert!((0.0..1.0).contains(&jitter));
    }

    #[test]
    fn other_client_errors_are_final() {
        let none = headers(&[]);
        for status in [400, 401, 403, 404, 409, 422] {
            assert_eq!(decide(status, &none, 1, Duration::ZERO), Decision::Stop);
        }
    }

    #[test]
    fn retry_after_is_honoured() {
        let map = headers(&[("retry-after", "3")]);
        assert_eq!(
            decide(403, &map, 1, Duration::ZERO),
            Decision::RetryAfter(Duration::from_secs(3))
        );
        assert_eq!(
            decide(429, &map, 1, Duration::ZERO),
            Decision::RetryAfter(Duration::from_secs(3))
        );
        assert_eq!(
            decide(503, &map, 1, Duration::ZERO),
            Decision::RetryAfter(Duration::from_secs(3))
        );
    }

    #[test]
    fn primary_rate_limit_waits_until_reset() {
        let reset = (NOW_SECS + 7).to_string();
        let map = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", &reset),
        ]);
        assert_eq!(
            decide(403, &map, 1, Duration::ZERO),
            Decision::RetryAfter(Duration::from_secs(7))
        );
        let past = (NOW_SECS - 5).to_string();
        let map = headers(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", &past)]);
        assert_eq!(
            decide(403, &map, 1, Duration::ZERO),
            Decision::RetryAfter(Duration::ZERO)
        );
    }

    #[test]
    fn a_rate_limit_past_the_budget_is_reported() {
        let reset = (NOW_SECS + 3600).to_string();
        let map = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", &reset),
        ]);
        assert_eq!(
            decide(403, &map, 1, Duration::ZERO),
            Decision::RateLimitedTooLong(Duration::from_secs(3600))
        );
        let map = headers(&[("retry-after", "10")]);
        assert_eq!(
            decide(403, &map, 2, Duration::from_secs(55)),
            Decision::RateLimitedTooLong(Duration::from_secs(10))
        );
    }

    #[test]
    fn secondary_rate_limit_without_retry_after_waits_a_minute() {
        let none = headers(&[]);
        let outcome = Outcome::Status {
            status: StatusCode::FORBIDDEN,
            headers: &none,
            secondary: true,
        };
        let decision = RetryPolicy::default().decide(1, Duration::ZERO, outcome, now(), 0.5);
        assert_eq!(decision, Decision::RetryAfter(Duration::from_secs(60)));
    }

    #[test]
    fn transport_errors_retry_until_attempts_run_out() {
        let policy = RetryPolicy::default();
        let first = policy.decide(1, Duration::ZERO, Outcome::Transport, now(), 0.0);
        assert_eq!(first, Decision::RetryAfter(Duration::from_millis(250)));
        let last = policy.decide(4, Duration::ZERO, Outcome::Transport, now(), 0.0);
        assert_eq!(last, Decision::Stop);
    }
}
