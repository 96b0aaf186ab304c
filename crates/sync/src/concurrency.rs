//! How many store requests a sync has in flight at once: each is a round trip (5–30 ms on
//! S3), so a push of many agents runs them side by side, never one after another
//! (docs/reference.md §6, "A push of many agents"). One bound for every kind of blob request
//! (fingerprint lookups, archive, snapshot and fingerprint puts, existence checks), so that a
//! sync's fan-out is one number: `ASTROLIFT_SYNC_CONCURRENCY` (docs/reference.md §13).

use std::fmt;

/// The environment variable that sets [`SyncConcurrency`].
pub const SYNC_CONCURRENCY_VAR: &str = "ASTROLIFT_SYNC_CONCURRENCY";

/// Requests a sync has in flight at once: 1 to [`SyncConcurrency::MAX`], by default
/// [`SyncConcurrency::DEFAULT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncConcurrency(usize);

/// A value of `ASTROLIFT_SYNC_CONCURRENCY` that is not a whole number from 1 to 256.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{SYNC_CONCURRENCY_VAR} is {value:?}: it must be a whole number from 1 to {}",
    SyncConcurrency::MAX
)]
pub struct InvalidConcurrency {
    /// The refused value (at most 40 characters of it).
    pub value: String,
}

impl SyncConcurrency {
    /// The default.
    pub const DEFAULT: usize = 32;
    /// The most allowed.
    pub const MAX: usize = 256;

    /// Parses a value of `ASTROLIFT_SYNC_CONCURRENCY`.
    pub fn parse(text: &str) -> Result<Self, InvalidConcurrency> {
        match text.trim().parse::<usize>() {
            Ok(n) if (1..=Self::MAX).contains(&n) => Ok(Self(n)),
            _ => Err(InvalidConcurrency {
                value: text.chars().take(40).collect(),
            }),
        }
    }

    /// `ASTROLIFT_SYNC_CONCURRENCY` of this process; the default when it is unset.
    pub fn from_env() -> Result<Self, InvalidConcurrency> {
        match std::env::var(SYNC_CONCURRENCY_VAR) {
            Ok(text) => Self::parse(&text),
            Err(std::env::VarError::NotPresent) => Ok(Self::default()),
            Err(std::env::VarError::NotUnicode(_)) => Err(InvalidConcurrency {
                value: "(not UTF-8)".into(),
            }),
        }
    }

    /// The bound.
    pub fn get(self) -> usize {
        self.0
    }
}

impl Default for SyncConcurrency {
    fn default() -> Self {
        Self(Self::DEFAULT)
    }
}

impl fmt::Display for SyncConcurrency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_one_and_256() {
        assert_eq!(SyncConcurrency::parse("1").map(SyncConcurrency::get), Ok(1));
        assert_eq!(
            SyncConcurrency::parse("256").map(SyncConcurrency::get),
            Ok(256)
        );
        for refused in ["0", "257", "-1", "", "32x", "1e3"] {
            assert!(SyncConcurrency::parse(refused).is_err(), "{refused:?}");
        }
        assert_eq!(SyncConcurrency::default().get(), 32);
    }

    #[test]
    fn the_error_names_the_variable_and_the_range() {
        let error = SyncConcurrency::parse("0").unwrap_err().to_string();
        assert_eq!(
            error,
            "ASTROLIFT_SYNC_CONCURRENCY is \"0\": it must be a whole number from 1 to 256"
        );
    }
}
