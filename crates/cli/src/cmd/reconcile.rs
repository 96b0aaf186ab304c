//! `astrolift reconcile [--format json]` (docs/reference.md §3 and §4, "astrolift
//! reconcile"): one pass of `astrolift_bot::reconcile` on the configured stores, as the
//! GitHub App (`GITHUB_APP_ID` and its private key, like `serve`). The jobs it finds are
//! queued where `serve` runs them: recorded `queued` on the state store's durable queue, so a
//! running `serve` on that store takes them within seconds, and a stopped one at its start.
//! Nothing is synced in this process. On the state-store engine the workflow stages past their
//! deadlines end here, and the due retries are dispatched through the dispatch queue
//! `astrolift dispatch` uses.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use astrolift_bot::config::Environment;
use astrolift_bot::durable::RecordedJobQueue;
use astrolift_bot::layers::LayerPackager;
use astrolift_bot::reconcile::{
    DEFAULT_CONCURRENCY, ReconcileOptions, ReconcileProgress, ReconcileReport, RefOutcome,
    RefStatus, reconcile,
};
use astrolift_cli::render::plural;
use astrolift_dispatch::engine::WorkflowEngine;

use super::registry::ListFormat;
use super::stores::{StoreArgs, runtime};
use crate::output::outln;
use crate::progress::Progress;

/// The most requests `--concurrency` allows in flight (its default is the bot's,
/// [`DEFAULT_CONCURRENCY`]).
pub const MAX_CONCURRENCY: u64 = 64;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `human` or `json` (`{"refs": [...], "totals": {...}}`, docs/reference.md §4).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    // GitHub requests in flight at once; the help is built from `MAX_CONCURRENCY`, so it
    // states the range clap enforces.
    #[arg(
        long,
        help = format!("GitHub requests in flight at once (1 to {MAX_CONCURRENCY})"),
        default_value_t = DEFAULT_CONCURRENCY,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::from(1..=MAX_CONCURRENCY)
    )]
    concurrency: usize,
    #[command(flatten)]
    stores: StoreArgs,
}

/// The progress bar, one step per ref.
struct Bar {
    progress: Progress,
    done: std::sync::atomic::AtomicUsize,
    total: std::sync::atomic::AtomicUsize,
}

impl ReconcileProgress for Bar {
    fn planned(&self, refs: usize) {
        use std::sync::atomic::Ordering;
        self.total.store(refs, Ordering::Relaxed);
        self.progress.set(0, refs);
    }

    fn finished(&self, _outcome: &RefOutcome) {
        use std::sync::atomic::Ordering;
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        self.progress.set(done, self.total.load(Ordering::Relaxed));
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let report = runtime()?.block_on(async {
        let stores = args.stores.stores().await?;
        let state = Arc::clone(&stores.state);
        let github = Environment::new()
            .github_app()
            .await
            .context("reconcile needs the GitHub App's id and private key")?;
        let queue = RecordedJobQueue::new(Arc::clone(&state));
        // The Step Functions engine times out and retries its executions itself
        // (docs/reference.md §5.6).
        let stages = match WorkflowEngine::from_env()? {
            WorkflowEngine::State => Some(LayerPackager::from_env(&stores, None).await?),
            WorkflowEngine::StepFunctions(_) => None,
        };
        let dispatcher = stages.as_ref().map(|s| s.stage_dispatcher(state.as_ref()));
        let bar = Bar {
            progress: Progress::bar("reconciling", "refs", args.format == ListFormat::Human),
            done: 0.into(),
            total: 0.into(),
        };
        let options = ReconcileOptions {
            concurrency: args.concurrency,
            ..ReconcileOptions::default()
        };
        let report = reconcile(
            state.as_ref(),
            &github,
            &queue,
            dispatcher.as_ref().map(|d| d as _),
            options,
            &bar,
        )
        .await?;
        drop(bar);
        anyhow::Ok(report)
    })?;
    match args.format {
        ListFormat::Json => outln!("{}", serde_json::to_string(&report)?)?,
        ListFormat::Human => print_human(&report)?,
    }
    Ok(match report.totals.failed {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::from(super::EXIT_FINDINGS),
    })
}

/// One line per ref that is not unchanged, then the totals.
fn print_human(report: &ReconcileReport) -> anyhow::Result<()> {
    for outcome in report
        .refs
        .iter()
        .filter(|r| r.status != RefStatus::Unchanged)
    {
        outln!("{}", describe(outcome))?;
    }
    let totals = &report.totals;
    outln!(
        "{}: {} unchanged, {} queued ({}), {} skipped, {} failed; {} ({} not modified)",
        plural(totals.refs, "ref"),
        totals.unchanged,
        totals.queued,
        plural(totals.jobs, "job"),
        totals.skipped,
        totals.failed,
        plural(totals.requests, "GitHub request"),
        totals.not_modified,
    )?;
    Ok(())
}

/// `queued  octo/agents@main  0123456789ab (synced 89abcdef0123)`.
fn describe(outcome: &RefOutcome) -> String {
    let short = |sha: &Option<String>| -> String {
        sha.as_deref()
            .map(|s| s.chars().take(12).collect())
            .unwrap_or_else(|| "-".to_owned())
    };
    let status = serde_json::to_value(outcome.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut line = format!(
        "{status}  {}@{}  {} (synced {})",
        outcome.repository,
        outcome.git_ref,
        short(&outcome.head),
        short(&outcome.synced)
    );
    if let Some(reason) = outcome
        .reason
        .and_then(|r| serde_json::to_value(r).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
    {
        line.push_str(&format!(": {reason}"));
    }
    if let Some(detail) = &outcome.detail {
        line.push_str(&format!(": {detail}"));
    }
    line
}

// The default must lie in the range clap enforces.
const _: () = assert!(DEFAULT_CONCURRENCY >= 1 && DEFAULT_CONCURRENCY as u64 <= MAX_CONCURRENCY);
