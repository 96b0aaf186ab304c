//! Trigger bindings: `[[triggers]]` in `astrolift.toml` (docs/reference.md §5.5).
//!
//! ```toml
//! [[triggers]]
//! name = "jira-high-priority"
//! source = "generic"
//! verify = { kind = "hmac-sha256", header = "X-Signature", prefix = "sha256=", secret = "secret://agents/jira-hook" }
//! filter = '.issue.fields.priority.name == "High"'
//! payload = '{mode: "triage", issue: .issue.key}'
//! env_spec = "triage-prod"
//! ```
//!
//! `verify` of kind `hmac-sha256` may add replay protection:
//! `timestamp_header = "X-Timestamp"` (the signature then covers
//! `"{timestamp}.{body}"`) and `tolerance_seconds` (default
//! [`DEFAULT_TOLERANCE_SECONDS`], at most [`MAX_TOLERANCE_SECONDS`]). A
//! `github` trigger may set `allow_untrusted = true` to fire for fork pull
//! requests and senders who are not owners, members or collaborators.
//!
//! A binding may also name `samples = "PATH"`, a folder of sample requests relative to
//! the manifest's directory (checked here: a folder of the repository with at most
//! [`crate::samples::MAX_SAMPLES`] samples; read by [`crate::samples`], evaluated by
//! `astrolift-trigger`), `keep_deliveries` (how many accepted requests the service keeps
//! for replay, 0 to [`MAX_KEEP_DELIVERIES`], default [`DEFAULT_KEEP_DELIVERIES`]) and
//! `replay_values = true` (a pull request's replay may show payload values; private
//! repositories only, enforced where the replay is shown). docs/reference.md §5.5.
//!
//! Validated as a format here; executed by the trigger runtime. `filter` and
//! `payload` are compiled with [`crate::jq`]; a jq error becomes a diagnostic
//! at the exact line and column inside the TOML string, whatever its quoting
//! (`'…'`, `"…"` with escapes, `'''…'''`, `"""…"""`).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use serde::{Deserialize, Serialize};
use toml::de::{DeTable, DeValue};

use crate::config::is_secret_ref;
use crate::diagnostic::{Code, Severity, Span};
use crate::paths::{self, PathProblem, SLUG_RULE, is_slug};
use crate::samples::{self, MAX_SAMPLES};
use crate::toml_walk::{TomlFile, key_span};
use crate::tree::SourceTree;
use astrolift_jq::{JqErrorKind, JqProgram};

pub const INVALID_NAME: Code = Code::new(
    "trigger/invalid-name",
    Severity::Error,
    "A trigger `name` that is not a kebab-case slug.",
);
pub const DUPLICATE_NAME: Code = Code::new(
    "trigger/duplicate-name",
    Severity::Error,
    "Two triggers of one agent with the same `name`.",
);
pub const UNKNOWN_SOURCE: Code = Code::new(
    "trigger/unknown-source",
    Severity::Error,
    "`source` is neither `generic` nor `github`.",
);
pub const EVENTS_NOT_ALLOWED: Code = Code::new(
    "trigger/events-not-allowed",
    Severity::Error,
    "`events` on a `generic` trigger: only GitHub triggers select events.",
);
pub const MISSING_EVENTS: Code = Code::new(
    "trigger/missing-events",
    Severity::Error,
    "A `github` trigger without `events`.",
);
pub const INVALID_EVENT: Code = Code::new(
    "trigger/invalid-event",
    Severity::Error,
    "An event that is not of the form `event` or `event.action`.",
);
pub const MISSING_VERIFY: Code = Code::new(
    "trigger/missing-verify",
    Severity::Error,
    "A `generic` trigger without `verify`: anyone could fire it.",
);
pub const UNKNOWN_VERIFY_KIND: Code = Code::new(
    "trigger/unknown-verify-kind",
    Severity::Error,
    "`verify.kind` is not `hmac-sha256`, `github` or `token`.",
);
pub const VERIFY_MISMATCH: Code = Code::new(
    "trigger/verify-mismatch",
    Severity::Error,
    "A `github` trigger with a `verify` other than `github`: GitHub events are verified with the App's secret.",
);
pub const PLAINTEXT_SECRET: Code = Code::new(
    "trigger/plaintext-secret",
    Severity::Error,
    "`verify.secret` is not a `secret://` reference.",
);
pub const UNTRUSTED_NOT_ALLOWED: Code = Code::new(
    "trigger/untrusted-not-allowed",
    Severity::Error,
    "`allow_untrusted` on a `generic` trigger: only GitHub triggers have a trust policy.",
);
pub const INVALID_REPORT: Code = Code::new(
    "trigger/invalid-report",
    Severity::Error,
    "`report` is not `comment` or `check`, is on a `generic` trigger, or names a report its events cannot have.",
);
pub const INVALID_TOLERANCE: Code = Code::new(
    "trigger/invalid-tolerance",
    Severity::Error,
    "`verify.tolerance_seconds` outside 1–86400, or without `timestamp_header`.",
);
pub const JQ_SYNTAX: Code = Code::new(
    "trigger/jq-syntax",
    Severity::Error,
    "`filter` or `payload` is not valid jq.",
);
pub const JQ_UNDEFINED: Code = Code::new(
    "trigger/jq-undefined",
    Severity::Error,
    "`filter` or `payload` uses an undefined or removed jq function or variable (`env`, `$ENV`, `input`…).",
);

