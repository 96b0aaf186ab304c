//! Trigger bindings from the command line:
//! - `astrolift triggers list [--format human|json]`: the registered bindings
//!   and the path `serve` and the trigger function answer (docs/reference.md §3);
//! - `astrolift triggers purge TRIGGER_ID`: deletes the binding's kept requests
//!   (`triggers replay` is [`super::replay`]);
//! - `astrolift trigger test AGENT TRIGGER --body FILE [--header K:V]... [DIR]`:
//!   one request evaluated locally against the manifest, with the payload and
//!   the rendered runtime environment, secrets masked;
//! - `astrolift dispatch AGENT --input JSON [--idempotency-key K] [--tail]`: a manual
//!   dispatch recorded on the configured stores; `--tail` then prints its task's status
//!   changes until it ends (`--workflow NAME` starts a workflow run instead:
//!   [`super::workflows`]).

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use astrolift_bot::triggers::{callback_base_from_env, dispatch_queue_from_env};
use astrolift_dispatch::content::{BlobContent, UrlOptions, prompt_texts_of_manifest};
use astrolift_dispatch::dispatch::{Origin, QueueDestination, manual_key};
use astrolift_dispatch::env::{
    DispatchContext, RenderedEnv, RuntimeOptions, SnapshotView, render_runtime_env,
};
use astrolift_dispatch::message::Source;
use astrolift_dispatch::on_demand::{OnDemand, dispatch_on_demand, preview_may_use};
use astrolift_manifest::model::AgentManifest;
use astrolift_manifest::triggers::Verify;
use astrolift_manifest::{DirTree, Limits};
use astrolift_store::StateStore;
use astrolift_store::state::{DispatchTask, EnvSpecRefusal, TaskStatus, env_spec_for_project};
use astrolift_sync::commands::{
    EXAMPLE_AGENT_TYPE, EXAMPLE_RUNTIME, env_spec_upsert_command, env_spec_upsert_with_config,
};
use astrolift_trigger::secrets::{EnvSecretResolver, github_webhook_from_env};
use astrolift_trigger::verify::verify_request;
use astrolift_trigger::{CompiledBinding, Outcome, SecretResolver, evaluate_verified};
use http::{HeaderMap, HeaderName, HeaderValue};
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use super::EXIT_FINDINGS;
use super::registry::{ListFormat, find_dispatch_target};
use super::stores::{StoreArgs, now, runtime};
use crate::output::outln;

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// `human` or `json` (an array of `{"trigger_id","agent","name","source","path"}`).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// The agent's name (or alias) in the repository.
    agent: String,
    /// The trigger's name.
    trigger: String,
    /// The request body, a file.
    #[arg(long, value_name = "FILE")]
    body: PathBuf,
    /// A request header, `Name: value`; repeat for more.
    #[arg(long = "header", value_name = "K:V")]
    headers: Vec<String>,
    /// The repository.
    #[arg(default_value = ".")]
    dir: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct DispatchArgs {
    /// The agent: its name, its alias, or `OWNER/REPO:path/to/astrolift.toml`.
    #[arg(required_unless_present = "workflow", conflicts_with = "workflow")]
    agent: Option<String>,
    /// Start a run of this registered workflow instead of dispatching one agent.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["idempotency_key", "env_spec"])]
    workflow: Option<String>,
    /// Print each status change until the dispatch (or, with --workflow, the run) ends:
    /// exit 0 when it succeeded, 1 otherwise.
    #[arg(long)]
    tail: bool,
    /// With --tail: stop waiting after this many seconds (exit 1).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 3600,
        requires = "tail"
    )]
    timeout: u64,
    /// The input, a JSON object (`{}` or `null` for none): `ASTROLIFT_TRIGGER_PAYLOAD`.
    #[arg(long, value_name = "JSON", required = true)]
    input: Option<String>,
    /// Repeating a dispatch with the same key records it once.
    #[arg(long, value_name = "K")]
    idempotency_key: Option<String>,
    /// The repository, when the name is not unique.
    #[arg(long = "repo", value_name = "OWNER/REPO")]
    repository: Option<String>,
    /// The env spec to run with: refused unless it belongs to the agent's project.
    #[arg(long, value_name = "NAME")]
    env_spec: Option<String>,
    /// Dispatch an agent whose dependency layers are pending or failed, without them
    /// (otherwise refused).
    #[arg(long)]
    allow_pending_layers: bool,
    #[command(flatten)]
    stores: StoreArgs,
}

