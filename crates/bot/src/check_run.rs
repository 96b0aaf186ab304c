//! The check run's content, rendered from a sync [`Report`] (docs/reference.md §9).
//!
//! - Title: one line with the plan and diagnostic counts.
//! - Summary: what happened (applied, or checked only and why), the table of
//!   agents with plan status, short digest and drift, the table of workflows
//!   (when the repository has any) with plan status and short hash, the
//!   diagnostic counts,
//!   the workspace manifests' drift from the registered ones (one row per
//!   change, with its severity; subjects only, never values), and the
//!   repository-level diagnostics (which cannot be annotations).
//! - Conclusion ([`conclusion`]): `failure` on an error; a check (never an
//!   apply) with critical drift is `action_required` with the "Accept drift"
//!   requested action, or `neutral` once the drift of every critically
//!   drifted manifest is accepted for this head (the caller reads the
//!   acceptances, [`RenderContext::drift_accepted`]); else by diagnostics.
//! - Text: each changed agent's full drift and each failed agent's errors.
//! - Annotations: one per diagnostic on a file.
//!
//! Only report fields that cannot hold secrets are rendered: names, paths,
//! digests, drift (which names secrets, never their values) and diagnostics.
//!
//! **Repository text is data.** Everything that comes from a repository or
//! a webhook (agent names, file names, refs, diagnostic messages quoting
//! repository content, drift details) goes through one of three escapes, so
//! it can never add a link, an image, HTML, a heading or a table cell:
//! - [`code`]: a code span whose fence outgrows any backtick run inside,
//!   with control characters shown as escapes (one line, always);
//! - [`text`]: every ASCII punctuation character backslash-escaped
//!   (CommonMark allows that for all of them) and line breaks turned into
//!   spaces, which also defeats GFM's autolinks (`www.`, `scheme:`, `@`);
//! - [`message`]: a diagnostic message, whose backtick-quoted parts are
//!   shown as code spans and the rest as text. However the backticks pair
//!   up, each part goes through one of the two escapes above.
//!
//! Inside a table, each also escapes `|` (GFM splits cells on it even in
//! code spans). A suggested shell command quotes each argument the shell
//! would change (`astrolift_sync::commands`, the one module that builds them).
//! Counts are recomputed from the plan and diagnostics, so the output never
//! disagrees with the rows it shows.

use std::fmt::Write as _;

use astrolift_forge::github::{CheckRunAction, CheckRunOutput, Conclusion, MAX_OUTPUT_TEXT};
use astrolift_manifest::diagnostic::{DIAGNOSTICS_URL, doc_url};
use astrolift_manifest::drift::{EnvironmentDrift, EnvironmentStatus};
use astrolift_manifest::{Counts, Diagnostic, Severity};

use astrolift_sync::drift::{DriftItem, DriftSeverity};
use astrolift_sync::plan::{PlanEntry, PlanStatus};
use astrolift_sync::report::{Mode, Report, Uncovered};
use astrolift_sync::workflows::WorkflowPlanEntry;
use astrolift_sync::workspaces::drifted;

use crate::annotations::{annotation_of, conclusion_of};

/// Hex digits of a digest shown in the summary table.
const SHORT_DIGEST: usize = 12;
/// Bytes kept free for the note saying how many table rows were left out.
const TABLE_NOTE_RESERVE: usize = 128;

/// Plan statuses in the order the title lists them.
const STATUS_ORDER: [PlanStatus; 7] = [
    PlanStatus::Added,
    PlanStatus::Changed,
    PlanStatus::Unchanged,
    PlanStatus::Orphaned,
    PlanStatus::Disabled,
    PlanStatus::Failed,
    PlanStatus::Unregistered,
];

/// Why a run only checked and registered nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckOnlyReason {
    /// No project is registered for the repository; `how_to_register` is the
    /// command that registers it (see `astrolift_sync::commands::register_command`).
    NotRegistered { how_to_register: String },
    /// A push to a registered skill source that no registration covers: its dependents
    /// are re-synced (listed after the summary); its own agents, if any, are not registered.
    SkillSource { how_to_register: String },
    /// A push to a ref other than the registered one.
    OtherRef { registered_ref: String },
    /// A pull request from a fork: checked, never applied.
    ForkPullRequest,
    /// A pull request: its head is checked; registration follows the push.
    PullRequest,
    /// A re-requested check: it checks again; registration follows pushes.
    Rerequested,
    /// The job came through another GitHub App installation than the one
    /// the registration records (the repository moved, or a same-named one
    /// replaced it): checked, never applied.
    OtherInstallation {
        /// The installation the registration records.
        registered: u64,
        /// The installation the event came from.
        job: u64,
    },
}

impl CheckOnlyReason {
    /// The reason for a push to a registered skill source: [`CheckOnlyReason::SkillSource`]
    /// in place of "not registered" (whose advice reads as if nothing used the repository);
    /// any other reason as it is.
    pub fn of_skill_source(self) -> Self {
        match self {
            CheckOnlyReason::NotRegistered { how_to_register } => {
                CheckOnlyReason::SkillSource { how_to_register }
            }
            other => other,
        }
    }

    fn explain(&self) -> String {
        match self {
            CheckOnlyReason::NotRegistered { how_to_register } => format!(
                "this repository is not registered. To register it, run {}.",
                code(how_to_register)
            ),
            CheckOnlyReason::SkillSource { how_to_register } => format!(
                "this repository is a registered skill source: the repositories whose agents \
                 use it are re-synced (below). Its own agents, if it has any, are not \
                 registered; to register them, run {}.",
                code(how_to_register)
            ),
            CheckOnlyReason::OtherRef { registered_ref } => {
                format!("only {} is registered.", code(registered_ref))
            }
            CheckOnlyReason::ForkPullRequest => {
                "this is a pull request from a fork; forks are never applied.".to_owned()
            }
            CheckOnlyReason::PullRequest => {
                "this is a pull request; agents register when it is pushed to the registered ref."
                    .to_owned()
            }
            CheckOnlyReason::Rerequested => {
                "this is a re-requested check; agents register when a push reaches the registered ref."
                    .to_owned()
            }
            CheckOnlyReason::OtherInstallation { registered, job } => format!(
                "this event came from GitHub App installation {job}, but the registration \
                 records installation {registered}; an operator who expects the move \
                 re-registers the repository with `--installation-id {job}`."
            ),
        }
    }
}