pub const INVALID_SAMPLES: Code = Code::new(
    "trigger/invalid-samples",
    Severity::Error,
    "`samples` is not a folder of the repository (relative to the manifest's directory), or holds more than 100 samples.",
);
pub const INVALID_KEEP_DELIVERIES: Code = Code::new(
    "trigger/invalid-keep-deliveries",
    Severity::Error,
    "`keep_deliveries` is not an integer from 0 to 20.",
);
pub const SAMPLE_MISMATCH: Code = Code::new(
    "trigger/sample-mismatch",
    Severity::Error,
    "A sample request's outcome differs from what its `NAME.expected.json` pins.",
);
pub const SAMPLE_UNPINNED: Code = Code::new(
    "trigger/sample-unpinned",
    Severity::Notice,
    "A sample request without `NAME.expected.json`: what it did is reported, never compared.",
);
pub const SAMPLE_NOT_EVALUATED: Code = Code::new(
    "trigger/sample-not-evaluated",
    Severity::Warning,
    "A sample request could not be evaluated: every jq evaluation slot of the process stayed taken.",
);

/// The codes of this module, for the catalogue.
pub const CODES: &[&Code] = &[
    &INVALID_NAME,
    &DUPLICATE_NAME,
    &UNKNOWN_SOURCE,
    &EVENTS_NOT_ALLOWED,
    &MISSING_EVENTS,
    &INVALID_EVENT,
    &MISSING_VERIFY,
    &UNKNOWN_VERIFY_KIND,
    &VERIFY_MISMATCH,
    &PLAINTEXT_SECRET,
    &UNTRUSTED_NOT_ALLOWED,
    &INVALID_REPORT,
    &INVALID_TOLERANCE,
    &JQ_SYNTAX,
    &JQ_UNDEFINED,
    &INVALID_SAMPLES,
    &INVALID_KEEP_DELIVERIES,
    &SAMPLE_MISMATCH,
    &SAMPLE_UNPINNED,
    &SAMPLE_NOT_EVALUATED,
];

pub(crate) const TRIGGER_KEYS: &[&str] = &[
    "name",
    "source",
    "events",
    "verify",
    "filter",
    "payload",
    "env_spec",
    "allow_untrusted",
    "report",
    "samples",
    "keep_deliveries",
    "replay_values",
];
const SOURCES: &[&str] = &["generic", "github"];
const VERIFY_KINDS: &[&str] = &["hmac-sha256", "github", "token"];
const HMAC_KEYS: &[&str] = &[
    "kind",
    "header",
    "prefix",
    "secret",
    "timestamp_header",
    "tolerance_seconds",
];
/// `verify.tolerance_seconds` when only `timestamp_header` is set.
pub const DEFAULT_TOLERANCE_SECONDS: u64 = 300;
/// The largest `verify.tolerance_seconds`: a day.
pub const MAX_TOLERANCE_SECONDS: u64 = 86_400;
/// How many accepted requests a binding keeps for replay when it does not say.
pub const DEFAULT_KEEP_DELIVERIES: u32 = 20;
/// The most accepted requests a binding may keep for replay.
pub const MAX_KEEP_DELIVERIES: u32 = 20;
const GITHUB_KEYS: &[&str] = &["kind"];
const TOKEN_KEYS: &[&str] = &["kind", "header", "secret"];