pub fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        let mut bindings = state.list_trigger_bindings().await?;
        bindings.sort_by(|a, b| (&a.agent_name, &a.name).cmp(&(&b.agent_name, &b.name)));
        let rows: Vec<Value> = bindings
            .iter()
            .map(|b| {
                json!({
                    "trigger_id": b.trigger_id,
                    "agent": b.agent_name,
                    "name": b.name,
                    "source": b.source,
                    "path": b.url_path(),
                })
            })
            .collect();
        match args.format {
            ListFormat::Json => outln!("{}", serde_json::to_string(&rows)?)?,
            ListFormat::Human => {
                for b in &bindings {
                    outln!(
                        "{:<24} {:<24} {:<8} {}",
                        b.agent_name,
                        b.name,
                        b.source,
                        b.url_path()
                    )?;
                }
                outln!(
                    "{}",
                    astrolift_cli::render::plural(bindings.len(), "trigger binding")
                )?;
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

#[derive(Debug, clap::Args)]
pub struct PurgeArgs {
    /// The binding's id (`trg_…`, as `triggers list` prints it).
    trigger_id: String,
    #[command(flatten)]
    stores: StoreArgs,
}

/// `triggers purge`: deletes a binding's kept requests (docs/reference.md §10, "Kept requests").
pub fn purge(args: PurgeArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        let purged = state
            .kept_requests()
            .purge_kept_requests(&args.trigger_id)
            .await?;
        outln!(
            "purged {} of {}",
            astrolift_cli::render::plural(purged, "kept request"),
            args.trigger_id
        )?;
        Ok(ExitCode::SUCCESS)
    })
}

pub fn dispatch(args: DispatchArgs) -> anyhow::Result<ExitCode> {
    // Required by clap unless a subcommand (`dispatch list|show`) was given instead.
    let input = args.input.as_deref().context("--input is required")?;
    let agent_name = match (&args.agent, &args.workflow) {
        (_, Some(name)) => {
            return super::workflows::dispatch(super::workflows::WorkflowDispatch {
                name,
                input,
                repository: args.repository.as_deref(),
                tail: args.tail,
                timeout: std::time::Duration::from_secs(args.timeout),
                stores: &args.stores,
            });
        }
        (Some(agent), None) => agent.clone(),
        (None, None) => bail!("name an agent, or a workflow with --workflow"),
    };
    let input: Value = serde_json::from_str(input).context("--input is not valid JSON")?;
    if !(input.is_object() || input.is_null()) {
        bail!("--input must be a JSON object (or `{{}}` / `null` for no input)");
    }
    runtime()?.block_on(async {
        let state = args.stores.state().await?;
        let (agent, preview) =
            find_dispatch_target(state.as_ref(), &agent_name, args.repository.as_deref()).await?;
        let env_spec = match &args.env_spec {
            None => None,
            Some(name) => match env_spec_for_project(state.as_ref(), name, &agent.project_id)
                .await?
            {
                Ok(spec) if preview => {
                    preview_may_use(&spec)?;
                    Some(spec)
                }
                Ok(spec) => Some(spec),
                Err(refusal) => {
                    let next = env_spec_next_step(state.as_ref(), name, &agent.project_id, refusal)
                        .await?;
                    bail!(
                        "env spec {name} is not an env spec of project {} ({refusal}); {next}",
                        agent.project_id
                    );
                }
            },
        };
        let queue = dispatch_queue_from_env(&state, None).await?;
        let source = BlobContent::new(
            args.stores.blobs().await?,
            UrlOptions::from_env().map_err(anyhow::Error::msg)?,
            Limits::DEFAULT,
        );
        let callback_base = callback_base_from_env();
        let request = OnDemand {
            agent: &agent,
            env_spec: env_spec.as_ref(),
            input: Some(&input),
            idempotency_key: manual_key(&agent, args.idempotency_key.as_deref()),
            source: Source::Manual,
            origin: &Origin::TRUSTED,
            allow_pending_layers: args.allow_pending_layers,
            callback_base: callback_base.as_deref(),
            now: now(),
        };
        let recorded =
            dispatch_on_demand(state.as_ref(), &source, queue.as_ref(), &request).await?;
        let mut out = json!({
            "dispatch_id": recorded.id,
            "agent": agent.name,
            "snapshot": agent.snapshot_hash,
            "status": "queued",
            "duplicate": !recorded.created,
        });
        if let (Some(name), Some(object)) = (&args.env_spec, out.as_object_mut()) {
            object.insert("env_spec".to_owned(), json!(name));
        }
        if let (true, Some(object)) = (preview, out.as_object_mut()) {
            object.insert("preview".to_owned(), json!(true));
        }
        outln!("{out}")?;
        if !args.tail {
            return Ok(ExitCode::SUCCESS);
        }
        let timeout = std::time::Duration::from_secs(args.timeout);
        tail_dispatch(state.as_ref(), &recorded.id, &queue.destination(), timeout).await
    })
}

