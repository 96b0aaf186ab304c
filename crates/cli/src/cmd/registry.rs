//! Registration state: `register-repo`, `env-spec upsert`, `agents list`,
//! `history AGENT`, `teardown AGENT`.

use std::process::ExitCode;

use anyhow::{Context, bail};
use astrolift_store::StateStore;
use astrolift_store::state::{Agent, AgentStatus, EnvSpec, RepoRegistration};

use super::stores::{StoreArgs, now, runtime};

#[derive(Debug, clap::Args)]
pub struct RegisterRepoArgs {
    /// The repository, `owner/name`.
    #[arg(value_name = "OWNER/REPO")]
    repository: String,
    /// The project its agents belong to.
    #[arg(long)]
    project_id: String,
    /// The ref whose pushes register agents; other refs are checked only.
    #[arg(long = "ref", default_value = "main")]
    git_ref: String,
    /// Restrict discovery to one manifest.
    #[arg(long)]
    manifest_path: Option<String>,
    /// The GitHub App installation that can read the repository.
    #[arg(long)]
    installation_id: Option<u64>,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct EnvSpecUpsertArgs {
    /// The env spec's name, e.g. `triage-prod`.
    name: String,
    /// The project it belongs to: only agents registered under this project
    /// may name it (in a trigger's `env_spec` or at dispatch).
    #[arg(long)]
    project_id: String,
    /// The config repository, `owner/name`.
    #[arg(long)]
    config_repo: String,
    /// The config manifest's path in that repository.
    #[arg(long)]
    manifest_path: String,
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
    if !is_repository_name(&args.repository) {
        bail!("{}: expected OWNER/REPO", args.repository);
    }
    with_state(&args.stores, async |state| {
        let registration = RepoRegistration {
            repository: args.repository.clone(),
            installation_id: args.installation_id,
            project_id: args.project_id.clone(),
            registered_ref: args.git_ref.clone(),
            manifest_path: args.manifest_path.clone(),
            updated_at: now(),
        };
        state.put_registration(&registration).await?;
        println!(
            "registered {} for project {}: pushes to {} register agents, other refs are checked only",
            args.repository, args.project_id, args.git_ref
        );
        Ok(())
    })
}

pub fn env_spec_upsert(args: EnvSpecUpsertArgs) -> anyhow::Result<ExitCode> {
    with_state(&args.stores, async |state| {
        let spec = EnvSpec {
            name: args.name.clone(),
            project_id: Some(args.project_id.clone()),
            config_repo: args.config_repo.clone(),
            manifest_path: args.manifest_path.clone(),
            updated_at: now(),
        };
        state.put_env_spec(&spec).await?;
        println!(
            "env spec {} of project {} → {}:{}",
            spec.name, args.project_id, spec.config_repo, spec.manifest_path
        );
        Ok(())
    })
}

pub fn agents_list(args: AgentsListArgs) -> anyhow::Result<ExitCode> {
    with_state(&args.stores, async |state| {
        let agents = all_agents(state, args.repository.as_deref()).await?;
        match args.format {
            ListFormat::Json => println!("{}", serde_json::to_string(&agents)?),
            ListFormat::Human => {
                for a in &agents {
                    println!(
                        "{:<10} {:<24} v{:<4} {:<14} {}:{}",
                        a.status.as_str(),
                        a.name,
                        a.version,
                        a.snapshot_hash.get(..12).unwrap_or(&a.snapshot_hash),
                        a.repository,
                        a.manifest_path
                    );
                }
                println!("{} agents", agents.len());
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
            ListFormat::Json => println!("{}", serde_json::to_string(&events)?),
            ListFormat::Human => {
                for e in &events {
                    let action = serde_json::to_value(e.action)?;
                    println!(
                        "v{:<4} {:<12} commit {:<12} snapshot {:<12} {}",
                        e.version,
                        action.as_str().unwrap_or_default(),
                        e.commit.get(..12).unwrap_or(&e.commit),
                        e.snapshot_hash.get(..12).unwrap_or(&e.snapshot_hash),
                        e.detail
                    );
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
        println!(
            "torn down {} ({}); its audit history is kept",
            torn.name,
            torn.key()
        );
        Ok(())
    })
}

/// Runs one state command on a fresh runtime; exits 0 when it succeeds.
fn with_state(
    stores: &StoreArgs,
    command: impl AsyncFnOnce(&dyn StateStore) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let state = stores.state().await?;
        command(state.as_ref()).await?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Every agent of every registered repository (or of `repository`).
async fn all_agents(
    state: &dyn StateStore,
    repository: Option<&str>,
) -> anyhow::Result<Vec<Agent>> {
    let repositories = match repository {
        Some(repository) => vec![repository.to_owned()],
        None => state
            .list_registrations()
            .await?
            .into_iter()
            .map(|r| r.repository)
            .collect(),
    };
    let mut agents = Vec::new();
    for repository in repositories {
        agents.extend(state.list_agents(&repository).await?);
    }
    Ok(agents)
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
    let matches: Vec<Agent> = all_agents(state, repository)
        .await?
        .into_iter()
        .filter(|a| a.status != AgentStatus::TornDown || a.name == wanted)
        .filter(|a| a.name == wanted || a.alias.as_deref() == Some(wanted))
        .collect();
    match matches.as_slice() {
        [agent] => Ok(agent.clone()),
        [] => bail!("no registered agent is named {wanted}"),
        many => {
            let keys: Vec<_> = many.iter().map(|a| a.key().to_string()).collect();
            bail!(
                "{wanted} is ambiguous: {}; pass --repo or OWNER/REPO:manifest",
                keys.join(", ")
            )
        }
    }
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