/// Where a trigger's requests come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TriggerSource {
    /// `POST /triggers/{id}` from any HTTP sender.
    Generic,
    /// GitHub events for the repository, through the App's webhook.
    Github,
}

/// How a trigger request is authenticated. Secrets are `secret://` references.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Verify {
    HmacSha256 {
        header: String,
        prefix: Option<String>,
        secret: String,
        /// Replay protection: the header that carries the Unix time in
        /// seconds; the signature covers `"{timestamp}.{body}"`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timestamp_header: Option<String>,
        /// How far the timestamp may be from now, either way (with
        /// `timestamp_header`; [`DEFAULT_TOLERANCE_SECONDS`] when unset).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tolerance_seconds: Option<u64>,
    },
    Github,
    Token {
        header: String,
        secret: String,
    },
}

/// One validated `[[triggers]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerSpec {
    pub name: String,
    pub source: TriggerSource,
    /// GitHub only: `event` or `event.action`.
    pub events: Vec<String>,
    pub verify: Option<Verify>,
    /// jq source; compiled during validation.
    pub filter: Option<String>,
    pub payload: Option<String>,
    pub env_spec: Option<String>,
    /// GitHub only: also fire for fork pull requests and for senders whose
    /// `author_association` is not `OWNER`, `MEMBER` or `COLLABORATOR`.
    /// Not serialized when `false`, so bindings stored before the key
    /// existed keep their digest.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_untrusted: bool,
    /// GitHub only: report the dispatch's terminal result back to the issue or
    /// pull request it came from. Not serialized when absent (binding digests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<ReportKind>,
    /// A folder of sample requests, relative to the manifest's directory, as written
    /// (see [`crate::samples`]). Not serialized when absent (binding digests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<String>,
    /// How many accepted requests the service keeps for replay, 0 to
    /// [`MAX_KEEP_DELIVERIES`]; `None` is [`DEFAULT_KEEP_DELIVERIES`]
    /// ([`TriggerSpec::deliveries_kept`]). Not serialized when absent (binding digests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_deliveries: Option<u32>,
    /// A pull request's replay of this binding may show payload values (on private
    /// repositories only). Not serialized when `false` (binding digests).
    #[serde(default, skip_serializing_if = "is_false")]
    pub replay_values: bool,
}

impl TriggerSpec {
    /// How many accepted requests the service keeps for replay.
    pub fn deliveries_kept(&self) -> u32 {
        self.keep_deliveries.unwrap_or(DEFAULT_KEEP_DELIVERIES)
    }
}

/// Where a GitHub-sourced dispatch's terminal result is reported back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReportKind {
    /// A comment on the issue or pull request (`issues`, `issue_comment`, `pull_request`).
    Comment,
    /// A completed check run on the pull request's head commit (`pull_request`).
    Check,
}

impl ReportKind {
    /// The events (before any `.action`) whose payload names what this report goes to.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            ReportKind::Comment => &["issues", "issue_comment", "pull_request"],
            ReportKind::Check => &["pull_request"],
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::Comment => "comment",
            ReportKind::Check => "check",
        }
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Validates the `[[triggers]]` of one manifest's root table without its tree: a
/// `samples` folder is checked as a path only (relative, POSIX). Returns the entries that are complete
/// enough to bind (name and source known); every problem is reported in `file`.
pub fn validate_triggers<'i>(file: &mut TomlFile<'i>, root: &DeTable<'i>) -> Vec<TriggerSpec> {
    read_triggers(file, root, None).specs
}

/// Where a manifest's `samples` folders are looked for: its tree and its directory.
#[derive(Clone, Copy)]
pub struct SampleRoot<'t> {
    pub tree: &'t dyn SourceTree,
    /// Repo-relative directory of the manifest ("" for the root).
    pub dir: &'t str,
}

impl std::fmt::Debug for SampleRoot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SampleRoot")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The bindings of one manifest and where each is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TriggerBindings {
    /// The entries complete enough to bind (name and source known), in order.
    pub specs: Vec<TriggerSpec>,
    /// Each binding's name to the span of its `name` value (the first, for a duplicate).
    pub spans: BTreeMap<String, Span>,
}