/// Prints the dispatch's task status each time it changes (`queued` with where the
/// message waits, `running`, then the terminal one with its result) until it is terminal
/// (exit 0 for `succeeded`, 1 otherwise) or `timeout` passes (exit 1).
async fn tail_dispatch(
    state: &dyn StateStore,
    dispatch_id: &str,
    destination: &QueueDestination,
    timeout: std::time::Duration,
) -> anyhow::Result<ExitCode> {
    let fetch = || async {
        state
            .tasks()
            .get_dispatch_task(dispatch_id)
            .await?
            .with_context(|| format!("dispatch {dispatch_id} has no task"))
    };
    let mut shown = None;
    let show = |task: DispatchTask| {
        if shown != Some(task.status) {
            outln!("{}", task_line(&task, destination))?;
            shown = Some(task.status);
        }
        Ok(task.status.is_terminal().then_some(task.status))
    };
    let ended = super::workflows::poll_until(timeout, fetch, show).await?;
    match ended {
        Some(TaskStatus::Succeeded) => Ok(ExitCode::SUCCESS),
        Some(_) => Ok(ExitCode::from(EXIT_FINDINGS)),
        None => {
            eprintln!(
                "dispatch {dispatch_id} has not ended after {} s",
                timeout.as_secs()
            );
            Ok(ExitCode::from(EXIT_FINDINGS))
        }
    }
}

/// `{"dispatch_id","task_id","status"}`, plus where it waits when queued and the result
/// when terminal.
fn task_line(task: &DispatchTask, destination: &QueueDestination) -> Value {
    let mut line = serde_json::Map::new();
    line.insert("dispatch_id".to_owned(), json!(task.dispatch_id));
    line.insert("task_id".to_owned(), json!(task.task_id));
    line.insert("status".to_owned(), json!(task.status.as_str()));
    if task.status == TaskStatus::Queued {
        line.extend(destination.to_json());
    }
    if let Some(result) = &task.result {
        let result = serde_json::from_str(result).unwrap_or_else(|_| json!(result));
        line.insert("result".to_owned(), result);
    }
    Value::Object(line)
}

/// Placeholders for the parts of the environment only a real dispatch has.
const TEST_TASK_ID: &str = "task-trigger-test";
const TEST_CONTROLLER_URL: &str = "http://localhost:8080";
const TEST_CALLBACK_URL: &str = "http://localhost:8080/callbacks/task-trigger-test";
const TEST_WORKSPACE: &str = "/workspace";
const MASK: &str = "********";