/// At most this many uncovered manifests are listed with their command.
const UNCOVERED_SHOWN: usize = 20;

/// The manifests no registration covers, each with the command that would cover it.
fn uncovered_manifests(uncovered: &[Uncovered], out: &mut String) {
    if uncovered.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "
**Not registered:** {} covered by no registration of this repository, so checked only. To register one:",
        match uncovered.len() {
            1 => "1 manifest is".to_owned(),
            n => format!("{n} manifests are"),
        }
    );
    for item in uncovered.iter().take(UNCOVERED_SHOWN) {
        let _ = writeln!(
            out,
            "- {}: {}",
            code(&item.manifest),
            code(&item.how_to_register)
        );
    }
    if uncovered.len() > UNCOVERED_SHOWN {
        let _ = writeln!(out, "- … and {} more", uncovered.len() - UNCOVERED_SHOWN);
    }
}

/// What the renderer knows beyond the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderContext {
    /// Why this run only checked, when the caller chose check mode.
    pub check_only: Option<CheckOnlyReason>,
    /// URL paths of the repository's trigger bindings (`/triggers/{id}`),
    /// listed in the summary when present.
    pub trigger_paths: Vec<String>,
    /// Where `docs/diagnostics.md` is published, when not at
    /// [`DIAGNOSTICS_URL`] (the operator's `ASTROLIFT_DOCS_URL`): each code
    /// in the summary, the text and the annotations links to its section.
    pub docs_url: Option<String>,
    /// Acceptances of this head's critical drift (the audit trail's), by manifest: with
    /// every critically drifted manifest accepted, the run is `neutral`, not
    /// `action_required`.
    pub drift_accepted: Vec<AcceptedDrift>,
    /// A request to accept the drift that was refused (the sender may not write).
    pub acceptance_refused: Option<AcceptanceRefusal>,
}

/// One manifest's critical drift accepted at the head being checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedDrift {
    pub manifest_path: String,
    /// The GitHub login of the person who accepted it.
    pub login: String,
}

/// Who asked to accept the drift, and what GitHub says they may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptanceRefusal {
    pub login: String,
    /// Their permission on the repository; `None`: not a collaborator.
    pub permission: Option<String>,
}

impl RenderContext {
    /// The URL of `code`'s explanation.
    fn doc_link(&self, code: &str) -> String {
        doc_url(self.docs_url.as_deref().unwrap_or(DIAGNOSTICS_URL), code)
    }
}

/// The conclusion and output of the check run for `report`, within GitHub's
/// size limits.
pub fn render(report: &Report, context: &RenderContext) -> (Conclusion, CheckRunOutput) {
    let annotations = report
        .diagnostics
        .iter()
        .filter_map(|diagnostic| {
            let mut annotation = annotation_of(diagnostic)?;
            let link = context.doc_link(&diagnostic.code);
            // Annotations are plain text: GitHub shows the URL as a link.
            let _ = write!(annotation.message, "\n\nExplanation: {link}");
            Some(annotation)
        })
        .collect();
    let conclusion = conclusion(report, context);
    let actions = match conclusion {
        Conclusion::ActionRequired => vec![CheckRunAction::accept_drift()],
        _ => Vec::new(),
    };
    let output = CheckRunOutput {
        title: title(report),
        summary: summary(report, context, conclusion),
        text: details(report, context),
        annotations,
        actions,
    };
    // Trims title, summary and text (with `trim_with_note`) and each annotation.
    (conclusion, output.within_limits())
}

/// docs/reference.md §9: `failure` with any error; else, when a check (not an apply) finds
/// critical drift against the registered state, `action_required`, or `neutral` once every
/// critically drifted manifest's drift is accepted for this commit; else `neutral` with
/// warnings or notices, `success` with none.
pub fn conclusion(report: &Report, context: &RenderContext) -> Conclusion {
    let by_diagnostics = conclusion_of(&report.diagnostics);
    let critical = report.critical_drift();
    if by_diagnostics == Conclusion::Failure || report.mode.applies() || critical.is_empty() {
        return by_diagnostics;
    }
    let accepted = |path: &&str| {
        context
            .drift_accepted
            .iter()
            .any(|a| a.manifest_path == *path)
    };
    if critical.iter().all(accepted) {
        Conclusion::Neutral
    } else {
        Conclusion::ActionRequired
    }
}

/// What the run says of critical drift: that it needs accepting, who accepted it, or why
/// a request to accept it was refused. Empty without critical drift.
fn drift_outcome(report: &Report, context: &RenderContext, conclusion: Conclusion) -> String {
    let mut out = String::new();
    if let Some(refused) = &context.acceptance_refused {
        let has = refused.permission.as_deref().map_or_else(
            || "is not a collaborator of the repository".to_owned(),
            |p| format!("has {} permission on the repository", code(p)),
        );
        let _ = write!(
            out,
            "\n\n**Drift not accepted:** @{} asked to accept it, but {has}; accepting drift \
             needs write, maintain or admin permission.",
            text(&refused.login)
        );
    }
    let commit = code(short(&report.commit, SHORT_DIGEST));
    match conclusion {
        Conclusion::ActionRequired => {
            let _ = write!(
                out,
                "\n\n**Action required:** merging commit {commit} causes critical drift of {} \
                 (below). A person with write permission can accept it with **Accept drift**; \
                 a new push needs a new acceptance.",
                plural(report.critical_drift().len(), "manifest")
            );
        }
        Conclusion::Neutral if !report.critical_drift().is_empty() => {
            let mut logins: Vec<String> = context
                .drift_accepted
                .iter()
                .map(|a| format!("@{}", text(&a.login)))
                .collect();
            logins.sort();
            logins.dedup();
            let _ = write!(
                out,
                "\n\n**Drift accepted** by {} for commit {commit} only: the critical drift \
                 below no longer needs action.",
                logins.join(", ")
            );
        }
        _ => {}
    }
    out
}

