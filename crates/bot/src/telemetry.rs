//! Logs and metrics, the same for `serve` and the Lambda functions.
//!
//! - **Logs** are `tracing` records. On Lambda (or with
//!   `ASTROLIFT_LOG_FORMAT=json`) they are JSON lines with the fields of the
//!   current spans, so every line of a request carries its delivery id,
//!   repository and commit; elsewhere they are human-readable on stderr.
//!   The level comes from `ASTROLIFT_LOG_LEVEL` (or `RUST_LOG`), default `info`
//!   (the AWS SDK's region and credentials lookups `error`: [`QUIET_AWS_CONFIG`]).
//! - **Metrics** are CloudWatch Embedded Metric Format lines printed to
//!   stdout: CloudWatch Logs extracts them, so the hot path makes no SDK call.
//!   They are printed only on Lambda or with `ASTROLIFT_METRICS=emf`.

use std::io::Write as _;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use tracing_subscriber::EnvFilter;

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "Astrolift";

/// The metrics we emit, each a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A webhook delivery accepted (verified).
    Deliveries,
    /// A sync job finished (check or apply).
    Syncs,
    /// A check run completed.
    CheckRuns,
    /// A dispatch recorded (not a duplicate).
    Dispatches,
    /// Anything that failed: a refused delivery, a failed job, a failed check run.
    Failures,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Deliveries => "Deliveries",
            Metric::Syncs => "Syncs",
            Metric::CheckRuns => "CheckRuns",
            Metric::Dispatches => "Dispatches",
            Metric::Failures => "Failures",
        }
    }
}

fn on_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some()
}

fn env_is(name: &str, value: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v.eq_ignore_ascii_case(value))
}

/// Filter directives that keep the AWS SDK's own warnings about a missing region or missing
/// credentials (the instance-metadata region lookup, the credentials chain) below the
/// default levels: each is the SDK's debug dump, and the store's error that follows names
/// the cause with a hint (docs/reference.md §3, "Errors"). A level set by `RUST_LOG` or
/// `ASTROLIFT_LOG_LEVEL`, or `--verbose`, shows them.
pub const QUIET_AWS_CONFIG: &str =
    "aws_config::imds::region=error,aws_config::meta::credentials::chain=error";

/// Installs the global `tracing` subscriber; JSON on Lambda. Idempotent.
pub fn init_logging() {
    let filter = std::env::var("ASTROLIFT_LOG_LEVEL")
        .ok()
        .and_then(|level| EnvFilter::try_new(level).ok())
        .or_else(|| EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| EnvFilter::new(format!("info,{QUIET_AWS_CONFIG}")));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = if on_lambda() || env_is("ASTROLIFT_LOG_FORMAT", "json") {
        builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .flatten_event(true)
            .with_ansi(false)
            .try_init()
    } else {
        builder.with_ansi(false).try_init()
    };
    // A second call (tests, several entry points) keeps the first subscriber.
    drop(installed);
}

fn metrics_enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        if env_is("ASTROLIFT_METRICS", "off") {
            return false;
        }
        on_lambda() || env_is("ASTROLIFT_METRICS", "emf")
    })
}

/// One EMF document: `count` of `metric` for `function` (`webhook`, `sync`,
/// `trigger` or `serve`).
pub fn emf_line(function: &str, metric: Metric, count: u64, timestamp_ms: u128) -> String {
    json!({
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [["Function"]],
                "Metrics": [{ "Name": metric.name(), "Unit": "Count" }],
            }],
        },
        "Function": function,
        metric.name(): count,
    })
    .to_string()
}

/// Prints one EMF line to stdout when metrics are enabled. Never fails: a
/// metric that cannot be written is dropped, not an error of the request.
pub fn count(function: &str, metric: Metric, count: u64) {
    if !metrics_enabled() {
        return;
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let line = emf_line(function, metric, count, now);
    let mut stdout = std::io::stdout().lock();
    let _ignored = writeln!(stdout, "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quiet_aws_config_directives_parse() {
        let filter = EnvFilter::try_new(format!("info,{QUIET_AWS_CONFIG}")).expect("directives");
        let shown = filter.to_string();
        assert!(shown.contains("aws_config::imds::region=error"), "{shown}");
        assert!(
            shown.contains("aws_config::meta::credentials::chain=error"),
            "{shown}"
        );
    }

    #[test]
    fn emf_line_names_namespace_dimension_and_value() {
        let line = emf_line("webhook", Metric::Deliveries, 3, 1_700_000_000_000);
        let value: serde_json::Value = serde_json::from_str(&line).expect("json");
        assert_eq!(
            value["_aws"]["CloudWatchMetrics"][0]["Namespace"],
            "Astrolift"
        );
        assert_eq!(
            value["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"],
            "Deliveries"
        );
        assert_eq!(value["Function"], "webhook");
        assert_eq!(value["Deliveries"], 3);
    }
}
