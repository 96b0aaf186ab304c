//! Workflow runs from the command line (docs/reference.md, "Workflows"):
//! - `astrolift dispatch --workflow NAME --input JSON [--repo OWNER/REPO] [--tail]`:
//!   starts a run of a registered workflow; the stages without needs are
//!   dispatched at once (messages v1 with source `workflow`, under a key per
//!   run and stage, sent to `ASTROLIFT_DISPATCH_QUEUE_URL` or the local outbox);
//! - `astrolift workflow-run show RUN_ID`: the run and its stages, as JSON, each
//!   stage with its attempt and the reports of its attempts;
//! - `astrolift workflow-run report RUN_ID STAGE --status S [--result JSON]`:
//!   a stage's terminal report, what the callback route does for a workflow
//!   dispatch (for local runs and operators; the first report of an attempt wins);
//! - `astrolift workflow-run cancel RUN_ID [--format human|json]`: the run's
//!   waiting stages skipped and the run `cancelled` (exit 2 for a run that
//!   succeeded or failed; a second cancel changes nothing).
//!
//! A run that has already failed when `dispatch --workflow` returns (a stage
//! refused as it started) exits 1, with or without `--tail`.
//!
//! `--tail` polls the run once a second and prints each stage change as one
//! JSON line until the run is terminal (exit 0 when it succeeded, 1 when it
//! failed) or `--timeout` passes (exit 1).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use astrolift_bot::layers::LayerPackager;
use astrolift_cli::render::plural;
use astrolift_dispatch::engine::{StepFunctionsSettings, WorkflowEngine};
use astrolift_dispatch::state_machine::state_machine_name;
use astrolift_dispatch::step_functions::{StepFunctions, execution_arn, state_machine_arn};
use astrolift_dispatch::workflow::{
    RunProgress, cancel_run, create_run, report_stage, stage_statuses, start_run,
};
use astrolift_manifest::Limits;
use astrolift_store::StateStore;
use astrolift_store::state::{RunStatus, StageResult, StageStatus, WorkflowRecord, WorkflowRun};
use serde_json::{Value, json};

use super::EXIT_FINDINGS;
use super::registry::ListFormat;
use super::stores::{StoreArgs, now, runtime};
use crate::output::outln;

/// How `dispatch --workflow` is asked for.
#[derive(Debug, Clone)]
pub struct WorkflowDispatch<'a> {
    pub name: &'a str,
    pub input: &'a str,
    pub repository: Option<&'a str>,
    pub tail: bool,
    pub timeout: Duration,
    pub stores: &'a StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The run id (`run-…`), as `dispatch --workflow` printed it.
    run_id: String,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct CancelArgs {
    /// The run id.
    run_id: String,
    /// `human` or `json` (the run, with `changed`).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The run id.
    run_id: String,
    /// The stage's name.
    stage: String,
    /// `succeeded`, `failed` or `cancelled`.
    #[arg(long, value_parser = ["succeeded", "failed", "cancelled"])]
    status: String,
    /// The stage's result, JSON (at most 256 KiB): `.stages.<stage>.result` for later payloads.
    #[arg(long, value_name = "JSON")]
    result: Option<String>,
    #[command(flatten)]
    stores: StoreArgs,
}

/// The callback's result limit (docs/reference.md §14).
const MAX_RESULT_BYTES: u64 = Limits::DEFAULT.callback_result;

pub fn dispatch(request: WorkflowDispatch<'_>) -> anyhow::Result<ExitCode> {
    let input: Value = serde_json::from_str(request.input).context("--input is not valid JSON")?;
    if !(input.is_object() || input.is_null()) {
        bail!("--input must be a JSON object (or `{{}}` / `null` for no input)");
    }
    runtime()?.block_on(async {
        let stores = request.stores.stores().await?;
        let state = &stores.state;
        let record = find_workflow(state.as_ref(), request.name, request.repository).await?;
        if let WorkflowEngine::StepFunctions(settings) = WorkflowEngine::from_env()? {
            return start_execution_run(state.as_ref(), &settings, &record, &input, &request).await;
        }
        let deps = LayerPackager::from_env(&stores, None).await?;
        let dispatcher = deps.stage_dispatcher(state.as_ref());
        let progress = start_run(
            state.as_ref(),
            &dispatcher,
            &record,
            &input,
            now(),
            &Limits::DEFAULT,
        )
        .await?;
        outln!("{}", progress_json(&progress))?;
        if progress.run.status == RunStatus::Failed {
            // A stage failed as the run started (its payload, agent or env spec):
            // the run is over, and `--tail` would only say so (docs/reference.md §3).
            for (name, stage) in &progress.run.stages {
                if let Some(error) = &stage.error {
                    eprintln!("stage {name} failed: {error}");
                }
            }
            eprintln!("workflow run {} failed as it started", progress.run.id);
            return Ok(ExitCode::from(EXIT_FINDINGS));
        }
        if !request.tail {
            return Ok(ExitCode::SUCCESS);
        }
        tail(state.as_ref(), progress.run, request.timeout).await
    })
}