/// Validates the `[[triggers]]` of one manifest's root table. With `samples`, each
/// `samples` folder must exist in the tree and hold at most [`MAX_SAMPLES`] samples, and
/// an expected file without its sample is a warning; every problem is reported in `file`.
pub fn read_triggers<'i>(
    file: &mut TomlFile<'i>,
    root: &DeTable<'i>,
    samples: Option<SampleRoot<'_>>,
) -> TriggerBindings {
    let mut names = BTreeSet::new();
    let mut out = TriggerBindings::default();
    for (table, range) in file.table_array(root, "triggers") {
        if let Some((spec, at)) = trigger(file, table, range, &mut names, samples) {
            let span = file.span(at);
            out.spans.entry(spec.name.clone()).or_insert(span);
            out.specs.push(spec);
        }
    }
    out
}

/// One entry, with the range of its `name` value.
fn trigger<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    range: Range<usize>,
    names: &mut BTreeSet<String>,
    samples: Option<SampleRoot<'_>>,
) -> Option<(TriggerSpec, Range<usize>)> {
    file.check_keys(table, TRIGGER_KEYS, "a `[[triggers]]` entry");
    let name = trigger_name(file, table, range.clone(), names);
    let source = trigger_source(file, table, range.clone());
    let events = trigger_events(file, table, source, range.clone());
    let verify = trigger_verify(file, table, source, range);
    let filter = jq_field(file, table, "filter");
    let payload = jq_field(file, table, "payload");
    let env_spec = file.str(table, "env_spec").map(|(s, _)| s.to_owned());
    let allow_untrusted = allow_untrusted(file, table, source);
    let report = trigger_report(file, table, source, &events);
    let samples = sample_folder(file, table, samples);
    let keep_deliveries = keep_deliveries(file, table);
    let replay_values = file
        .bool(table, "replay_values")
        .is_some_and(|(value, _)| value);
    let (name, name_range) = name?;
    let spec = TriggerSpec {
        name,
        source: source?,
        events,
        verify,
        filter,
        payload,
        env_spec,
        allow_untrusted,
        report,
        samples,
        keep_deliveries,
        replay_values,
    };
    Some((spec, name_range))
}

/// `samples = "PATH"`: a folder relative to the manifest's directory, inside the
/// repository; with the tree, one that exists and holds at most [`MAX_SAMPLES`] samples.
fn sample_folder<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    root: Option<SampleRoot<'_>>,
) -> Option<String> {
    let item = table.get("samples")?;
    let range = item.span();
    let DeValue::String(value) = item.get_ref() else {
        let found = item.get_ref().type_str();
        file.report(
            &INVALID_SAMPLES,
            range,
            format!("`samples` must be a string naming a folder, found {found}"),
        );
        return None;
    };
    let problem = match paths::normalize_relative(value) {
        Ok(_) | Err(PathProblem::ParentDir) => None,
        Err(problem) => Some(problem.to_string()),
    };
    let message = match (problem, root) {
        (Some(problem), _) => format!("`samples` `{value}` {problem}"),
        (None, None) => return Some(value.to_string()),
        (None, Some(root)) => match samples::sample_folder(root.dir, value) {
            None => format!("`samples` `{value}` climbs above the repository's root"),
            Some(folder) => match folder_problem(root.tree, &folder) {
                None => {
                    file.diagnostics
                        .extend(samples::orphan_expected(root.tree, &folder));
                    return Some(value.to_string());
                }
                Some(problem) => format!("`samples` `{value}` {problem}"),
            },
        },
    };
    file.report(&INVALID_SAMPLES, range, message).help = Some(format!(
        "name a folder of the repository, relative to the manifest's directory, holding at most \
         {MAX_SAMPLES} `NAME.json` samples, each with an optional `NAME.expected.json`"
    ));
    None
}

/// Why the repo-relative `folder` cannot be a samples folder, if it cannot.
fn folder_problem(tree: &dyn SourceTree, folder: &str) -> Option<String> {
    if !tree.is_dir(folder) {
        let shown = if folder.is_empty() { "." } else { folder };
        return Some(format!(
            "is not a folder of the repository (looked for `{shown}`)"
        ));
    }
    let count = samples::count_samples(tree, folder);
    (count > MAX_SAMPLES).then(|| format!("holds {count} samples, over the limit of {MAX_SAMPLES}"))
}

