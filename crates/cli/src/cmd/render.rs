//! `astrolift render DISPATCH_ID [--format env|json] [--listener]`: a recorded dispatch
//! turned into its container environment (docs/reference.md §3, §11) by
//! `astrolift_dispatch::render::render_dispatch`, the call a controller embeds.
//!
//! Each render mints a new `ASTROLIFT_CLUSTER_KEY` (the key of every earlier render is
//! dead from then on). Secrets stay `secret://` references. `ASTROLIFT_CONTROLLER_URL` is
//! required; `ASTROLIFT_WORKSPACE` defaults to `/workspace`.

use std::process::ExitCode;

use anyhow::{Context, bail};
use astrolift_dispatch::content::{BlobContent, UrlOptions};
use astrolift_dispatch::render::{
    DEFAULT_WORKSPACE, RenderOptions, RenderedDispatch, render_dispatch,
};
use astrolift_manifest::Limits;
use astrolift_sync::commands::single_quoted;
use serde_json::json;

use super::stores::{StoreArgs, now, runtime};
use crate::output::outln;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RenderFormat {
    /// `NAME='value'` lines, each value in POSIX single quotes.
    Env,
    /// `{"dispatch_id","task_id","environment":{..},"secrets":{..}}`.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The dispatch id (`d-…`), as `dispatch` or the trigger route printed it.
    dispatch_id: String,
    #[arg(long, value_enum, default_value_t = RenderFormat::Env)]
    format: RenderFormat,
    /// The runtime idles in listener mode: no AGENT_SYSTEM or AGENT_PROMPT.
    #[arg(long)]
    listener: bool,
    /// The control plane's base URL (`ASTROLIFT_CONTROLLER_URL`), required.
    #[arg(long, env = "ASTROLIFT_CONTROLLER_URL")]
    controller_url: Option<String>,
    /// The directory the runtime checks out into (`ASTROLIFT_WORKSPACE`).
    #[arg(long, env = "ASTROLIFT_WORKSPACE", default_value = DEFAULT_WORKSPACE)]
    workspace: String,
    #[command(flatten)]
    stores: StoreArgs,
}

/// The variable a dispatch without a callback route renders without (docs/reference.md §11).
const CALLBACK_VARIABLE: &str = "AGENT_CALLBACK_URL";

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(controller_url) = args
        .controller_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
    else {
        bail!(
            "ASTROLIFT_CONTROLLER_URL is not set: a render needs the control plane's base URL \
             (set it, or pass --controller-url)"
        );
    };
    let options = RenderOptions {
        controller_url: controller_url.to_owned(),
        workspace: args.workspace.clone(),
        listener: args.listener,
    };
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        let content = BlobContent::new(
            args.stores.blobs().await?,
            UrlOptions::from_env().map_err(anyhow::Error::msg)?,
            Limits::DEFAULT,
        );
        let rendered =
            render_dispatch(state.as_ref(), &content, &args.dispatch_id, &options, now())
                .await
                .with_context(|| format!("cannot render {}", args.dispatch_id))?;
        for warning in &rendered.env.warnings {
            eprintln!("warning: {}: {}", warning.name, warning.message);
        }
        if !rendered.env.vars.contains_key(CALLBACK_VARIABLE) {
            eprintln!(
                "warning: {CALLBACK_VARIABLE} is omitted: dispatch {} was recorded without a \
                 callback route (ASTROLIFT_CALLBACK_BASE_URL was unset), so the runtime cannot \
                 report back. Set ASTROLIFT_CALLBACK_BASE_URL to serve's base URL (for example \
                 http://127.0.0.1:3000) and dispatch again",
                rendered.dispatch_id
            );
        }
        match args.format {
            RenderFormat::Env => crate::output::text(&env_lines(&rendered))?,
            RenderFormat::Json => outln!("{}", render_json(&rendered))?,
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// One `NAME='value'` line per variable, then per secret reference not already set,
/// sorted by name within each part: a POSIX shell reads them back exactly.
pub fn env_lines(rendered: &RenderedDispatch) -> String {
    let vars = &rendered.env.vars;
    let secrets = rendered
        .secrets
        .iter()
        .filter(|(name, _)| !vars.contains_key(*name));
    vars.iter()
        .chain(secrets)
        .map(|(name, value)| format!("{name}={}\n", single_quoted(value)))
        .collect()
}

fn render_json(rendered: &RenderedDispatch) -> serde_json::Value {
    json!({
        "dispatch_id": rendered.dispatch_id,
        "task_id": rendered.task_id,
        "environment": rendered.env.vars,
        "secrets": rendered.secrets,
    })
}
