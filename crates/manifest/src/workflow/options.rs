//! A stage's `timeout`, `heartbeat` and `retries` (docs/reference.md,
//! "Workflows"): how long a stage may take, how long it may go without a
//! `running` callback, and how often a failed or timed-out stage is
//! dispatched again. Both workflow engines honour them.
//!
//! Rules, each a diagnostic on the offending value:
//! - a duration is a string `<integer><unit>`, the unit one of `s`, `m`, `h`
//!   and `d` (`90s`, `15m`, `2h`, `7d`); nothing else (no sign, no space, no
//!   `1h30m`);
//! - `timeout` is from [`MIN_TIMEOUT_SECONDS`] (30s) to
//!   [`MAX_TIMEOUT_SECONDS`] (7d), [`DEFAULT_TIMEOUT_SECONDS`] (24h) when not
//!   written;
//! - `heartbeat` is optional, at least 1s and shorter than the stage's
//!   timeout (compared only when the timeout itself is valid);
//! - `retries` is an integer from 0 to [`MAX_RETRIES`], 0 when not written.
//!
//! A value of the wrong TOML type is `toml/wrong-type`; an invalid value
//! leaves its default in the model (a workflow with errors is not
//! registered).

use toml::de::DeTable;

use crate::diagnostic::{Code, Severity};
use crate::toml_walk::TomlFile;

pub const INVALID_TIMEOUT: Code = Code::new(
    "workflow/invalid-timeout",
    Severity::Error,
    "A stage's `timeout` is not a duration (`90s`, `15m`, `2h`, `7d`) from 30s to 7d.",
);
pub const INVALID_HEARTBEAT: Code = Code::new(
    "workflow/invalid-heartbeat",
    Severity::Error,
    "A stage's `heartbeat` is not a duration (`90s`, `15m`, `2h`) of at least 1s and shorter than the stage's `timeout`.",
);
pub const INVALID_RETRIES: Code = Code::new(
    "workflow/invalid-retries",
    Severity::Error,
    "A stage's `retries` is not an integer from 0 to 5.",
);

/// The shortest `timeout`: 30 seconds.
pub const MIN_TIMEOUT_SECONDS: u32 = 30;
/// The longest `timeout`: 7 days.
pub const MAX_TIMEOUT_SECONDS: u32 = 7 * DAY;
/// A stage's `timeout` when the file does not say: 24 hours.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = DAY;
/// The most `retries` a stage may have.
pub const MAX_RETRIES: u8 = 5;

const DAY: u32 = 86_400;

/// The help of a value that is not a duration.
const DURATION_FORM: &str = "write an integer and a unit (s, m, h or d): `90s`, `15m`, `2h`, `7d`";

/// A stage's options as read (the defaults where a value is absent or invalid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StageOptions {
    pub timeout_seconds: u32,
    pub heartbeat_seconds: Option<u32>,
    pub retries: u8,
}

/// The seconds of a duration `<integer><unit>` (unit `s`, `m`, `h` or `d`),
/// saturating at `u64::MAX`; `None` when `text` has another form.
pub fn parse_duration(text: &str) -> Option<u64> {
    let unit = text.chars().last()?;
    let digits = &text[..text.len() - unit.len_utf8()];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let scale: u64 = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3_600,
        'd' => u64::from(DAY),
        _ => return None,
    };
    // All digits: the only parse failure is overflow.
    let count = digits.parse::<u64>().unwrap_or(u64::MAX);
    Some(count.saturating_mul(scale))
}

/// `seconds` as a duration in the largest unit that divides it, days only
/// from two on (`86400` is `24h`, as the docs write the default).
pub fn format_duration(seconds: u32) -> String {
    // (the least it is written in, the unit's seconds, the unit)
    let units = [(2 * DAY, DAY, 'd'), (3_600, 3_600, 'h'), (60, 60, 'm')];
    let unit = units
        .iter()
        .find(|(least, scale, _)| seconds >= *least && seconds.is_multiple_of(*scale));
    match unit {
        Some((_, scale, unit)) => format!("{}{unit}", seconds / scale),
        None => format!("{seconds}s"),
    }
}

/// Reads `timeout`, `heartbeat` and `retries` of one `[[stages]]` entry.
pub(crate) fn stage_options<'i>(file: &mut TomlFile<'i>, entry: &DeTable<'i>) -> StageOptions {
    let timeout = stage_timeout(file, entry);
    StageOptions {
        timeout_seconds: timeout.unwrap_or(DEFAULT_TIMEOUT_SECONDS),
        heartbeat_seconds: stage_heartbeat(file, entry, timeout),
        retries: stage_retries(file, entry),
    }
}