/// `keep_deliveries`: an integer from 0 to [`MAX_KEEP_DELIVERIES`].
fn keep_deliveries<'i>(file: &mut TomlFile<'i>, table: &DeTable<'i>) -> Option<u32> {
    let item = table.get("keep_deliveries")?;
    let message = match item.get_ref() {
        DeValue::Integer(integer) => {
            let digits: String = integer.as_str().chars().filter(|c| *c != '_').collect();
            let shown = match i64::from_str_radix(&digits, integer.radix()) {
                Ok(n) => match u32::try_from(n) {
                    Ok(n) if n <= MAX_KEEP_DELIVERIES => return Some(n),
                    _ => n.to_string(),
                },
                Err(_) => integer.as_str().to_owned(),
            };
            format!(
                "`keep_deliveries` is {shown}; it must be an integer from 0 to {MAX_KEEP_DELIVERIES}"
            )
        }
        other => format!(
            "`keep_deliveries` must be an integer from 0 to {MAX_KEEP_DELIVERIES}, found {}",
            other.type_str()
        ),
    };
    file.report(&INVALID_KEEP_DELIVERIES, item.span(), message)
        .help = Some(format!(
        "`keep_deliveries` is how many accepted requests are kept for replay (default \
         {DEFAULT_KEEP_DELIVERIES}; 0 keeps none)"
    ));
    None
}

/// `report = "comment" | "check"`: on `github` triggers whose every event
/// names an issue or pull request the report can go to.
fn trigger_report<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    source: Option<TriggerSource>,
    events: &[String],
) -> Option<ReportKind> {
    let (value, range) = file.str(table, "report")?;
    let kind = match value {
        "comment" => ReportKind::Comment,
        "check" => ReportKind::Check,
        other => {
            file.report(
                &INVALID_REPORT,
                range,
                format!("`report` is `{other}`; it must be `comment` or `check`"),
            );
            return None;
        }
    };
    if source == Some(TriggerSource::Generic) {
        file.report(
            &INVALID_REPORT,
            range,
            "`report` applies only to `source = \"github\"` triggers",
        )
        .help =
            Some("a generic sender gets the dispatch id in the answer: remove the key".to_owned());
        return None;
    }
    let base = |event: &str| event.split('.').next().unwrap_or(event).to_owned();
    let unfit: Vec<String> = events
        .iter()
        .filter(|event| !kind.events().contains(&base(event).as_str()))
        .cloned()
        .collect();
    if !unfit.is_empty() {
        file.report(
            &INVALID_REPORT,
            range,
            format!(
                "`report = \"{}\"` needs events of {}, not `{}`",
                kind.as_str(),
                kind.events().join(", "),
                unfit.join("`, `")
            ),
        );
        return None;
    }
    Some(kind)
}

/// `allow_untrusted`: a boolean, on `github` triggers only.
fn allow_untrusted<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    source: Option<TriggerSource>,
) -> bool {
    let Some((allow, range)) = file.bool(table, "allow_untrusted") else {
        return false;
    };
    if source == Some(TriggerSource::Generic) {
        file.report(
            &UNTRUSTED_NOT_ALLOWED,
            range,
            "`allow_untrusted` applies only to `source = \"github\"` triggers",
        )
        .help =
            Some("a generic trigger is trusted by its `verify` secret: remove the key".to_owned());
        return false;
    }
    allow
}

/// `verify.timestamp_header` and `verify.tolerance_seconds` of an
/// `hmac-sha256` verification.
fn replay_window<'i>(
    file: &mut TomlFile<'i>,
    verify: &DeTable<'i>,
) -> (Option<String>, Option<u64>) {
    let header = file
        .str(verify, "timestamp_header")
        .map(|(s, _)| s.to_owned());
    let Some((tolerance, range)) = file.int(verify, "tolerance_seconds") else {
        return (header, None);
    };
    let in_range = u64::try_from(tolerance)
        .ok()
        .filter(|t| (1..=MAX_TOLERANCE_SECONDS).contains(t));
    let message = match (in_range, &header) {
        (Some(tolerance), Some(_)) => return (header, Some(tolerance)),
        (None, _) => format!(
            "`tolerance_seconds` is {tolerance}; it must be between 1 and {MAX_TOLERANCE_SECONDS}"
        ),
        (Some(_), None) => "`tolerance_seconds` needs `timestamp_header`".to_owned(),
    };
    file.report(&INVALID_TOLERANCE, range, message).help = Some(format!(
        "write `timestamp_header = \"X-Timestamp\", tolerance_seconds = {DEFAULT_TOLERANCE_SECONDS}`"
    ));
    (header, None)
}