/// `dispatch --workflow` on the Step Functions engine (docs/reference.md §5.6): the run is
/// stored, then its execution started on the workflow's state machine, named by the run id;
/// `--tail` prints the execution's status until it ends.
async fn start_execution_run(
    state: &dyn StateStore,
    settings: &StepFunctionsSettings,
    record: &WorkflowRecord,
    input: &Value,
    request: &WorkflowDispatch<'_>,
) -> anyhow::Result<ExitCode> {
    let arn = record.state_machine_arn.as_deref().with_context(|| {
        format!(
            "workflow {} has no state machine yet: the next sync of {} that applies makes it",
            record.name, record.repository
        )
    })?;
    let engine = StepFunctions::from_env(settings.role_arn.clone()).await;
    let run = create_run(state, record, input, now()).await?;
    let execution = engine
        .start_execution(arn, &run.id, &json!({"run_id": run.id, "input": input}))
        .await?;
    let mut shown = run_json(&run);
    shown["execution_arn"] = json!(execution);
    outln!("{shown}")?;
    if !request.tail {
        return Ok(ExitCode::SUCCESS);
    }
    let deadline = Instant::now() + request.timeout;
    let mut last = String::new();
    while Instant::now() < deadline {
        let status = engine.execution_state(&execution).await?;
        if status != last {
            outln!("{}", json!({"run_id": run.id, "execution": status}))?;
            last = status;
        }
        match last.as_str() {
            "RUNNING" => tokio::time::sleep(Duration::from_secs(1)).await,
            "SUCCEEDED" => return Ok(ExitCode::SUCCESS),
            _ => return Ok(ExitCode::from(EXIT_FINDINGS)),
        }
    }
    eprintln!(
        "workflow run {} has not ended after {} s",
        run.id,
        request.timeout.as_secs()
    );
    Ok(ExitCode::from(EXIT_FINDINGS))
}

/// `workflow-run cancel` on the Step Functions engine: the run's execution is stopped,
/// before the run is cancelled. An execution that has ended is refused like a finished run
/// (exit 2): the run record does not follow the execution to its end.
async fn stop_execution(
    state: &dyn StateStore,
    settings: &StepFunctionsSettings,
    run_id: &str,
) -> anyhow::Result<()> {
    let run = read_run(state, run_id).await?;
    if run.status != RunStatus::Running {
        return Ok(());
    }
    let (engine, execution) = execution_of(settings, &run).await?;
    let status = engine.execution_state(&execution).await?;
    if status != "RUNNING" {
        bail!("workflow run {run_id} cannot be cancelled: its execution is {status}");
    }
    let cause = "cancelled by `astrolift workflow-run cancel`";
    engine.stop_execution(&execution, cause).await?;
    Ok(())
}

/// The engine's client and the ARN of `run`'s execution: on the state machine of the run's
/// content, named by its id. The AWS configuration is loaded once, for both.
async fn execution_of(
    settings: &StepFunctionsSettings,
    run: &WorkflowRun,
) -> anyhow::Result<(StepFunctions, String)> {
    let hash = run.content_hash.trim_start_matches("sha256:");
    let name = state_machine_name(&settings.prefix, &run.repository, &run.workflow, hash)?;
    let sdk = astrolift_store::load_sdk_config().await;
    let region = sdk.region().map(|r| r.to_string());
    let machine = state_machine_arn(&settings.role_arn, region.as_deref(), &name)
        .context("ASTROLIFT_STATE_MACHINE_ROLE_ARN names no account, or no AWS region is set")?;
    let engine = StepFunctions::new(aws_sdk_sfn::Client::new(&sdk), settings.role_arn.clone());
    Ok((engine, execution_arn(&machine, &run.id)))
}

