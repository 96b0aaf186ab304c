//! Registration state: `register-repo`, `unregister-repo`, `env-spec upsert|list|show`, `agents
//! list` (and `agents list --previews`), `history AGENT`, `teardown AGENT`.

use std::process::ExitCode;

use anyhow::{Context, bail};
use astrolift_cli::render::short_hash;
use astrolift_dispatch::layers::{LayerState, agent_layer_state};
use astrolift_store::StateStore;
use astrolift_store::state::{
    Agent, AgentStatus, EnvSpec, Preview, PreviewStatus, RepoRegistration, covering_registration,
};
use astrolift_sync::commands::unregister_command;

use super::stores::{StoreArgs, now, runtime};
use crate::output::outln;

#[derive(Debug, clap::Args)]
pub struct RegisterRepoArgs {
    /// The repository, `owner/name`.
    #[arg(value_name = "OWNER/REPO")]
    repository: String,
    /// The project its agents belong to (1-128 of `A-Z a-z 0-9 _+=.@-`).
    #[arg(long, value_parser = super::project_id)]
    project_id: String,
    /// The ref whose pushes register agents; other refs are checked only.
    #[arg(long = "ref", default_value = super::DEFAULT_REF)]
    git_ref: String,
    /// Register only this manifest (repository-relative path of an `astrolift.toml`).
    /// Without it, the registration covers every discovered manifest. A manifest is
    /// covered by at most one registration: an overlapping one is refused.
    #[arg(long)]
    manifest_path: Option<String>,
    /// The GitHub App installation that can read the repository.
    #[arg(long)]
    installation_id: Option<u64>,
    /// Preview the agents it covers on its ref's pull requests. Off without it: registering
    /// again without `--previews` turns previews off.
    #[arg(long)]
    previews: bool,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct UnregisterRepoArgs {
    /// The repository, `owner/name`.
    #[arg(value_name = "OWNER/REPO")]
    repository: String,
    /// The manifest of a per-manifest registration; without it, the registration of
    /// every manifest.
    #[arg(long)]
    manifest_path: Option<String>,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct EnvSpecUpsertArgs {
    /// The env spec's name, e.g. `triage-prod`.
    name: String,
    /// The project it belongs to: only agents registered under this project
    /// may name it (in a trigger's `env_spec` or at dispatch).
    #[arg(long, value_parser = super::project_id)]
    project_id: String,
    /// The agent type the runtime starts, e.g. `claude`.
    #[arg(long)]
    agent_type: String,
    /// The runtime, e.g. `claude-code` or `claude-code-vnc` (`*-vnc` runtimes get the
    /// VNC variables).
    #[arg(long)]
    runtime: String,
    /// The config repository, `owner/name` (with `--manifest-path`).
    #[arg(long, requires = "manifest_path")]
    config_repo: Option<String>,
    /// The config manifest's path in that repository (with `--config-repo`).
    #[arg(long, requires = "config_repo")]
    manifest_path: Option<String>,
    /// Let pull requests' previews use it. Off without it: upserting again without
    /// `--previews` clears it.
    #[arg(long)]
    previews: bool,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct EnvSpecListArgs {
    /// `human` or `json` (one array of env spec records).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct EnvSpecShowArgs {
    /// The env spec's name.
    name: String,
    /// `human` or `json` (the env spec record).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct AgentsListArgs {
    /// Only this repository.
    #[arg(long = "repo", value_name = "OWNER/REPO")]
    repository: Option<String>,
    /// `human` or `json` (one array of agent records).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    /// List the active previews of pull requests instead of the registered agents.
    #[arg(long)]
    previews: bool,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// The agent: its name, its alias, or `OWNER/REPO:path/to/astrolift.toml`.
    agent: String,
    /// The repository, when the name is not unique.
    #[arg(long = "repo", value_name = "OWNER/REPO")]
    repository: Option<String>,
    /// `human` or `json`.
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    Human,
    Json,
}

pub fn register_repo(args: RegisterRepoArgs) -> anyhow::Result<ExitCode> {
    let manifest_path = registration_key(&args.repository, args.manifest_path.as_deref())?;
    with_state(&args.stores, async |state| {
        let registration = RepoRegistration {
            repository: args.repository.clone(),
            installation_id: args.installation_id,
            project_id: args.project_id.clone(),
            registered_ref: args.git_ref.clone(),
            manifest_path: manifest_path.clone(),
            updated_at: now(),
            last_sync: None,
            previews: args.previews,
        };
        state
            .put_registration(&registration)
            .await
            .with_context(|| format!("cannot register {}", registration.scope()))?;
        let previews = if registration.previews {
            format!("; pull requests to {} preview its agents", args.git_ref)
        } else {
            String::new()
        };
        outln!(
            "registered {} for project {}: pushes to {} register its agents, other refs are checked only{previews}",
            registration.scope(),
            args.project_id,
            args.git_ref
        )?;
        Ok(())
    })
}

pub fn unregister_repo(args: UnregisterRepoArgs) -> anyhow::Result<ExitCode> {
    let manifest_path = registration_key(&args.repository, args.manifest_path.as_deref())?;
    with_state(&args.stores, async |state| {
        let scope = match &manifest_path {
            Some(path) => format!("{}:{path}", args.repository),
            None => format!("every manifest of {}", args.repository),
        };
        if !state
            .delete_registration(&args.repository, manifest_path.as_deref())
            .await?
        {
            // What to try next: a registration is removed as it was made, on its store.
            let hint = match &manifest_path {
                Some(_) => "check the repository, the --manifest-path",
                None => {
                    "a registration made with --manifest-path is removed with that \
                     --manifest-path; check the repository"
                }
            };
            bail!(
                "no registration of {scope} on {}: {hint}, and that --state (or \
                 ASTROLIFT_STATE) names the store `register-repo` wrote to",
                state.location()
            );
        }
        outln!("unregistered {scope}; its agents stay registered as they are")?;
        Ok(())
    })
}

/// Checks a registration's key: `OWNER/REPO` and the optional `--manifest-path`, which it
/// returns normalized.
fn registration_key(
    repository: &str,
    manifest_path: Option<&str>,
) -> anyhow::Result<Option<String>> {
    if !is_repository_name(repository) {
        bail!("{repository}: expected OWNER/REPO");
    }
    manifest_path.map(manifest_path_arg).transpose()
}

/// `--manifest-path`: a repository-relative POSIX path of an `astrolift.toml`,
/// normalized (no `./`, no empty components), as discovery names manifests.
fn manifest_path_arg(path: &str) -> anyhow::Result<String> {
    let normalized = astrolift_manifest::paths::normalize_relative(path)
        .map_err(|problem| anyhow::anyhow!("--manifest-path {path:?}: {problem}"))?;
    if astrolift_manifest::paths::file_name(&normalized)
        != astrolift_manifest::discovery::MANIFEST_FILE
    {
        bail!(
            "--manifest-path {path:?}: expected the path of an `{}` in the repository",
            astrolift_manifest::discovery::MANIFEST_FILE
        );
    }
    Ok(normalized)
}

pub fn env_spec_upsert(args: EnvSpecUpsertArgs) -> anyhow::Result<ExitCode> {
    for (what, value) in [
        ("--agent-type", &args.agent_type),
        ("--runtime", &args.runtime),
        ("the env spec name", &args.name),
    ] {
        if !is_env_spec_word(value) {
            bail!("{what} {value:?}: expected 1-64 of a-z, 0-9, `-`, `_` and `.`");
        }
    }
    if args.project_id.is_empty() {
        bail!("--project-id must not be empty");
    }
    if let Some(repo) = &args.config_repo
        && !is_repository_name(repo)
    {
        bail!("--config-repo {repo}: expected OWNER/REPO");
    }
    let manifest_path = args
        .manifest_path
        .as_deref()
        .map(|path| {
            astrolift_manifest::paths::normalize_relative(path)
                .map_err(|problem| anyhow::anyhow!("--manifest-path {path:?}: {problem}"))
        })
        .transpose()?;
    with_state(&args.stores, async |state| {
        let spec = EnvSpec {
            name: args.name.clone(),
            project_id: Some(args.project_id.clone()),
            agent_type: Some(args.agent_type.clone()),
            runtime: Some(args.runtime.clone()),
            config_repo: args.config_repo.clone().unwrap_or_default(),
            manifest_path: manifest_path.clone().unwrap_or_default(),
            updated_at: now(),
            previews: args.previews,
        };
        state.put_env_spec(&spec).await?;
        outln!("env spec {}", describe_env_spec(&spec))?;
        Ok(())
    })
}

pub fn env_spec_list(args: EnvSpecListArgs) -> anyhow::Result<ExitCode> {
    with_state(&args.stores, async |state| {
        let specs = state.list_env_specs().await?;
        print_list(&specs, args.format, describe_env_spec, "env specs")
    })
}

pub fn env_spec_show(args: EnvSpecShowArgs) -> anyhow::Result<ExitCode> {
    with_state(&args.stores, async |state| {
        let spec = state
            .get_env_spec(&args.name)
            .await?
            .with_context(|| format!("no env spec is named {}", args.name))?;
        match args.format {
            ListFormat::Json => outln!("{}", serde_json::to_string(&spec)?)?,
            ListFormat::Human => outln!("{}", describe_env_spec(&spec))?,
        }
        Ok(())
    })
}

/// Prints `records` as one JSON array, or one line each and a count of `noun`.
pub(super) fn print_list<T: serde::Serialize>(
    records: &[T],
    format: ListFormat,
    describe: impl Fn(&T) -> String,
    noun: &str,
) -> anyhow::Result<()> {
    match format {
        ListFormat::Json => outln!("{}", serde_json::to_string(records)?)?,
        ListFormat::Human => {
            for record in records {
                outln!("{}", describe(record))?;
            }
            outln!("{} {noun}", records.len())?;
        }
    }
    Ok(())
}

/// `triage-prod: project p, agent type claude, runtime claude-code-vnc, config o/r:path`.
fn describe_env_spec(spec: &EnvSpec) -> String {
    let unset = "(unset)";
    let config = spec.config_manifest().map_or_else(
        || "none".to_owned(),
        |(repo, path)| format!("{repo}:{path}"),
    );
    let previews = if spec.previews { ", for previews" } else { "" };
    format!(
        "{}: project {}, agent type {}, runtime {}, config {config}{previews}",
        spec.name,
        spec.project_id.as_deref().unwrap_or(unset),
        spec.agent_type.as_deref().unwrap_or(unset),
        spec.runtime.as_deref().unwrap_or(unset),
    )
}

/// An env spec name, agent type or runtime: 1-64 characters of lowercase
/// ASCII letters, digits, `-`, `_` and `.` (they appear in logs, keys and variables).
fn is_env_spec_word(word: &str) -> bool {
    (1..=64).contains(&word.len())
        && word
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
}

pub fn agents_list(args: AgentsListArgs) -> anyhow::Result<ExitCode> {
    if args.previews {
        return previews_list(&args);
    }
    with_state(&args.stores, async |state| {
        let agents = all_agents(state, args.repository.as_deref()).await?;
        let mut layers = Vec::with_capacity(agents.len());
        for agent in &agents {
            layers.push(agent_layer_state(state, agent).await?);
        }
        match args.format {
            ListFormat::Json => {
                let rows = agents
                    .iter()
                    .zip(&layers)
                    .map(|(agent, layers)| agent_json(agent, layers))
                    .collect::<Result<Vec<_>, _>>()?;
                outln!("{}", serde_json::to_string(&rows)?)?;
            }
            ListFormat::Human => {
                for (a, layers) in agents.iter().zip(&layers) {
                    let layers = layers
                        .name()
                        .map_or(String::new(), |name| format!(" (layers-{name})"));
                    outln!(
                        "{:<10} {:<24} v{:<4} {:<14} {}:{}{layers}",
                        a.status.as_str(),
                        a.name,
                        a.version,
                        short_hash(&a.snapshot_hash),
                        a.repository,
                        a.manifest_path
                    )?;
                }
                outln!("{}", astrolift_cli::render::plural(agents.len(), "agent"))?;
            }
        }
        Ok(())
    })
}

/// An agent record as JSON, plus `layers` (`pending`, `ready`, `failed`) and, when
/// failed, `layers_error`, for an agent whose package needs dependency layers
/// (docs/reference.md "Dependency layers"); other agents' records are as they were.
fn agent_json(agent: &Agent, layers: &LayerState) -> anyhow::Result<serde_json::Value> {
    let mut row = serde_json::to_value(agent)?;
    if let (Some(name), Some(object)) = (layers.name(), row.as_object_mut()) {
        object.insert("layers".to_owned(), serde_json::json!(name));
        if let LayerState::Failed(error) = layers {
            object.insert("layers_error".to_owned(), serde_json::json!(error));
        }
    }
    Ok(row)
}

/// `agents list --previews`: the active previews of every registered repository (or of
/// `--repo`), by repository, then pull request and manifest (docs/reference.md §3).
fn previews_list(args: &AgentsListArgs) -> anyhow::Result<ExitCode> {
    with_state(&args.stores, async |state| {
        let previews = active_previews(state, args.repository.as_deref()).await?;
        match args.format {
            ListFormat::Json => {
                let mut rows = Vec::with_capacity(previews.len());
                for preview in &previews {
                    let agent = preview.as_agent();
                    let layers = agent_layer_state(state, &agent).await?;
                    let mut row = agent_json(&agent, &layers)?;
                    if let Some(object) = row.as_object_mut() {
                        object.insert(
                            "preview".to_owned(),
                            serde_json::json!({
                                "pull_request": preview.pull_request,
                                "head_sha": preview.head_sha,
                            }),
                        );
                    }
                    rows.push(row);
                }
                outln!("{}", serde_json::to_string(&rows)?)?;
            }
            ListFormat::Human => {
                for p in &previews {
                    outln!(
                        "{:<24} #{:<5} head {:<12} snapshot {:<12} {}:{}",
                        p.name,
                        p.pull_request,
                        short_hash(&p.head_sha),
                        short_hash(&p.snapshot_hash),
                        p.repository,
                        p.manifest_path
                    )?;
                }
                outln!(
                    "{}",
                    astrolift_cli::render::plural(previews.len(), "preview")
                )?;
            }
        }
        Ok(())
    })
}

pub fn history(args: AgentArgs) -> anyhow::Result<ExitCode> {
    with_state(&args.stores, async |state| {
        let agent = find_agent(state, &args.agent, args.repository.as_deref()).await?;
        let events = state.list_audit_events(&agent.key()).await?;
        match args.format {
            ListFormat::Json => outln!("{}", serde_json::to_string(&events)?)?,
            ListFormat::Human => {
                for e in &events {
                    let action = serde_json::to_value(e.action)?;
                    outln!(
                        "v{:<4} {:<12} commit {:<12} snapshot {:<12} {}",
                        e.version,
                        action.as_str().unwrap_or_default(),
                        short_hash(&e.commit),
                        short_hash(&e.snapshot_hash),
                        e.detail
                    )?;
                }
            }
        }
        Ok(())
    })
}

pub fn teardown(args: AgentArgs) -> anyhow::Result<ExitCode> {
    with_state(&args.stores, async |state| {
        let agent = find_agent(state, &args.agent, args.repository.as_deref()).await?;
        let user = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
        let torn = state
            .teardown(
                &agent.key(),
                now(),
                &format!("astrolift teardown by {user}"),
            )
            .await
            .with_context(|| format!("cannot tear down {}", agent.key()))?;
        outln!(
            "torn down {} ({}); its audit history is kept",
            torn.name,
            torn.key()
        )?;
        // The registration that covers it registers it again at the next push while the
        // manifest is in the repository: say so, and how to keep it away.
        let registrations = state
            .list_repository_registrations(&agent.repository)
            .await?;
        if let Some(covering) = covering_registration(&registrations, &agent.manifest_path) {
            eprintln!(
                "warning: {} is still registered (ref {}, project {}): while {} is in the \
                 repository, the next push to {} registers the agent again. Remove the \
                 manifest, or unregister it: `{}`",
                agent.repository,
                covering.registered_ref,
                covering.project_id,
                agent.manifest_path,
                covering.registered_ref,
                unregister_command(&agent.repository, covering.manifest_path.as_deref())
            );
        }
        Ok(())
    })
}

/// Runs one state command on a fresh runtime; exits 0 when it succeeds.
pub(super) fn with_state(
    stores: &StoreArgs,
    command: impl AsyncFnOnce(&dyn StateStore) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let state = stores.state().await?;
        command(state.as_ref()).await?;
        Ok(ExitCode::SUCCESS)
    })
}

/// `repository`, or every registered repository, each once, in order.
async fn listed_repositories(
    state: &dyn StateStore,
    repository: Option<&str>,
) -> anyhow::Result<Vec<String>> {
    Ok(match repository {
        Some(repository) => vec![repository.to_owned()],
        None => {
            let mut repositories: Vec<String> = state
                .list_registrations()
                .await?
                .into_iter()
                .map(|r| r.repository)
                .collect();
            // A repository may hold several registrations (one per manifest).
            repositories.dedup();
            repositories
        }
    })
}

/// Every agent of every registered repository (or of `repository`).
async fn all_agents(
    state: &dyn StateStore,
    repository: Option<&str>,
) -> anyhow::Result<Vec<Agent>> {
    let mut agents = Vec::new();
    for repository in listed_repositories(state, repository).await? {
        agents.extend(state.list_agents(&repository).await?);
    }
    Ok(agents)
}

/// The active previews of every registered repository, or of `repository`.
async fn active_previews(
    state: &dyn StateStore,
    repository: Option<&str>,
) -> anyhow::Result<Vec<Preview>> {
    let mut previews = Vec::new();
    for repository in listed_repositories(state, repository).await? {
        previews.extend(
            state
                .previews()
                .list_previews(&repository)
                .await?
                .into_iter()
                .filter(|p| p.status == PreviewStatus::Active),
        );
    }
    Ok(previews)
}

/// Resolves an agent by `OWNER/REPO:manifest`, name or alias; refuses an ambiguous name.
pub async fn find_agent(
    state: &dyn StateStore,
    wanted: &str,
    repository: Option<&str>,
) -> anyhow::Result<Agent> {
    if let Some((repo, manifest)) = wanted.split_once(':') {
        let key = astrolift_store::state::AgentKey::new(repo, manifest);
        return state
            .get_agent(&key)
            .await?
            .with_context(|| format!("no agent {wanted}"));
    }
    let matches = named_agents(state, wanted, repository).await?;
    if matches.is_empty() {
        bail!("no registered agent is named {wanted}");
    }
    only_one(wanted, matches, |a| a.key().to_string())
}

/// What `astrolift dispatch NAME` runs (docs/reference.md §17): the registered agent so
/// named ([`find_agent`]); else the active preview so named (`<agent>-pr<N>`), as the agent
/// it runs as, with `preview` set so that its env spec is held to the previews rule.
pub async fn find_dispatch_target(
    state: &dyn StateStore,
    wanted: &str,
    repository: Option<&str>,
) -> anyhow::Result<(Agent, bool)> {
    if wanted.contains(':') {
        return Ok((find_agent(state, wanted, repository).await?, false));
    }
    let agents = named_agents(state, wanted, repository).await?;
    if !agents.is_empty() {
        return Ok((only_one(wanted, agents, |a| a.key().to_string())?, false));
    }
    let previews: Vec<Preview> = active_previews(state, repository)
        .await?
        .into_iter()
        .filter(|p| p.name == wanted)
        .collect();
    if previews.is_empty() {
        bail!("no registered agent or active preview is named {wanted}");
    }
    let preview = only_one(wanted, previews, |p| {
        format!(
            "{}:{} (pull request #{})",
            p.repository, p.manifest_path, p.pull_request
        )
    })?;
    Ok((preview.as_agent(), true))
}

/// The registered agents named (or aliased) `wanted`, with torn-down ones only by name.
async fn named_agents(
    state: &dyn StateStore,
    wanted: &str,
    repository: Option<&str>,
) -> anyhow::Result<Vec<Agent>> {
    Ok(all_agents(state, repository)
        .await?
        .into_iter()
        .filter(|a| a.status != AgentStatus::TornDown || a.name == wanted)
        .filter(|a| a.name == wanted || a.alias.as_deref() == Some(wanted))
        .collect())
}

/// The one of `matches` (not empty), or an error listing them by `key`.
fn only_one<T>(wanted: &str, mut matches: Vec<T>, key: impl Fn(&T) -> String) -> anyhow::Result<T> {
    if matches.len() == 1 {
        return Ok(matches.remove(0));
    }
    let keys: Vec<_> = matches.iter().map(key).collect();
    bail!(
        "{wanted} is ambiguous: {}; pass --repo or OWNER/REPO:manifest",
        keys.join(", ")
    )
}

pub fn is_repository_name(name: &str) -> bool {
    let valid = |part: &str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    matches!(name.split_once('/'), Some((owner, repo)) if valid(owner) && valid(repo))
}