fn trigger_name<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    range: Range<usize>,
    names: &mut BTreeSet<String>,
) -> Option<(String, Range<usize>)> {
    let Some((name, name_range)) = file.str(table, "name") else {
        if table.get("name").is_none() {
            file.missing(range, "name", "a `[[triggers]]` entry");
        }
        return None;
    };
    if !is_slug(name) {
        file.report(
            &INVALID_NAME,
            name_range.clone(),
            format!("trigger name `{name}` is not a kebab-case slug"),
        )
        .help = Some(SLUG_RULE.to_owned());
    }
    if !names.insert(name.to_owned()) {
        file.report(
            &DUPLICATE_NAME,
            name_range.clone(),
            format!("another trigger of this agent is already named `{name}`"),
        );
    }
    Some((name.to_owned(), name_range))
}

fn trigger_source<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    range: Range<usize>,
) -> Option<TriggerSource> {
    let Some((source, source_range)) = file.str(table, "source") else {
        if table.get("source").is_none() {
            file.missing(range, "source", "a `[[triggers]]` entry");
        }
        return None;
    };
    match source {
        "generic" => Some(TriggerSource::Generic),
        "github" => Some(TriggerSource::Github),
        other => {
            file.report(
                &UNKNOWN_SOURCE,
                source_range,
                format!("unknown trigger source `{other}`"),
            )
            .help = Some(format!("use one of: {}", SOURCES.join(", ")));
            None
        }
    }
}

fn trigger_events<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    source: Option<TriggerSource>,
    range: Range<usize>,
) -> Vec<String> {
    let events = file.str_array(table, "events");
    match (source, events) {
        (Some(TriggerSource::Generic), Some(_)) => {
            let at = key_span(table, "events").unwrap_or(range);
            file.report(
                &EVENTS_NOT_ALLOWED,
                at,
                "`events` applies only to `source = \"github\"` triggers",
            );
            Vec::new()
        }
        (Some(TriggerSource::Github), None) if table.get("events").is_none() => {
            file.report(
                &MISSING_EVENTS,
                range,
                "a `github` trigger needs `events`, such as `[\"issues.opened\"]`",
            );
            Vec::new()
        }
        (_, Some(events)) => {
            if events.is_empty()
                && let Some(at) = key_span(table, "events")
            {
                file.report(
                    &MISSING_EVENTS,
                    at,
                    "`events` is empty, so the trigger never fires",
                );
            }
            events
                .into_iter()
                .filter(|(event, event_range)| {
                    let ok = is_event(event);
                    if !ok {
                        file.report(&INVALID_EVENT, event_range.clone(), format!("`{event}` is not of the form `event` or `event.action`"))
                            .help = Some("GitHub event and action names are lowercase with `_`, such as `issue_comment.created`".to_owned());
                    }
                    ok
                })
                .map(|(event, _)| event)
                .collect()
        }
        _ => Vec::new(),
    }
}

/// `event` or `event.action`: lowercase words with `_`.
fn is_event(event: &str) -> bool {
    let word = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    let mut parts = event.split('.');
    let first = parts.next().is_some_and(word);
    let action = parts.next().is_none_or(word);
    first && action && parts.next().is_none()
}