/// `2 added, 1 changed · 0 errors, 3 warnings`.
fn title(report: &Report) -> String {
    let plan: Vec<String> = STATUS_ORDER
        .iter()
        .filter_map(|&status| {
            let count = status_count(report, status);
            (count > 0).then(|| format!("{count} {}", status.as_str()))
        })
        .collect();
    let plan = if plan.is_empty() {
        "no agents".to_owned()
    } else {
        plan.join(", ")
    };
    format!(
        "{plan} · {}",
        diagnostic_counts(&Counts::of(&report.diagnostics))
    )
}

fn status_count(report: &Report, status: PlanStatus) -> usize {
    report.plan.iter().filter(|e| e.status == status).count()
}

/// `0 errors, 3 warnings`, with notices only when there are some.
fn diagnostic_counts(counts: &Counts) -> String {
    let mut parts = vec![
        plural(counts.errors, "error"),
        plural(counts.warnings, "warning"),
    ];
    if counts.notices > 0 {
        parts.push(plural(counts.notices, "notice"));
    }
    parts.join(", ")
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// The table gets what the other parts leave of GitHub's limit, in whole
/// rows, so a repository with thousands of agents still shows its counts.
fn summary(report: &Report, context: &RenderContext, conclusion: Conclusion) -> String {
    let counts = Counts::of(&report.diagnostics);
    let mut tail = String::new();
    workflow_table(&report.workflows, &mut tail);
    workspace_table(&report.workspaces, &mut tail);
    let _ = write!(tail, "\n**Diagnostics:** {}\n", diagnostic_counts(&counts));
    repository_diagnostics(&report.diagnostics, context, &mut tail);
    uncovered_manifests(&report.uncovered, &mut tail);
    trigger_paths(&context.trigger_paths, &mut tail);
    let mut out = outcome(report, context);
    out.push_str(&drift_outcome(report, context, conclusion));
    out.push_str("\n\n");
    let budget = MAX_OUTPUT_TEXT.saturating_sub(out.len() + tail.len() + TABLE_NOTE_RESERVE);
    agent_table(&report.plan, budget, &mut out);
    out.push_str(&tail);
    out
}

/// The opening line: applied where, or checked only and why; and a skip.
fn outcome(report: &Report, context: &RenderContext) -> String {
    let commit = code(short(&report.commit, SHORT_DIGEST));
    let repository = code(&report.repository);
    let on_ref = report
        .git_ref
        .as_deref()
        .map(|r| format!(" on {}", code(r)))
        .unwrap_or_default();
    let mut line = match (&report.mode, &context.check_only) {
        (Mode::Apply { registrations }, _) if report.applied => {
            let mut projects: Vec<String> =
                registrations.iter().map(|r| code(&r.project_id)).collect();
            projects.sort();
            projects.dedup();
            let noun = if projects.len() == 1 {
                "project"
            } else {
                "projects"
            };
            format!(
                "**Applied** commit {commit} of {repository}{on_ref} to {noun} {}.",
                projects.join(", ")
            )
        }
        (Mode::Apply { .. }, _) => {
            format!("**Not applied:** commit {commit} of {repository}{on_ref} was checked.")
        }
        (Mode::Check, Some(reason)) => format!(
            "**Checked only** commit {commit} of {repository}{on_ref}: {}",
            reason.explain()
        ),
        (Mode::Check, None) => {
            format!("**Checked only** commit {commit} of {repository}{on_ref}.")
        }
    };
    if let Some(skipped) = &report.skipped {
        let _ = write!(line, "\n\n**Skipped:** {}", message(skipped));
    }
    line
}

/// The table of agents in at most `budget` bytes (whole rows), then a note
/// counting the rows left out.
fn agent_table(plan: &[PlanEntry], budget: usize, out: &mut String) {
    if plan.is_empty() {
        out.push_str("No agents were found.\n");
        return;
    }
    let mut table =
        String::from("| Agent | Manifest | Plan | Digest | Drift |\n|---|---|---|---|---|\n");
    for (shown, entry) in plan.iter().enumerate() {
        let row = table_row(entry);
        if table.len() + row.len() > budget {
            let _ = writeln!(
                table,
                "\n… {} more agents not shown (GitHub limits the summary to {MAX_OUTPUT_TEXT} bytes).",
                plan.len() - shown
            );
            break;
        }
        table.push_str(&row);
    }
    out.push_str(&table);
}

fn table_row(entry: &PlanEntry) -> String {
    let digest = entry
        .digest
        .as_deref()
        .map(|d| cell(&code(short(d, SHORT_DIGEST))))
        .unwrap_or_else(|| "—".to_owned());
    format!(
        "| {} | {} | {} | {} | {} |\n",
        text(&entry.agent),
        cell(&code(&entry.manifest)),
        entry.status.as_str(),
        digest,
        drift_kinds(&entry.drift),
    )
}

/// Bytes the workflow table may take of the summary.
const WORKFLOW_TABLE_BUDGET: usize = 16 * 1024;

/// The workflows' plan, when the repository has any: a table in at most
/// [`WORKFLOW_TABLE_BUDGET`] bytes (whole rows), then a note counting the rest.
fn workflow_table(workflows: &[WorkflowPlanEntry], out: &mut String) {
    if workflows.is_empty() {
        return;
    }
    let rows = workflows.iter().map(|entry| {
        let hash = entry
            .content_hash
            .as_deref()
            .map(|h| cell(&code(short(h, SHORT_DIGEST))))
            .unwrap_or_else(|| "—".to_owned());
        format!(
            "| {} | {} | {} | {} | {} |\n",
            text(&entry.name),
            cell(&code(&entry.path)),
            entry.status.as_str(),
            entry.stages,
            hash,
        )
    });
    let header = "\n| Workflow | File | Plan | Stages | Hash |\n|---|---|---|---|---|\n";
    bounded_table(header, rows, "workflows", out);
}

/// The workspace manifests that drift from the registered ones: one row per change, with
/// its severity (subjects only: an environment variable's or credential's value never
/// shows), in at most [`WORKFLOW_TABLE_BUDGET`] bytes; a line when none drifts.
fn workspace_table(workspaces: &[EnvironmentDrift], out: &mut String) {
    if workspaces.is_empty() {
        return;
    }
    let mut rows = Vec::new();
    for workspace in drifted(workspaces) {
        let manifest = workspace
            .new_path
            .as_deref()
            .or(workspace.old_path.as_deref());
        let lead = format!(
            "| {} | {} | ",
            cell(&code(&workspace.id)),
            cell(&code(manifest.unwrap_or_default()))
        );
        if workspace.drifts.is_empty() {
            let status = match workspace.status {
                EnvironmentStatus::Added => "added",
                _ => "removed",
            };
            rows.push(format!("{lead}{status} | — | — |\n"));
        }
        for drift in &workspace.drifts {
            let severity = match drift.severity {
                DriftSeverity::Critical => "**critical**",
                DriftSeverity::Warning => "warning",
            };
            let subject = cell(&code(&drift.subject));
            rows.push(format!("{lead}{} | {severity} | {subject} |\n", drift.kind));
        }
    }
    if rows.is_empty() {
        let _ = writeln!(
            out,
            "\n**Workspace manifests:** {}, no drift from the registered ones.",
            plural(workspaces.len(), "manifest")
        );
        return;
    }
    let header = "\n### Workspace drift\n\n| Workspace | Manifest | Change | Severity | Subject |\n|---|---|---|---|---|\n";
    bounded_table(header, rows.into_iter(), "workspace changes", out);
}

/// `header` and as many whole `rows` as fit [`WORKFLOW_TABLE_BUDGET`] bytes, then a note
/// counting the `noun` left out.
fn bounded_table(
    header: &str,
    rows: impl ExactSizeIterator<Item = String>,
    noun: &str,
    out: &mut String,
) {
    let total = rows.len();
    let mut table = String::from(header);
    for (shown, row) in rows.enumerate() {
        if table.len() + row.len() > WORKFLOW_TABLE_BUDGET {
            let _ = writeln!(table, "\n… {} more {noun} not shown.", total - shown);
            break;
        }
        table.push_str(&row);
    }
    out.push_str(&table);
}

/// `skill-version-changed, **credential-removed** (critical)`, or `—`; a
/// table cell. Kinds are our own fixed words, never repository text.
fn drift_kinds(drift: &[DriftItem]) -> String {
    if drift.is_empty() {
        return "—".to_owned();
    }
    let kinds: Vec<String> = drift
        .iter()
        .map(|item| match item.severity {
            DriftSeverity::Critical => format!("**{}** (critical)", item.kind),
            DriftSeverity::Warning => item.kind.clone(),
        })
        .collect();
    kinds.join(", ")
}

/// Diagnostics with an empty path: about the repository, never annotations.
fn repository_diagnostics(diagnostics: &[Diagnostic], context: &RenderContext, out: &mut String) {
    let repository: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.path.is_empty()).collect();
    if repository.is_empty() {
        return;
    }
    out.push_str("\n### Repository\n\n");
    for diagnostic in repository {
        diagnostic_item(diagnostic, context, out);
    }
}