pub fn test(args: TestArgs) -> anyhow::Result<ExitCode> {
    let limits = Limits::DEFAULT;
    let (tree, validation) = super::validate_working_copy(&args.dir)?;
    let agent = validation
        .agents
        .iter()
        .find(|a| a.name == args.agent || a.alias.as_deref() == Some(args.agent.as_str()))
        .with_context(|| format!("no agent named {} in {}", args.agent, args.dir.display()))?;
    let spec = agent
        .triggers
        .iter()
        .find(|t| t.name == args.trigger)
        .with_context(|| format!("{} has no trigger named {}", agent.name, args.trigger))?;
    let binding = CompiledBinding::from_spec(spec.name.clone(), spec.clone())
        .with_context(|| format!("trigger {} does not compile", spec.name))?;
    let headers = parse_headers(&args.headers)?;
    let body = read_body(&args.body, limits.trigger_body)?;
    let secrets = match github_webhook_from_env() {
        Some(app) => EnvSecretResolver::new().with_github_webhook(app),
        None => EnvSecretResolver::new(),
    };
    runtime()?.block_on(async {
        let masked = secret_values(agent, &binding, &secrets).await;
        let verify = spec.verify.clone().unwrap_or(Verify::Github);
        // The `env` resolver is single-tenant: no project scopes its secrets.
        match verify_request(&verify, &headers, &body, &secrets, "").await {
            Ok(_) => outln!("verification: ok")?,
            // Its message says already that it cannot verify (`TriggerError::Secret`).
            Err(error) if error.status() == 500 => bail!("{error}"),
            Err(error) => {
                outln!("verification: failed ({error})")?;
                return Ok(ExitCode::from(EXIT_FINDINGS));
            }
        }
        let payload = match evaluate_verified(&binding, &body, &limits).await {
            Ok(Outcome::Dispatch { payload }) => payload,
            Ok(Outcome::Filtered) => {
                outln!("result: filtered out (204)")?;
                return Ok(ExitCode::from(EXIT_FINDINGS));
            }
            Err(error) => {
                outln!("result: {} ({error})", error.status())?;
                return Ok(ExitCode::from(EXIT_FINDINGS));
            }
        };
        outln!("result: dispatched (202)")?;
        print_payload(payload.as_ref(), &masked)?;
        let rendered = render(agent, &tree, &limits, payload)?;
        print_env(&rendered, &masked)?;
        Ok(ExitCode::SUCCESS)
    })
}

fn parse_headers(pairs: &[String]) -> anyhow::Result<HeaderMap> {
    let mut headers = HeaderMap::new();
    for pair in pairs {
        let (name, value) = pair
            .split_once(':')
            .with_context(|| format!("--header {pair}: expected `Name: value`"))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .with_context(|| format!("--header {pair}: not a header name"))?;
        let value = HeaderValue::from_str(value.trim())
            .with_context(|| format!("--header {pair}: not a header value"))?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// Reads at most `limit + 1` bytes: enough for evaluation to answer 413.
fn read_body(path: &Path, limit: u64) -> anyhow::Result<Vec<u8>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut body = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut body)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(body)
}

/// Every secret value this run could print: the binding's, the App's
/// webhook secrets, and the agent's `[secrets]` that resolve locally.
async fn secret_values(
    agent: &AgentManifest,
    binding: &CompiledBinding,
    secrets: &EnvSecretResolver,
) -> BTreeSet<String> {
    let mut references: Vec<&str> = agent.secrets.values().map(String::as_str).collect();
    match &binding.spec.verify {
        Some(Verify::HmacSha256 { secret, .. }) | Some(Verify::Token { secret, .. }) => {
            references.push(secret);
        }
        _ => {}
    }
    let mut values = BTreeSet::new();
    for reference in references {
        if let Ok(value) = secrets.resolve("", reference).await {
            values.insert(value.expose_secret().to_owned());
        }
    }
    for variable in ["GITHUB_WEBHOOK_SECRET", "GITHUB_WEBHOOK_SECRET_PREVIOUS"] {
        values.extend(std::env::var(variable).ok());
    }
    values.retain(|v| !v.is_empty());
    values
}

/// `text` with every secret value replaced by the mask.
fn mask(text: &str, secrets: &BTreeSet<String>) -> String {
    secrets.iter().fold(text.to_owned(), |text, secret| {
        text.replace(secret.as_str(), MASK)
    })
}

fn print_payload(payload: Option<&Value>, secrets: &BTreeSet<String>) -> anyhow::Result<()> {
    match payload {
        None => outln!("payload: empty (no ASTROLIFT_TRIGGER_PAYLOAD)")?,
        Some(payload) => outln!(
            "payload:\n{}",
            mask(&serde_json::to_string_pretty(payload)?, secrets)
        )?,
    }
    Ok(())
}

