//! `astrolift layers report DISPATCH_ID|AGENT --status S [--result JSON]`: records a
//! packager dispatch's terminal result by hand, as `POST /callbacks/{task_id}` does
//! (docs/reference.md "Dependency layers"). An agent names the packager dispatch its
//! pending layers wait for.

use std::process::ExitCode;

use anyhow::{Context, bail};
use astrolift_dispatch::layers::{PACKAGER_AGENT_ENV, report_packager_dispatch};
use astrolift_manifest::Limits;
use astrolift_store::StateStore;
use astrolift_store::state::{LayerStatus, TaskStatus};
use serde_json::{Value, json};

use super::registry::find_agent;
use super::stores::{StoreArgs, now, runtime};
use crate::output::outln;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The packager dispatch's id (`dispatch list` shows it, source `packager:<key>`), or
    /// the agent whose pending layers it builds (its name, alias or `OWNER/REPO:path`).
    target: String,
    /// The repository, when the agent's name is not unique.
    #[arg(long = "repo", value_name = "OWNER/REPO")]
    repository: Option<String>,
    /// `succeeded`, `failed` or `cancelled`.
    #[arg(long, value_parser = ["succeeded", "failed", "cancelled"])]
    status: String,
    /// The packager's result, JSON (at most 256 KiB): `{"status":"ok","layers":[...]}` or
    /// `{"status":"error","error":"..."}`.
    #[arg(long, value_name = "JSON")]
    result: Option<String>,
    #[command(flatten)]
    stores: StoreArgs,
}

pub fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let status = TaskStatus::parse(&args.status).context("--status is not a terminal status")?;
    let result: Option<Value> = match &args.result {
        Some(text) if text.len() as u64 > Limits::DEFAULT.callback_result => bail!(
            "--result is {} bytes, over the {}-byte limit",
            text.len(),
            Limits::DEFAULT.callback_result
        ),
        Some(text) => Some(serde_json::from_str(text).context("--result is not valid JSON")?),
        None => None,
    };
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        let dispatch_id = packager_dispatch_of(state.as_ref(), &args).await?;
        let layer_key =
            report_packager_dispatch(state.as_ref(), &dispatch_id, status, result.as_ref(), now())
                .await?;
        let build = state.layers().get_layer_build(&layer_key).await?;
        let layers = build.as_ref().map_or("pending", |b| b.status.as_str());
        outln!(
            "{}",
            json!({
                "dispatch_id": dispatch_id,
                "status": args.status,
                "layer_key": layer_key,
                "layers": layers,
            })
        )?;
        Ok(ExitCode::SUCCESS)
    })
}

/// The dispatch id `args.target` names: itself, or the packager dispatch an agent's
/// pending layers wait for.
async fn packager_dispatch_of(state: &dyn StateStore, args: &ReportArgs) -> anyhow::Result<String> {
    let target = args.target.as_str();
    if target.starts_with("d-") && state.tasks().get_dispatch_task(target).await?.is_some() {
        return Ok(target.to_owned());
    }
    let agent = find_agent(state, target, args.repository.as_deref()).await?;
    let key = agent
        .layer_key
        .clone()
        .with_context(|| format!("{} needs no dependency layers", agent.key()))?;
    let build = state.layers().get_layer_build(&key).await?;
    match build {
        Some(build) if build.status == LayerStatus::Pending => build
            .dispatch_id
            .with_context(|| format!("the layers of {} have no packager dispatch", agent.key())),
        Some(build) => bail!(
            "the layers of {} are {}, not waiting for a packager result",
            agent.key(),
            build.status.as_str()
        ),
        None => bail!(
            "no packager was dispatched for the layers of {} (is {PACKAGER_AGENT_ENV} set?)",
            agent.key()
        ),
    }
}