fn trigger_paths(paths: &[String], out: &mut String) {
    if paths.is_empty() {
        return;
    }
    out.push_str("\n### Trigger URLs\n\n");
    for path in paths {
        let _ = writeln!(out, "- {}", code(path));
    }
}

/// `- **error** [`code`](link): message (help: …)`.
fn diagnostic_item(diagnostic: &Diagnostic, context: &RenderContext, out: &mut String) {
    let severity = match diagnostic.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Notice => "notice",
    };
    let _ = write!(
        out,
        "- **{severity}** [{}]({}): {}",
        code(&diagnostic.code),
        context.doc_link(&diagnostic.code),
        message(&diagnostic.message)
    );
    if !diagnostic.path.is_empty() {
        let _ = write!(
            out,
            " ({}:{})",
            code(&diagnostic.path),
            diagnostic.span.line.max(1)
        );
    }
    if let Some(help) = &diagnostic.help {
        let _ = write!(out, " — help: {}", message(help));
    }
    out.push('\n');
}

/// Each changed agent's drift and each failed agent's errors; `None` when
/// there is nothing to detail.
fn details(report: &Report, context: &RenderContext) -> Option<String> {
    let mut out = String::new();
    for entry in &report.plan {
        match entry.status {
            PlanStatus::Changed if !entry.drift.is_empty() => drift_details(entry, &mut out),
            PlanStatus::Failed => failure_details(entry, &report.diagnostics, context, &mut out),
            _ => {}
        }
    }
    let out = out.trim_end();
    (!out.is_empty()).then(|| format!("{out}\n"))
}

fn drift_details(entry: &PlanEntry, out: &mut String) {
    let _ = write!(
        out,
        "### {} changed\n\n| Kind | Severity | Detail |\n|---|---|---|\n",
        code(&entry.agent)
    );
    for item in &entry.drift {
        let severity = match item.severity {
            DriftSeverity::Critical => "**critical**",
            DriftSeverity::Warning => "warning",
        };
        let _ = writeln!(
            out,
            "| {} | {severity} | {} |",
            cell(&code(&item.kind)),
            cell_message(&item.detail)
        );
    }
    out.push('\n');
}