/// `timeout` when it is valid, the default when absent, `None` when invalid.
fn stage_timeout<'i>(file: &mut TomlFile<'i>, entry: &DeTable<'i>) -> Option<u32> {
    let Some((text, range)) = file.str(entry, "timeout") else {
        // Absent: the default; of another type: reported, the default stands.
        return entry
            .get("timeout")
            .is_none()
            .then_some(DEFAULT_TIMEOUT_SECONDS);
    };
    let Some(seconds) = parse_duration(text) else {
        let message = format!("`timeout` is `{text}`, which is not a duration");
        file.report(&INVALID_TIMEOUT, range, message).help = Some(DURATION_FORM.to_owned());
        return None;
    };
    let bounds = u64::from(MIN_TIMEOUT_SECONDS)..=u64::from(MAX_TIMEOUT_SECONDS);
    match u32::try_from(seconds)
        .ok()
        .filter(|_| bounds.contains(&seconds))
    {
        Some(seconds) => Some(seconds),
        None => {
            let (min, max) = (
                format_duration(MIN_TIMEOUT_SECONDS),
                format_duration(MAX_TIMEOUT_SECONDS),
            );
            let message = format!("`timeout` is `{text}`; it must be from {min} to {max}");
            file.report(&INVALID_TIMEOUT, range, message).help = Some(format!(
                "a stage's timeout is from {min} to {max}; without `timeout` it is {}",
                format_duration(DEFAULT_TIMEOUT_SECONDS)
            ));
            None
        }
    }
}

/// `heartbeat` when written and valid: at least 1s and, when the stage's
/// `timeout` is valid, shorter than it.
fn stage_heartbeat<'i>(
    file: &mut TomlFile<'i>,
    entry: &DeTable<'i>,
    timeout: Option<u32>,
) -> Option<u32> {
    let (text, range) = file.str(entry, "heartbeat")?;
    let Some(seconds) = parse_duration(text) else {
        let message = format!("`heartbeat` is `{text}`, which is not a duration");
        file.report(&INVALID_HEARTBEAT, range, message).help = Some(DURATION_FORM.to_owned());
        return None;
    };
    if seconds == 0 {
        let message = format!("`heartbeat` is `{text}`; it must be at least 1s");
        file.report(&INVALID_HEARTBEAT, range, message).help =
            Some("leave `heartbeat` out for a stage that need not report while it runs".to_owned());
        return None;
    }
    let Some(timeout) = timeout else {
        // The timeout is invalid and reported: comparing with it says nothing more.
        return u32::try_from(seconds).ok();
    };
    if seconds >= u64::from(timeout) {
        let message = format!(
            "`heartbeat` is `{text}`, which is not shorter than the stage's timeout ({})",
            format_duration(timeout)
        );
        file.report(&INVALID_HEARTBEAT, range, message).help = Some(
            "a heartbeat is the longest a stage may go without a `running` callback: make it shorter than `timeout`, or leave it out".to_owned(),
        );
        return None;
    }
    u32::try_from(seconds).ok()
}

/// `retries` when valid, else 0.
fn stage_retries<'i>(file: &mut TomlFile<'i>, entry: &DeTable<'i>) -> u8 {
    let Some((retries, range)) = file.int(entry, "retries") else {
        return 0;
    };
    match u8::try_from(retries).ok().filter(|r| *r <= MAX_RETRIES) {
        Some(retries) => retries,
        None => {
            let message = format!("`retries` is {retries}; it must be from 0 to {MAX_RETRIES}");
            file.report(&INVALID_RETRIES, range, message).help = Some(format!(
                "a failed or timed-out stage is dispatched again at most {MAX_RETRIES} times"
            ));
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_an_integer_and_one_unit() {
        assert_eq!(parse_duration("30s"), Some(30));
        assert_eq!(parse_duration("15m"), Some(900));
        assert_eq!(parse_duration("2h"), Some(7_200));
        assert_eq!(parse_duration("7d"), Some(604_800));
        assert_eq!(parse_duration("007s"), Some(7));
        assert_eq!(parse_duration("0s"), Some(0));
        for text in [
            "", "s", "30", "30S", "-30s", "+30s", " 30s", "30 s", "1h30m", "1.5h", "30sec", "3é",
        ] {
            assert_eq!(parse_duration(text), None, "{text:?}");
        }
    }

    #[test]
    fn huge_durations_saturate() {
        assert_eq!(parse_duration("99999999999999999999999d"), Some(u64::MAX));
        assert_eq!(parse_duration("18446744073709551615d"), Some(u64::MAX));
    }

    #[test]
    fn durations_print_in_their_largest_unit() {
        assert_eq!(format_duration(30), "30s");
        assert_eq!(format_duration(90), "90s");
        assert_eq!(format_duration(900), "15m");
        assert_eq!(format_duration(86_400), "24h");
        assert_eq!(format_duration(172_800), "2d");
        assert_eq!(format_duration(604_800), "7d");
        assert_eq!(format_duration(0), "0s");
    }
}
