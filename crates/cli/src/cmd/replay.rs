//! `astrolift triggers replay TRIGGER_ID [DIR] [--last N] [--format human|json]`
//! (docs/reference.md §3): the registered binding's kept requests replayed through it and
//! through the binding as written in the working copy `DIR`, the report a pull request's
//! check run shows ([`astrolift_trigger::replayer`]). Exit `1` when the working copy's
//! binding errors on, or filters out, a request that dispatched.
//!
//! Values follow the registered binding's `replay_values`: whoever runs this reads the state
//! store, where the kept bodies are, so the repository's visibility does not hide them here.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use astrolift_manifest::Limits;
use astrolift_store::state::MAX_KEPT_REQUESTS;
use astrolift_trigger::replay::Replayed;
use astrolift_trigger::replayer::{
    BindingReplay, ReplayOptions, ReplayTarget, replay_binding, utc_minute,
};

use super::EXIT_FINDINGS;
use super::registry::ListFormat;
use super::stores::{StoreArgs, now, runtime};
use crate::output::outln;

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The registered binding's id (`trg_…`, as `triggers list` prints it).
    trigger_id: String,
    /// The working copy whose version of the binding is replayed.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// How many of the newest kept requests to replay, 1 to 20.
    #[arg(long, default_value_t = MAX_KEPT_REQUESTS as u8, value_parser = clap::value_parser!(u8).range(1..=20))]
    last: u8,
    /// `human` or `json` (the binding's replay: counts and changed requests).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

pub fn run(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let limits = Limits::DEFAULT;
    let (_, validation) = super::validate_working_copy(&args.dir)?;
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        let Some(registered) = state.get_trigger_binding(&args.trigger_id).await? else {
            bail!("no trigger binding {} is registered", args.trigger_id);
        };
        let manifest = validation
            .agents
            .iter()
            .find(|a| a.manifest == registered.manifest_path)
            .with_context(|| {
                format!(
                    "{} has no valid manifest {} (run `astrolift validate`)",
                    args.dir.display(),
                    registered.manifest_path
                )
            })?;
        let head = manifest
            .triggers
            .iter()
            .find(|t| t.name == registered.name)
            .with_context(|| {
                format!(
                    "{} in {} has no valid trigger {} (run `astrolift validate`)",
                    registered.manifest_path,
                    args.dir.display(),
                    registered.name
                )
            })?;
        let now = now();
        let kept = state
            .kept_requests()
            .list_kept_requests(
                &registered.trigger_id,
                &registered.repository,
                now,
                usize::from(args.last),
            )
            .await?;
        let target = ReplayTarget {
            registered: &registered,
            head,
            agent: &manifest.name,
            span: manifest.trigger_spans.get(&head.name).copied(),
        };
        let options = ReplayOptions {
            last: usize::from(args.last),
            private: true,
            now,
        };
        let replay = replay_binding(&target, &kept, options, &limits)
            .await
            .map_err(anyhow::Error::msg)?;
        match args.format {
            ListFormat::Json => outln!("{}", serde_json::to_string(&replay)?)?,
            ListFormat::Human => print_human(&replay)?,
        }
        Ok(if replay.lost_dispatches() > 0 {
            ExitCode::from(EXIT_FINDINGS)
        } else {
            ExitCode::SUCCESS
        })
    })
}

fn print_human(replay: &BindingReplay) -> anyhow::Result<()> {
    let counts = replay.counts;
    outln!(
        "trigger {} ({}) of {}: {} kept requests replayed",
        replay.trigger,
        replay.trigger_id,
        replay.manifest,
        replay.replayed
    )?;
    outln!(
        "  {} unchanged, {} changed, {} newly filtered, {} newly dispatched, {} error",
        counts.unchanged,
        counts.changed,
        counts.newly_filtered,
        counts.newly_dispatched,
        counts.error
    )?;
    if replay.skipped > 0 {
        outln!(
            "  {} not replayed: every evaluation slot was taken",
            replay.skipped
        )?;
    }
    for request in &replay.requests {
        let detail = match &request.replayed {
            Replayed::Unchanged => "unchanged".to_owned(),
            Replayed::Changed { diff } => format!("changed: {}", diff.describe(str::to_owned)),
            Replayed::NewlyFiltered => "newly filtered".to_owned(),
            Replayed::NewlyDispatched => "newly dispatched".to_owned(),
            Replayed::Error { error, .. } => format!("error: {error}"),
        };
        outln!(
            "{}  {} -> {detail}",
            utc_minute(request.received_at),
            request.kept_outcome.as_str()
        )?;
        if let Some(payloads) = &request.payloads {
            outln!("    registered: {}", payloads.registered)?;
            outln!("    head:       {}", payloads.head)?;
        }
    }
    Ok(())
}