fn failure_details(
    entry: &PlanEntry,
    diagnostics: &[Diagnostic],
    context: &RenderContext,
    out: &mut String,
) {
    let _ = write!(
        out,
        "### {} failed\n\nNot registered; any previous registration is kept.\n\n",
        code(&entry.agent)
    );
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error && belongs_to(d, entry));
    for diagnostic in errors {
        diagnostic_item(diagnostic, context, out);
    }
    out.push('\n');
}

/// A diagnostic on the agent's manifest, or on a file in its directory
/// (a root manifest owns only itself, not the whole repository).
fn belongs_to(diagnostic: &Diagnostic, entry: &PlanEntry) -> bool {
    if diagnostic.path == entry.manifest {
        return true;
    }
    match entry.manifest.rsplit_once('/') {
        Some((dir, _)) => diagnostic
            .path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/')),
        None => false,
    }
}

/// The first `len` hex digits of a digest or commit, without `sha256:`.
fn short(digest: &str, len: usize) -> &str {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    hex.char_indices()
        .nth(len)
        .map_or(hex, |(index, _)| &hex[..index])
}

/// `raw` as a Markdown code span on one line: the fence is one backtick
/// longer than the longest run of backticks inside (CommonMark's rule, done
/// by hand because it is four lines), and control characters (line breaks
/// above all) are shown as escapes such as `\n`, so the span cannot end a
/// paragraph or a table row. Outside a table only: see [`cell`].
fn code(raw: &str) -> String {
    let raw = visible_controls(raw);
    let longest = raw.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if longest > 0 { " " } else { "" };
    format!("{fence}{pad}{raw}{pad}{fence}")
}