/// The runtime environment of a dispatch of `agent` with `payload`: its
/// snapshot is built by packaging the agent (to nowhere), the dispatch and
/// runtime parts are placeholders.
fn render(
    agent: &AgentManifest,
    tree: &DirTree,
    limits: &Limits,
    payload: Option<Value>,
) -> anyhow::Result<RenderedEnv> {
    let packaged = match astrolift_package::package_agent(agent, tree, limits, std::io::sink()) {
        Ok(packaged) => packaged,
        Err(diagnostics) => {
            super::print_diagnostics(&diagnostics);
            bail!("{} does not package", agent.name);
        }
    };
    let snapshot: Value = serde_json::from_slice(&packaged.snapshot.canonical_json())?;
    let snapshot = SnapshotView::from_json(&snapshot).context("the snapshot does not read back")?;
    let runtime = RuntimeOptions {
        controller_url: TEST_CONTROLLER_URL.to_owned(),
        workspace: TEST_WORKSPACE.to_owned(),
        callback_url: Some(TEST_CALLBACK_URL.to_owned()),
        prompts: prompt_texts_of_manifest(agent, tree, limits),
        ..Default::default()
    };
    let dispatch = DispatchContext {
        task_id: TEST_TASK_ID.to_owned(),
        payload,
    };
    Ok(render_runtime_env(&snapshot, &dispatch, &runtime)?)
}

fn print_env(rendered: &RenderedEnv, secrets: &BTreeSet<String>) -> std::io::Result<()> {
    outln!("environment:")?;
    for (name, value) in &rendered.vars {
        let shown = if name == "ASTROLIFT_CLUSTER_KEY" {
            MASK.to_owned()
        } else {
            mask(value, secrets)
        };
        outln!("{name}={}", shown.replace('\n', "\\n"))?;
    }
    for warning in &rendered.warnings {
        eprintln!("warning: {}: {}", warning.name, warning.message);
    }
    Ok(())
}

/// What to do about `dispatch --env-spec NAME` refused for `project`: a command that
/// runs as pasted (docs/reference.md §15). A missing spec is defined with the agent
/// type and runtime of another spec of the project, or example values said to be
/// examples; a spec of no project gets the project, keeping what it has; a spec of
/// another project is left alone (redefining it would take it from its project).
async fn env_spec_next_step(
    state: &dyn StateStore,
    name: &str,
    project: &str,
    refusal: EnvSpecRefusal,
) -> anyhow::Result<String> {
    let specs = state.list_env_specs().await?;
    Ok(match refusal {
        EnvSpecRefusal::OtherProject => format!(
            "name an env spec of project {project} (`astrolift env-spec list`), or define one \
             under another name with `astrolift env-spec upsert`"
        ),
        EnvSpecRefusal::NoProject => {
            let spec = specs.iter().find(|spec| spec.name == name);
            let agent_type = spec.and_then(|s| s.agent_type.as_deref());
            let runtime = spec.and_then(|s| s.runtime.as_deref());
            let upsert = env_spec_upsert_with_config(
                name,
                project,
                agent_type.unwrap_or(EXAMPLE_AGENT_TYPE),
                runtime.unwrap_or(EXAMPLE_RUNTIME),
                spec.and_then(|s| s.config_manifest()),
            );
            let examples = if agent_type.is_some() && runtime.is_some() {
                String::new()
            } else {
                format!(
                    " (`{EXAMPLE_AGENT_TYPE}` and `{EXAMPLE_RUNTIME}` are examples: name the runtime's)"
                )
            };
            format!("give it the project with `{upsert}`{examples}")
        }
        EnvSpecRefusal::Missing => {
            let sibling = specs.iter().find_map(|spec| {
                (spec.project_id.as_deref() == Some(project))
                    .then(|| {
                        Some((
                            spec.name.as_str(),
                            spec.agent_type.as_deref()?,
                            spec.runtime.as_deref()?,
                        ))
                    })
                    .flatten()
            });
            match sibling {
                Some((other, agent_type, runtime)) => format!(
                    "define it with `{}` (the agent type and runtime of env spec {other})",
                    env_spec_upsert_command(name, project, agent_type, runtime)
                ),
                None => format!(
                    "define it with `{}` (`{EXAMPLE_AGENT_TYPE}` and `{EXAMPLE_RUNTIME}` are \
                     examples: name the runtime's)",
                    env_spec_upsert_command(name, project, EXAMPLE_AGENT_TYPE, EXAMPLE_RUNTIME)
                ),
            }
        }
    })
}
