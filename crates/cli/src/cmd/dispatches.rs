//! What was dispatched, without opening the database (docs/reference.md §3):
//! - `astrolift dispatch list [--agent AGENT [--repo OWNER/REPO]] [--limit N] [--format human|json]`:
//!   the recorded dispatches, newest first, with their task's status;
//! - `astrolift dispatch show DISPATCH_ID [--format human|json]`: one dispatch, its
//!   task, and the message v1 it was sent with (payload included).

use std::process::ExitCode;

use anyhow::Context;
use astrolift_dispatch::dispatch::message_of;
use astrolift_store::StateStore;
use astrolift_store::state::{Dispatch, DispatchTask};
use serde_json::{Value, json};

use super::registry::{ListFormat, find_agent};
use super::stores::{StoreArgs, runtime};
use crate::output::outln;

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Only this agent's dispatches: its name, its alias, or `OWNER/REPO:path/to/astrolift.toml`.
    #[arg(long)]
    agent: Option<String>,
    /// The repository, when the agent's name is not unique.
    #[arg(long = "repo", value_name = "OWNER/REPO", requires = "agent")]
    repository: Option<String>,
    /// At most this many, the newest.
    #[arg(long, value_name = "N", default_value_t = 50)]
    limit: usize,
    /// `human` or `json` (one array of dispatch summaries).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The dispatch id (`d-…`), as `dispatch` or `dispatch list` printed it.
    dispatch_id: String,
    /// `human` or `json` (the dispatch summary with `message`).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

pub fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        let mut dispatches = state.list_dispatches().await?;
        if let Some(name) = &args.agent {
            let agent = find_agent(state.as_ref(), name, args.repository.as_deref()).await?;
            dispatches.retain(|d| {
                d.repository == agent.repository && d.manifest_path == agent.manifest_path
            });
        }
        let total = dispatches.len();
        dispatches.truncate(args.limit);
        let mut rows = Vec::with_capacity(dispatches.len());
        for dispatch in &dispatches {
            let task = task_of(state.as_ref(), dispatch).await?;
            rows.push(summary(dispatch, task.as_ref()));
        }
        match args.format {
            ListFormat::Json => outln!("{}", Value::Array(rows))?,
            ListFormat::Human => {
                for row in &rows {
                    outln!(
                        "{:<20} {:<34} {:<10} {:<24} {}",
                        utc(row["created_at"].as_i64().unwrap_or_default()),
                        text(&row["dispatch_id"]),
                        text(&row["status"]),
                        text(&row["agent"]),
                        text(&row["source"]),
                    )?;
                }
                let shown = astrolift_cli::render::plural(rows.len(), "dispatch");
                if total > rows.len() {
                    outln!("{shown} of {total} (--limit {})", args.limit)?;
                } else {
                    outln!("{shown}")?;
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

pub fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        let unknown = || {
            format!(
                "no dispatch {} (see `astrolift dispatch list`)",
                args.dispatch_id
            )
        };
        let task = state
            .tasks()
            .get_dispatch_task(&args.dispatch_id)
            .await?
            .with_context(unknown)?;
        let dispatch = state
            .get_dispatch(&task.idempotency_key)
            .await?
            .with_context(unknown)?;
        let mut shown = summary(&dispatch, Some(&task));
        shown["message"] = match message_of(&dispatch) {
            Ok(message) => serde_json::to_value(message)?,
            // Recorded before messages were kept.
            Err(_) => Value::Null,
        };
        match args.format {
            ListFormat::Json => outln!("{shown}")?,
            ListFormat::Human => {
                for (name, value) in shown.as_object().into_iter().flatten() {
                    match name.as_str() {
                        "message" | "result" => {}
                        "created_at" | "finished_at" if value.is_i64() => {
                            outln!("{name:<14} {}", utc(value.as_i64().unwrap_or_default()))?;
                        }
                        _ if !value.is_null() => outln!("{name:<14} {}", text(value))?,
                        _ => {}
                    }
                }
                if !shown["result"].is_null() {
                    outln!(
                        "result:\n{}",
                        serde_json::to_string_pretty(&shown["result"])?
                    )?;
                }
                match &shown["message"] {
                    Value::Null => {
                        outln!("message        (none: recorded before messages were kept)")?
                    }
                    message => outln!("message:\n{}", serde_json::to_string_pretty(message)?)?,
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The task of `dispatch`; none for a dispatch recorded before tasks existed.
async fn task_of(
    state: &dyn StateStore,
    dispatch: &Dispatch,
) -> anyhow::Result<Option<DispatchTask>> {
    Ok(state.tasks().get_dispatch_task(&dispatch.id).await?)
}

/// One dispatch as `dispatch list --format json` prints it: its task's status (the
/// record's own for a dispatch without a task), and where it came from (`source`: the
/// trigger id, `manual`, or `workflow:<run>:<stage>`).
fn summary(dispatch: &Dispatch, task: Option<&DispatchTask>) -> Value {
    let agent = message_of(dispatch)
        .map(|m| m.agent.name)
        .unwrap_or_default();
    let status = task.map_or_else(
        || serde_json::to_value(dispatch.status).unwrap_or_default(),
        |t| json!(t.status.as_str()),
    );
    let result = task
        .and_then(|t| t.result.as_deref())
        .map(|r| serde_json::from_str::<Value>(r).unwrap_or_else(|_| json!(r)));
    json!({
        "dispatch_id": dispatch.id,
        "task_id": dispatch.task_id,
        "created_at": dispatch.created_at,
        "status": status,
        "agent": agent,
        "repository": dispatch.repository,
        "manifest_path": dispatch.manifest_path,
        "snapshot": dispatch.snapshot_hash,
        "source": dispatch.trigger_id,
        "env_spec": dispatch.env_spec,
        "sender": dispatch.sender,
        "trusted": dispatch.trusted,
        "renders": task.map(|t| t.renders),
        "finished_at": task.and_then(|t| t.finished_at),
        "result": result,
    })
}

/// A JSON string as its text; anything else as JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (the proleptic Gregorian calendar, UTC); the
/// seconds themselves outside jiff's range (years -9999 to 9999).
fn utc(seconds: i64) -> String {
    match jiff::Timestamp::from_second(seconds) {
        Ok(t) => t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Err(_) => seconds.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::utc(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