/// Control characters as Rust-style escapes (`\n`, `\u{1b}`); the rest as is.
fn visible_controls(raw: &str) -> String {
    if !raw.chars().any(char::is_control) {
        return raw.to_owned();
    }
    raw.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A code span from [`code`] made fit for a table cell: `|` escaped (GFM
/// splits cells on it even inside code spans, and shows `\|` there as `|`).
fn cell(code_span: &str) -> String {
    code_span.replace('|', "\\|")
}

/// The run of a job `serve`'s queue gave up on (docs/reference.md §9, "A job that gave
/// up"): `failure`, the last error and the attempts, and a **Re-run** button whose
/// identifier is the job's id ([`crate::dead_letter`] queues it again on a click).
pub fn dead_letter(job_id: &str, attempts: u32, reason: &str) -> (Conclusion, CheckRunOutput) {
    let attempts = usize::try_from(attempts).unwrap_or(usize::MAX);
    let output = CheckRunOutput {
        title: format!("Astrolift gave up after {}", plural(attempts, "attempt")),
        summary: format!(
            "Astrolift could not finish the sync of this commit and stopped trying: {}.\n\n\
             Fix the cause, then click **Re-run** to queue it again (or run {} on the \
             server).",
            text(reason),
            code(&format!("astrolift jobs retry {job_id}")),
        ),
        text: None,
        annotations: Vec::new(),
        actions: vec![CheckRunAction {
            label: "Re-run".to_owned(),
            description: "Queue this failed sync again".to_owned(),
            identifier: job_id.to_owned(),
        }],
    };
    (Conclusion::Failure, output)
}

/// Repository text as plain Markdown text: every ASCII punctuation
/// character backslash-escaped (so no emphasis, link, image, HTML, entity,
/// heading, list, table cell or autolink can start), control characters and
/// line breaks turned into spaces. Safe in a table cell as it is.
fn text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() + raw.len() / 4);
    for c in raw.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
            out.push(c);
        } else if c.is_control() {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// A diagnostic message (or help, or skip reason): its backtick-quoted parts
/// as code spans, the rest as [`text`]. The parts alternate at every
/// backtick, so a backtick inside quoted repository text only shifts which
/// parts are code; every part is escaped either way.
pub(crate) fn message(raw: &str) -> String {
    message_with(raw, code)
}

/// [`message`] for a table cell.
fn cell_message(raw: &str) -> String {
    message_with(raw, |part| cell(&code(part)))
}

fn message_with(raw: &str, code_span: impl Fn(&str) -> String) -> String {
    let parts: Vec<&str> = raw.split('`').collect();
    // An unpaired last backtick: the tail is text, with its backtick shown.
    let paired = parts.len() % 2 == 1;
    let mut out = String::with_capacity(raw.len() + 16);
    for (index, part) in parts.iter().enumerate() {
        let last = index + 1 == parts.len();
        if index % 2 == 1 && (paired || !last) {
            out.push_str(&code_span(part));
        } else if index % 2 == 1 {
            out.push_str(&text("`"));
            out.push_str(&text(part));
        } else {
            out.push_str(&text(part));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use astrolift_manifest::{Code, Span};
    use astrolift_sync::commands::register_command;
    use astrolift_sync::report::ReportCounts;
    use astrolift_sync::workflows::WorkflowPlanStatus;

    const ERROR: Code = Code::new(
        "manifest/invalid-value",
        Severity::Error,
        "an invalid value",
    );
    const WARNING: Code = Code::new("manifest/unknown-key", Severity::Warning, "an unknown key");
    const REPO_ERROR: Code = Code::new("config/duplicate-agent", Severity::Error, "a duplicate");

    fn report(mode: Mode, plan: Vec<PlanEntry>, diagnostics: Vec<Diagnostic>) -> Report {
        let applied = matches!(mode, Mode::Apply { .. });
        Report {
            repository: "octo/agents".to_owned(),
            commit: "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c".to_owned(),
            git_ref: Some("main".to_owned()),
            mode,
            applied,
            skipped: None,
            plan,
            uncovered: Vec::new(),
            workflows: Vec::new(),
            workspaces: Vec::new(),
            configs: Vec::new(),
            diagnostics,
            counts: ReportCounts::default(),
            skill_sources: Default::default(),
            layer_needs: Vec::new(),
            previews: None,
            trigger_changes: Vec::new(),
            relocked: None,
        }
    }

    fn entry(agent: &str, status: PlanStatus, drift: Vec<DriftItem>) -> PlanEntry {
        let packaged = status != PlanStatus::Failed;
        PlanEntry {
            agent: agent.to_owned(),
            manifest: format!("agents/{agent}/astrolift.toml"),
            status,
            digest: packaged.then(|| format!("sha256:{}", "ab12cd34ef56".repeat(5))),
            snapshot: packaged.then(|| "5a".repeat(32)),
            previous_snapshot: None,
            alias: None,
            drift,
        }
    }

    fn apply() -> Mode {
        Mode::apply_all("proj-1")
    }

    fn line(line: u32, column: u32, end_column: u32) -> Span {
        Span {
            line,
            column,
            end_line: line,
            end_column,
        }
    }

    /// Everything a reviewer reads, in one snapshot.
    fn rendered(report: &Report, context: &RenderContext) -> String {
        let (conclusion, output) = render(report, context);
        let annotations: Vec<String> = output
            .annotations
            .iter()
            .map(|a| serde_json::to_string(a).unwrap_or_default())
            .collect();
        format!(
            "conclusion: {conclusion:?}\ntitle: {}\n\n--- summary ---\n{}\n--- text ---\n{}\n--- annotations ---\n{}\n",
            output.title,
            output.summary,
            output.text.as_deref().unwrap_or("(none)"),
            annotations.join("\n"),
        )
    }

    #[test]
    fn clean_first_registration() {
        let plan = vec![
            entry("reviewer", PlanStatus::Added, vec![]),
            entry("triager", PlanStatus::Added, vec![]),
        ];
        let report = report(apply(), plan, vec![]);
        let context = RenderContext::default();
        assert_eq!(render(&report, &context).0, Conclusion::Success);
        insta::assert_snapshot!(rendered(&report, &context));
    }

    #[test]
    fn check_only_for_an_unregistered_repository() {
        let plan = vec![entry("reviewer", PlanStatus::Added, vec![])];
        let warning = Diagnostic::new(
            &WARNING,
            "agents/reviewer/astrolift.toml",
            line(4, 1, 8),
            "unknown key `colour`",
        )
        .with_help("did you mean `color`?");
        let report = report(Mode::Check, plan, vec![warning]);
        let context = RenderContext {
            check_only: Some(CheckOnlyReason::NotRegistered {
                how_to_register: register_command("octo/agents", "main"),
            }),
            trigger_paths: Vec::new(),
            ..RenderContext::default()
        };
        let (conclusion, output) = render(&report, &context);
        assert_eq!(conclusion, Conclusion::Neutral);
        assert!(
            output
                .summary
                .contains("astrolift register-repo octo/agents --project-id ID --ref main")
        );
        insta::assert_snapshot!(rendered(&report, &context));
    }

    #[test]
    fn changed_agent_with_drift_and_a_failed_agent() {
        let drift = vec![
            DriftItem {
                kind: "skill-version-changed".to_owned(),
                severity: DriftSeverity::Warning,
                detail: "skill `lint` 1.2.0 → 1.3.0".to_owned(),
            },
            DriftItem {
                kind: "credential-removed".to_owned(),
                severity: DriftSeverity::Critical,
                detail: "required secret `JIRA_TOKEN` removed".to_owned(),
            },
        ];
        let mut changed = entry("reviewer", PlanStatus::Changed, drift);
        changed.previous_snapshot = Some("4b".repeat(32));
        let plan = vec![
            changed,
            entry("triager", PlanStatus::Failed, vec![]),
            entry("old-bot", PlanStatus::Orphaned, vec![]),
        ];
        let diagnostics = vec![
            Diagnostic::new(
                &ERROR,
                "agents/triager/astrolift.toml",
                line(7, 11, 15),
                "`timeout` must be at most 900 seconds",
            ),
            Diagnostic::new(
                &ERROR,
                "agents/triager/brief.md",
                Span::FILE,
                "the brief is empty",
            ),
            Diagnostic::new(
                &REPO_ERROR,
                "",
                Span::FILE,
                "two agents are named `triager`",
            ),
        ];
        let report = report(apply(), plan, diagnostics);
        let (conclusion, output) = render(&report, &RenderContext::default());
        assert_eq!(conclusion, Conclusion::Failure);
        // The repository-level diagnostic is in the summary, not annotated.
        assert_eq!(output.annotations.len(), 2);
        assert!(output.summary.contains("two agents are named"));
        insta::assert_snapshot!(rendered(&report, &RenderContext::default()));
    }

    #[test]
    fn every_code_links_to_its_explanation() {
        let finding = Diagnostic::new(&ERROR, "agents/a/astrolift.toml", line(2, 1, 4), "bad");
        let repository = Diagnostic::new(&REPO_ERROR, "", Span::FILE, "twice");
        let plan = vec![entry("a", PlanStatus::Failed, vec![])];
        let report = report(apply(), plan, vec![finding, repository]);
        let (_, output) = render(&report, &RenderContext::default());
        let default = format!("{DIAGNOSTICS_URL}#configduplicate-agent");
        let link = format!("[`config/duplicate-agent`]({default})");
        assert!(output.summary.contains(&link), "{}", output.summary);
        let configured = RenderContext {
            docs_url: Some("https://docs.example/diagnostics.md".to_owned()),
            ..RenderContext::default()
        };
        let (_, output) = render(&report, &configured);
        let annotation = &output.annotations[0].message;
        let expected = doc_url("https://docs.example/diagnostics.md", ERROR.id);
        assert!(
            annotation.ends_with(&format!("Explanation: {expected}")),
            "{annotation}"
        );
        let text = output.text.unwrap_or_default();
        assert!(text.contains(&format!("]({expected})")), "{text}");
    }

    #[test]
    fn every_diagnostic_is_an_annotation() {
        let diagnostics: Vec<Diagnostic> = (1..=120)
            .map(|n| {
                let code = if n % 3 == 0 { &ERROR } else { &WARNING };
                Diagnostic::new(
                    code,
                    "agents/big/astrolift.toml",
                    line(n, 1, 4),
                    format!("finding {n}"),
                )
            })
            .collect();
        let plan = vec![entry("big", PlanStatus::Failed, vec![])];
        let report = report(apply(), plan, diagnostics);
        let (conclusion, output) = render(&report, &RenderContext::default());
        assert_eq!(conclusion, Conclusion::Failure);
        assert_eq!(output.annotations.len(), 120);
        let lines: Vec<u32> = output.annotations.iter().map(|a| a.start_line).collect();
        assert_eq!(lines, (1..=120).collect::<Vec<u32>>());
        insta::assert_snapshot!(format!("{}\n\n{}", output.title, output.summary));
    }

    #[test]
    fn a_huge_table_keeps_whole_rows_and_the_counts() {
        let plan: Vec<PlanEntry> = (0..2_000)
            .map(|n| entry(&format!("agent-{n:04}"), PlanStatus::Unchanged, vec![]))
            .collect();
        let report = report(apply(), plan, vec![]);
        let (conclusion, output) = render(&report, &RenderContext::default());
        assert_eq!(conclusion, Conclusion::Success);
        assert!(output.summary.len() <= MAX_OUTPUT_TEXT);
        assert!(output.summary.len() > MAX_OUTPUT_TEXT - 500);
        let tail = output
            .summary
            .rsplit("| unchanged |")
            .next()
            .unwrap_or_default();
        insta::assert_snapshot!(format!("{}\n\n…{tail}", output.title));
    }

    #[test]
    fn a_huge_summary_is_trimmed_with_a_note() {
        let message = "x".repeat(1_000);
        let diagnostics = (0..100)
            .map(|_| Diagnostic::new(&REPO_ERROR, "", Span::FILE, message.clone()))
            .collect();
        let report = report(Mode::Check, vec![], diagnostics);
        let (conclusion, output) = render(&report, &RenderContext::default());
        assert_eq!(conclusion, Conclusion::Failure);
        assert!(output.summary.len() <= MAX_OUTPUT_TEXT);
        assert!(output.annotations.is_empty());
        let tail_start = output.summary.len() - 80;
        let tail = output.summary.get(tail_start..).unwrap_or_default();
        insta::assert_snapshot!(format!("{}\n\n…{tail}", output.title));
    }

    #[test]
    fn markdown_helpers_keep_tables_intact() {
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(code("a\nb"), "`a\\nb`");
        assert_eq!(cell(&code("a|b")), "`a\\|b`");
        assert_eq!(text("a|b\nc"), "a\\|b c");
        assert_eq!(text("[x](y)"), "\\[x\\]\\(y\\)");
        assert_eq!(message("key `a|b` here"), "key `a|b` here");
        assert_eq!(cell_message("key `a|b`"), "key `a\\|b`");
        assert_eq!(message("odd ` tail"), "odd \\` tail");
        assert_eq!(message("x `a`b` y"), "x `a`b\\` y");
        assert_eq!(short("sha256:0123456789abcdef", 12), "0123456789ab");
        assert_eq!(short("abc", 12), "abc");
    }

    #[test]
    fn other_check_only_reasons_and_skips_are_explained() {
        let mut skipped = report(apply(), vec![], vec![]);
        skipped.applied = false;
        skipped.skipped = Some("commit `abc` is older than the registered one".to_owned());
        let (_, output) = render(&skipped, &RenderContext::default());
        assert!(output.summary.contains("**Not applied:**"));
        assert!(output.summary.contains("**Skipped:** commit `abc`"));
        assert!(output.summary.contains("No agents were found."));
        let check = report(Mode::Check, vec![], vec![]);
        let reasons = [
            (CheckOnlyReason::ForkPullRequest, "from a fork"),
            (CheckOnlyReason::PullRequest, "a pull request"),
            (
                CheckOnlyReason::OtherRef {
                    registered_ref: "release".to_owned(),
                },
                "only `release` is registered",
            ),
        ];
        for (reason, expected) in reasons {
            let context = RenderContext {
                check_only: Some(reason),
                trigger_paths: vec!["/triggers/t1".to_owned()],
                ..RenderContext::default()
            };
            let (_, output) = render(&check, &context);
            assert!(output.summary.contains(expected), "{}", output.summary);
            assert!(output.summary.contains("- `/triggers/t1`"));
        }
    }

    /// `markdown` without its code spans (whose content is literal), for
    /// checks of what remains.
    fn outside_code_spans(markdown: &str) -> String {
        let bytes = markdown.as_bytes();
        let mut out = String::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'`' && (i == 0 || bytes[i - 1] != b'\\') {
                let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
                let fence = "`".repeat(run);
                let rest = &markdown[i + run..];
                // The closing fence: a run of exactly `run` backticks.
                let close = (0..rest.len()).find(|&j| {
                    rest[j..].starts_with(&fence)
                        && !rest[j + run..].starts_with('`')
                        && (j == 0 || !rest[..j].ends_with('`'))
                });
                if let Some(j) = close {
                    i += run + j + run;
                    continue;
                }
            }
            out.push(char::from(bytes[i]));
            i += 1;
        }
        out
    }

    /// `pattern` in `text` with no backslash before it.
    fn unescaped(text: &str, pattern: &str) -> bool {
        text.match_indices(pattern)
            .any(|(i, _)| i == 0 || !text[..i].ends_with('\\'))
    }

    /// `|` not preceded by a backslash: GFM's cell separators.
    fn separators(line: &str) -> usize {
        let bytes = line.as_bytes();
        (0..bytes.len())
            .filter(|&i| bytes[i] == b'|' && (i == 0 || bytes[i - 1] != b'\\'))
            .count()
    }

    #[test]
    fn repository_text_is_escaped_and_suggested_commands_quoted() {
        let git_ref = "feat/it's a \"ref\" `x` $(id)";
        let mut evil = entry("placeholder", PlanStatus::Failed, vec![]);
        evil.agent = "evil|name](http://x.test) <img src=x> **bold**".to_owned();
        evil.manifest = "agents/[click](http://evil.test)|`x`\n# H/astrolift.toml".to_owned();
        let mut changed = entry("reviewer", PlanStatus::Changed, vec![]);
        changed.agent = "re`view`er\n| injected | row |".to_owned();
        changed.drift = vec![DriftItem {
            kind: "env-var-added".to_owned(),
            severity: DriftSeverity::Warning,
            detail: "variable `A|B` added\n| fake | row |".to_owned(),
        }];
        let diagnostics = vec![
            Diagnostic::new(
                &ERROR,
                evil.manifest.clone(),
                line(2, 1, 4),
                "unknown key `colour|x`\n\n# Heading <script>alert(1)</script>",
            )
            .with_help("see [docs](javascript:alert(1)) or www.evil.test"),
            Diagnostic::new(
                &REPO_ERROR,
                "",
                Span::FILE,
                "two agents are named `a` `b`c` ![img](http://evil.test/p.png)",
            ),
        ];
        let mut report = report(Mode::Check, vec![evil, changed], diagnostics);
        report.git_ref = Some(git_ref.to_owned());
        let command = register_command("octo/agents", git_ref);
        assert_eq!(
            command,
            r#"astrolift register-repo octo/agents --project-id ID --ref 'feat/it'\''s a "ref" `x` $(id)'"#
        );
        let context = RenderContext {
            check_only: Some(CheckOnlyReason::NotRegistered {
                how_to_register: command.clone(),
            }),
            trigger_paths: Vec::new(),
            ..RenderContext::default()
        };
        let (_, output) = render(&report, &context);
        let text = output.text.clone().unwrap_or_default();
        // Five columns in the summary's table, three in the drift table.
        // Our own links to the explanations are the only links allowed.
        let without_doc_links = |markdown: &str| {
            report
                .diagnostics
                .iter()
                .fold(markdown.to_owned(), |acc, d| {
                    let link = format!("[{}]({})", code(&d.code), context.doc_link(&d.code));
                    acc.replace(&link, &code(&d.code))
                })
        };
        for (part, cells) in [(&output.summary, 6), (&text, 4)] {
            let prose = outside_code_spans(&without_doc_links(part));
            for raw in ["<", "](", "![", "[", "\n# ", "**bold", "www.", "http:"] {
                assert!(!unescaped(&prose, raw), "raw `{raw}` in:\n{prose}");
            }
            for row in part.lines().filter(|l| l.starts_with('|')) {
                assert_eq!(
                    separators(row),
                    cells,
                    "a row split into other cells: {row}"
                );
            }
        }
        assert!(
            output.summary.contains(&format!("`` {command} ``")),
            "{}",
            output.summary
        );
        insta::assert_snapshot!(rendered(&report, &context));
    }

    fn removed_required_credential() -> astrolift_manifest::drift::EnvironmentDrift {
        use astrolift_manifest::drift::{Drift, DriftKind, DriftSeverity as Severity};
        astrolift_manifest::drift::EnvironmentDrift {
            id: "workspace/triage".to_owned(),
            old_path: Some("workspaces/triage.yaml".to_owned()),
            new_path: Some("workspaces/triage.yaml".to_owned()),
            status: EnvironmentStatus::Changed,
            drifts: vec![Drift {
                kind: DriftKind::CredentialRemoved,
                severity: Severity::Critical,
                subject: "JIRA_TOKEN".to_owned(),
                old: Some("{\"kind\":\"generic-secret\",\"source_ref\":\"p/s\"}".to_owned()),
                new: None,
            }],
        }
    }

    #[test]
    fn critical_drift_needs_action_in_a_check_until_accepted_and_never_in_an_apply() {
        let mut check = report(Mode::Check, vec![], vec![]);
        check.workspaces = vec![removed_required_credential()];
        let (conclusion, output) = render(&check, &RenderContext::default());
        assert_eq!(conclusion, Conclusion::ActionRequired);
        assert_eq!(output.actions, [CheckRunAction::accept_drift()]);
        assert!(
            output.summary.contains("| `JIRA_TOKEN` |"),
            "{}",
            output.summary
        );
        assert!(!output.summary.contains("p/s"), "values never show");

        let accepted = RenderContext {
            drift_accepted: vec![AcceptedDrift {
                manifest_path: "workspaces/triage.yaml".to_owned(),
                login: "mona".to_owned(),
            }],
            ..RenderContext::default()
        };
        let (conclusion, output) = render(&check, &accepted);
        assert_eq!(conclusion, Conclusion::Neutral);
        assert!(output.actions.is_empty());
        assert!(output.summary.contains("**Drift accepted** by @mona"));

        let mut applied = report(apply(), vec![], vec![]);
        applied.workspaces = check.workspaces.clone();
        assert_eq!(conclusion_of(&applied), Conclusion::Success);
    }

    fn conclusion_of(report: &Report) -> Conclusion {
        conclusion(report, &RenderContext::default())
    }

    /// Moved with the renderer from crates/sync's workflow scenario: a
    /// workflow added by a sync is a row of the summary's workflow table.
    #[test]
    fn an_added_workflow_is_a_row_of_the_summary() {
        let mut added = report(apply(), Vec::new(), Vec::new());
        added.workflows = vec![WorkflowPlanEntry {
            name: "triage".to_owned(),
            path: "workflows/triage.toml".to_owned(),
            status: WorkflowPlanStatus::Added,
            content_hash: Some(format!("sha256:{}", "7e".repeat(32))),
            previous_hash: None,
            stages: 2,
        }];
        let (_, output) = render(&added, &RenderContext::default());
        assert!(
            output
                .summary
                .contains("| Workflow | File | Plan | Stages | Hash |"),
            "{}",
            output.summary
        );
        assert!(
            output
                .summary
                .contains("| triage | `workflows/triage.toml` | added | 2 |")
        );
    }
}