pub fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        let run = read_run(state.as_ref(), &args.run_id).await?;
        let reports = state.workflows().list_stage_results(&run.id).await?;
        let mut shown = run_json(&run);
        for (stage, attempts) in attempts_json(&reports) {
            shown["stages"][stage]["attempts"] = attempts;
        }
        if let WorkflowEngine::StepFunctions(settings) = WorkflowEngine::from_env()? {
            let (engine, arn) = execution_of(&settings, &run).await?;
            let status = engine.execution_state(&arn).await?;
            shown["execution"] = json!({"arn": arn, "status": status});
        }
        outln!("{shown}")?;
        Ok(ExitCode::SUCCESS)
    })
}

pub fn cancel(args: CancelArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        if let WorkflowEngine::StepFunctions(settings) = WorkflowEngine::from_env()? {
            stop_execution(state.as_ref(), &settings, &args.run_id).await?;
        }
        let progress = cancel_run(state.as_ref(), &args.run_id, now()).await?;
        match args.format {
            ListFormat::Json => {
                let mut shown = run_json(&progress.run);
                shown["changed"] = json!(progress.changed);
                outln!("{shown}")?;
            }
            ListFormat::Human => outln!("{}", cancelled_line(&progress))?,
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `cancelled workflow run ID: 2 waiting stages skipped, 1 dispatched stage left to finish`,
/// or that it was cancelled already.
fn cancelled_line(progress: &RunProgress) -> String {
    let run = &progress.run;
    if !progress.changed {
        return format!("workflow run {} is cancelled already", run.id);
    }
    let count = |status: StageStatus| run.stages.values().filter(|s| s.status == status).count();
    format!(
        "cancelled workflow run {}: {} skipped, {} left to finish",
        run.id,
        plural(count(StageStatus::Skipped), "waiting stage"),
        plural(count(StageStatus::Dispatched), "dispatched stage"),
    )
}

pub fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let status = match args.status.as_str() {
        "succeeded" => StageStatus::Succeeded,
        "failed" => StageStatus::Failed,
        _ => StageStatus::Cancelled,
    };
    let result: Option<Value> = match &args.result {
        Some(text) if text.len() as u64 > MAX_RESULT_BYTES => {
            bail!(
                "--result is {} bytes, over the {MAX_RESULT_BYTES}-byte limit",
                text.len()
            )
        }
        Some(text) => Some(serde_json::from_str(text).context("--result is not valid JSON")?),
        None => None,
    };
    runtime()?.block_on(async {
        let stores = args.stores.stores().await?;
        let state = &stores.state;
        let deps = LayerPackager::from_env(&stores, None).await?;
        let dispatcher = deps.stage_dispatcher(state.as_ref());
        let progress = report_stage(
            state.as_ref(),
            &dispatcher,
            &args.run_id,
            &args.stage,
            status,
            result.as_ref(),
            now(),
            &Limits::DEFAULT,
        )
        .await?;
        outln!("{}", progress_json(&progress))?;
        Ok(ExitCode::SUCCESS)
    })
}

/// The workflow `name` (in `repository`, or in the one registered repository that has it).
async fn find_workflow(
    state: &dyn StateStore,
    name: &str,
    repository: Option<&str>,
) -> anyhow::Result<WorkflowRecord> {
    let repositories = match repository {
        Some(repository) => vec![repository.to_owned()],
        None => state
            .list_registrations()
            .await?
            .into_iter()
            .map(|r| r.repository)
            .collect(),
    };
    let mut found = Vec::new();
    for repository in &repositories {
        if let Some(record) = state.workflows().get_workflow(repository, name).await? {
            found.push(record);
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => bail!("no registered workflow is named {name}"),
        _ => {
            let repositories: Vec<&str> = found.iter().map(|r| r.repository.as_str()).collect();
            bail!(
                "workflow {name} is registered in {}; pass --repo",
                repositories.join(", ")
            )
        }
    }
}

async fn read_run(state: &dyn StateStore, run_id: &str) -> anyhow::Result<WorkflowRun> {
    state
        .workflows()
        .get_workflow_run(run_id)
        .await?
        .with_context(|| format!("no workflow run {run_id}"))
}

fn run_json(run: &WorkflowRun) -> Value {
    let stages: BTreeMap<&str, Value> = run
        .stages
        .iter()
        .map(|(name, stage)| {
            let mut value = json!({"status": stage.status.as_str(), "attempt": stage.attempt});
            if let Some(id) = &stage.dispatch_id {
                value["dispatch_id"] = json!(id);
            }
            if let Some(at) = stage.dispatched_at {
                value["dispatched_at"] = json!(at);
            }
            if let Some(at) = stage.retry_at {
                value["retry_at"] = json!(at);
            }
            if let Some(error) = &stage.error {
                value["error"] = json!(error);
            }
            (name.as_str(), value)
        })
        .collect();
    json!({
        "run_id": run.id,
        "workflow": run.workflow,
        "repository": run.repository,
        "status": run.status.as_str(),
        "stages": stages,
    })
}

/// Each stage's attempt reports, oldest first: `[{"attempt","status","error"?,"reported_at"}]`.
fn attempts_json(reports: &[StageResult]) -> BTreeMap<&str, Value> {
    let mut attempts: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for report in reports {
        let mut value = json!({
            "attempt": report.attempt,
            "status": report.status.as_str(),
            "reported_at": report.reported_at,
        });
        if let Some(error) = &report.error {
            value["error"] = json!(error);
        }
        attempts.entry(&report.stage).or_default().push(value);
    }
    attempts
        .into_iter()
        .map(|(stage, values)| (stage, Value::Array(values)))
        .collect()
}

fn progress_json(progress: &RunProgress) -> Value {
    let mut value = run_json(&progress.run);
    value["dispatched"] = progress
        .dispatched
        .iter()
        .map(|(order, id)| {
            json!({
                "stage": order.stage,
                "agent": order.agent,
                "dispatch_id": id,
                "skill_refs": order.skill_refs,
            })
        })
        .collect();
    value["changed"] = json!(progress.changed);
    value
}

/// How often `--tail` reads the state.
const TAIL_POLL: Duration = Duration::from_millis(500);

/// Reads with `fetch` at once and then every [`TAIL_POLL`], handing each read to
/// `observe`, until `observe` returns `Some` (or fails: it prints), or `timeout` passes
/// (`None`): the loop of every `--tail`.
pub async fn poll_until<S, T, Fut>(
    timeout: Duration,
    fetch: impl Fn() -> Fut,
    mut observe: impl FnMut(S) -> std::io::Result<Option<T>>,
) -> anyhow::Result<Option<T>>
where
    Fut: std::future::Future<Output = anyhow::Result<S>>,
{
    let started = Instant::now();
    loop {
        if let Some(done) = observe(fetch().await?)? {
            return Ok(Some(done));
        }
        if started.elapsed() >= timeout {
            return Ok(None);
        }
        tokio::time::sleep(TAIL_POLL).await;
    }
}

/// Prints stage changes until the run is terminal or `timeout` passes.
async fn tail(
    state: &dyn StateStore,
    run: WorkflowRun,
    timeout: Duration,
) -> anyhow::Result<ExitCode> {
    let run_id = run.id.clone();
    let mut shown: BTreeMap<String, &'static str> = stage_statuses(&run)
        .into_iter()
        .map(|(name, status)| (name.to_owned(), status))
        .collect();
    let show = |run: WorkflowRun| {
        for (name, status) in stage_statuses(&run) {
            if shown.get(name) != Some(&status) {
                outln!(
                    "{}",
                    json!({"run_id": run.id, "stage": name, "status": status})
                )?;
                shown.insert(name.to_owned(), status);
            }
        }
        Ok(run.status.is_terminal().then_some(run.status))
    };
    let ended = poll_until(timeout, || read_run(state, &run_id), show).await?;
    match ended {
        Some(RunStatus::Succeeded) => Ok(ExitCode::SUCCESS),
        Some(_) => Ok(ExitCode::from(EXIT_FINDINGS)),
        None => {
            eprintln!(
                "run {run_id} is still running after {} s",
                timeout.as_secs()
            );
            Ok(ExitCode::from(EXIT_FINDINGS))
        }
    }
}