fn trigger_verify<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    source: Option<TriggerSource>,
    range: Range<usize>,
) -> Option<Verify> {
    let Some((verify, verify_range)) = file.table(table, "verify") else {
        if source == Some(TriggerSource::Generic) && table.get("verify").is_none() {
            file.report(&MISSING_VERIFY, range, "a `generic` trigger needs `verify`; without it anyone could fire it")
                .help = Some("add `verify = { kind = \"hmac-sha256\", header = \"X-Signature\", secret = \"secret://…\" }` or `kind = \"token\"`".to_owned());
        }
        return None;
    };
    let Some((kind, kind_range)) = file.str(verify, "kind") else {
        if verify.get("kind").is_none() {
            file.missing(verify_range, "kind", "`verify`");
        }
        return None;
    };
    let parsed = match kind {
        "hmac-sha256" => {
            file.check_keys(verify, HMAC_KEYS, "`verify` (hmac-sha256)");
            let header = required_text(file, verify, "header", verify_range.clone());
            let prefix = file.str(verify, "prefix").map(|(s, _)| s.to_owned());
            let secret = secret_ref(file, verify, verify_range);
            let (timestamp_header, tolerance_seconds) = replay_window(file, verify);
            Some(Verify::HmacSha256 {
                header: header?,
                prefix,
                secret: secret?,
                timestamp_header,
                tolerance_seconds,
            })
        }
        "github" => {
            file.check_keys(verify, GITHUB_KEYS, "`verify` (github)");
            Some(Verify::Github)
        }
        "token" => {
            file.check_keys(verify, TOKEN_KEYS, "`verify` (token)");
            let header = required_text(file, verify, "header", verify_range.clone());
            let secret = secret_ref(file, verify, verify_range);
            Some(Verify::Token {
                header: header?,
                secret: secret?,
            })
        }
        other => {
            file.report(
                &UNKNOWN_VERIFY_KIND,
                kind_range.clone(),
                format!("unknown verify kind `{other}`"),
            )
            .help = Some(format!("use one of: {}", VERIFY_KINDS.join(", ")));
            None
        }
    };
    if source == Some(TriggerSource::Github) && !matches!(parsed, Some(Verify::Github) | None) {
        file.report(
            &VERIFY_MISMATCH,
            kind_range,
            "GitHub triggers are verified with the App's webhook secret",
        )
        .help = Some("remove `verify`, or use `verify = { kind = \"github\" }`".to_owned());
    }
    parsed
}

fn required_text<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    key: &str,
    at: Range<usize>,
) -> Option<String> {
    if table.get(key).is_none() {
        file.missing(at, key, "`verify`");
        return None;
    }
    file.str(table, key).map(|(s, _)| s.to_owned())
}

/// `verify.secret`: a `secret://` reference, never echoed when it is not one.
fn secret_ref<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    at: Range<usize>,
) -> Option<String> {
    if table.get("secret").is_none() {
        file.missing(at, "secret", "`verify`");
        return None;
    }
    let (secret, range) = file.str(table, "secret")?;
    if is_secret_ref(secret) {
        return Some(secret.to_owned());
    }
    file.report(
        &PLAINTEXT_SECRET,
        range,
        "`verify.secret` is not a `secret://` reference (the value is not shown)",
    )
    .help =
        Some("store the secret in the secret store and write `secret = \"secret://…\"`".to_owned());
    None
}

/// A jq field: compiled; an error is reported at its exact position in the TOML string.
fn jq_field<'i>(file: &mut TomlFile<'i>, table: &DeTable<'i>, key: &str) -> Option<String> {
    compiled_jq_field(file, table, key, [&JQ_SYNTAX, &JQ_UNDEFINED])
}

/// A jq field (trigger `filter`/`payload`, workflow stage `payload`): the
/// program text, compiled; a syntax error is reported with `codes[0]`, an
/// undefined name with `codes[1]`, at its exact position in the TOML string.
pub(crate) fn compiled_jq_field<'i>(
    file: &mut TomlFile<'i>,
    table: &DeTable<'i>,
    key: &str,
    codes: [&Code; 2],
) -> Option<String> {
    let item = table.get(key)?;
    let DeValue::String(program) = item.get_ref() else {
        file.str(table, key);
        return None;
    };
    if let Err(error) = JqProgram::compile(program) {
        let literal = &file.index.text()[item.span()];
        let range =
            match decoded_to_source(literal, program, error.offset..error.offset + error.len) {
                Some(inner) => item.span().start + inner.start..item.span().start + inner.end,
                None => item.span(),
            };
        let code = match error.kind {
            JqErrorKind::Syntax => codes[0],
            JqErrorKind::Undefined => codes[1],
        };
        let diagnostic = file.report(code, range, format!("`{key}`: {}", error.message));
        diagnostic.help = error.help;
    }
    Some(program.to_string())
}

/// Maps a byte range of a TOML string's decoded value to a byte range of
/// its source literal (quotes included), undoing the quoting and escapes.
/// `None` when the literal does not decode to `decoded` (then the caller
/// falls back to the whole value).
pub fn decoded_to_source(
    literal: &str,
    decoded: &str,
    range: Range<usize>,
) -> Option<Range<usize>> {
    let map = decode_offsets(literal)?;
    if map.len() != decoded.len() + 1 {
        return None;
    }
    let start = *map.get(range.start.min(decoded.len()))?;
    let end = *map.get(range.end.min(decoded.len()))?;
    Some(start..end.max(start))
}

/// For each byte of the decoded string (and one past the end), the source
/// byte offset in `literal` it came from. Written by hand: the `toml` crate
/// decodes strings but does not expose where each decoded byte came from.
fn decode_offsets(literal: &str) -> Option<Vec<usize>> {
    let (quote, multiline) = if literal.starts_with("'''") {
        ("'''", true)
    } else if literal.starts_with("\"\"\"") {
        ("\"\"\"", true)
    } else if literal.starts_with('\'') {
        ("'", false)
    } else if literal.starts_with('"') {
        ("\"", false)
    } else {
        return None;
    };
    let body_end = literal.len().checked_sub(quote.len())?;
    let mut pos = quote.len();
    if multiline {
        // A newline right after the opening delimiter is trimmed.
        if literal[pos..].starts_with("\r\n") {
            pos += 2;
        } else if literal[pos..].starts_with('\n') {
            pos += 1;
        }
    }
    let basic = quote.starts_with('"');
    let mut map = Vec::with_capacity(body_end);
    while pos < body_end {
        let rest = &literal[pos..body_end];
        let c = rest.chars().next()?;
        if basic && c == '\\' {
            pos = decode_escape(literal, pos, body_end, multiline, &mut map)?;
            continue;
        }
        for _ in 0..c.len_utf8() {
            map.push(pos);
        }
        // Keep every byte of a multi-byte character pointing at its start.
        pos += c.len_utf8();
    }
    map.push(body_end);
    Some(map)
}

/// Decodes one escape at `pos` (a backslash), pushing the source offset for
/// each decoded byte; returns the position after it.
fn decode_escape(
    literal: &str,
    pos: usize,
    end: usize,
    multiline: bool,
    map: &mut Vec<usize>,
) -> Option<usize> {
    let next = literal[pos + 1..end].chars().next()?;
    let decoded_len = match next {
        'b' | 't' | 'n' | 'f' | 'r' | 'e' | '"' | '\\' => Some((1, 2)),
        'x' => hex_char(literal, pos + 2, 2).map(|c| (c.len_utf8(), 4)),
        'u' => hex_char(literal, pos + 2, 4).map(|c| (c.len_utf8(), 6)),
        'U' => hex_char(literal, pos + 2, 8).map(|c| (c.len_utf8(), 10)),
        c if multiline && (c == '\n' || c == '\r' || c == ' ' || c == '\t') => None,
        _ => return None,
    };
    match decoded_len {
        Some((bytes, source_len)) => {
            for _ in 0..bytes {
                map.push(pos);
            }
            Some(pos + source_len)
        }
        None => {
            // Line-ending backslash: skip it and all whitespace after it.
            let rest = &literal[pos + 1..end];
            let skipped = rest.len() - rest.trim_start_matches([' ', '\t', '\r', '\n']).len();
            Some(pos + 1 + skipped)
        }
    }
}

fn hex_char(literal: &str, start: usize, digits: usize) -> Option<char> {
    let hex = literal.get(start..start + digits)?;
    u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_through_quotes_and_escapes() {
        // decoded: .a | "x\ty"  (the \t is one byte)
        let literal = r#"".a | \"x\ty\" | bad""#;
        let decoded = ".a | \"x\ty\" | bad";
        let start = decoded.find("bad").expect("bad");
        let range = decoded_to_source(literal, decoded, start..start + 3).expect("maps");
        assert_eq!(&literal[range], "bad");
    }

    #[test]
    fn offsets_in_multiline_literals() {
        let literal = "'''\n.a |\n  bad'''";
        let decoded = ".a |\n  bad";
        let start = decoded.find("bad").expect("bad");
        let range = decoded_to_source(literal, decoded, start..start + 3).expect("maps");
        assert_eq!(&literal[range], "bad");
    }

    #[test]
    fn offsets_in_multiline_basic_with_line_continuation() {
        let literal = "\"\"\"\n.a | \\\n    bad\"\"\"";
        let decoded = ".a | bad";
        let start = decoded.find("bad").expect("bad");
        let range = decoded_to_source(literal, decoded, start..start + 3).expect("maps");
        assert_eq!(&literal[range], "bad");
    }

    #[test]
    fn events() {
        assert!(is_event("issues"));
        assert!(is_event("issue_comment.created"));
        assert!(!is_event("Issues.opened"));
        assert!(!is_event("a.b.c"));
        assert!(!is_event("issues."));
    }
}
