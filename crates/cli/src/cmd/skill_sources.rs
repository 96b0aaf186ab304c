//! Where remote skills come from (docs/reference.md §5.1, "Remote skills"): `skill-repo register|list|remove` (an
//! organization skill repository under a project's alias) and `catalogue register|show`
//! (the deployment's one catalogue repository and ref).
//!
//! Registering reaches no GitHub, like `register-repo`: whether the App can read the
//! repository is found out when a reference to it is resolved (`skill/repo-not-installed`
//! on the manifest line, at the next sync or `check`, docs/reference.md §5.1).
//!
//! A source may instead be `file:PATH`, a local directory the CLI reads as it is
//! (`astrolift_sync::local_skills`): `PATH` is made absolute here, relative to the current
//! directory, with its symlinks resolved, and must be a directory; it is stored as
//! `file:/abs/path` in the record's `repository`, and listed as it is stored.

use std::process::ExitCode;

use anyhow::{Context, bail};
use astrolift_manifest::paths::is_slug;
use astrolift_store::state::{Catalogue, SkillRepo};
use astrolift_sync::local_skills::LOCAL_SCHEME;

use super::registry::{ListFormat, is_repository_name, print_list, with_state};
use super::stores::{StoreArgs, now};
use crate::output::outln;

#[derive(Debug, clap::Args)]
pub struct SkillRepoRegisterArgs {
    /// The alias manifests write first in `"ALIAS/path/to/skill@ref"`: a slug.
    alias: String,
    /// The repository holding the skills, `owner/name`, or `file:PATH`, a local directory
    /// the CLI reads as it is (never the App).
    #[arg(value_name = "OWNER/REPO|file:PATH")]
    repository: String,
    /// The project whose agents may use the alias (aliases are per project).
    #[arg(long, value_parser = super::project_id)]
    project_id: String,
    /// `human` or `json` (the skill repository record).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct SkillRepoListArgs {
    /// Only this project's aliases.
    #[arg(long)]
    project_id: Option<String>,
    /// `human` or `json` (one array of skill repository records).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct SkillRepoRemoveArgs {
    /// The alias to remove.
    alias: String,
    /// The project it is registered for.
    #[arg(long)]
    project_id: String,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct CatalogueRegisterArgs {
    /// The catalogue repository, `owner/name`, holding `skills/<name>/<version>/SKILL.md`,
    /// or `file:PATH`, a local directory the CLI reads as it is (never the App).
    #[arg(value_name = "OWNER/REPO|file:PATH")]
    repository: String,
    /// The branch whose commit catalogue references resolve at.
    #[arg(long = "ref", default_value = super::DEFAULT_REF)]
    git_ref: String,
    /// `human` or `json` (the catalogue record).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct CatalogueShowArgs {
    /// `human` or `json` (the catalogue record).
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    format: ListFormat,
    #[command(flatten)]
    stores: StoreArgs,
}

pub fn skill_repo_register(args: SkillRepoRegisterArgs) -> anyhow::Result<ExitCode> {
    if !is_slug(&args.alias) {
        bail!(
            "alias {:?}: expected a slug (1-64 of a-z, 0-9 and `-`)",
            args.alias
        );
    }
    let repository = source_repository(&args.repository)?;
    if args.project_id.is_empty() {
        bail!("--project-id must not be empty");
    }
    with_state(&args.stores, async |state| {
        let repo = SkillRepo {
            project_id: args.project_id.clone(),
            alias: args.alias.clone(),
            repository: repository.clone(),
            updated_at: now(),
        };
        state.skills().put_skill_repo(&repo).await?;
        match args.format {
            ListFormat::Json => outln!("{}", serde_json::to_string(&repo)?)?,
            ListFormat::Human => outln!(
                "skill repo {}; `{}/path/to/skill@ref` in its agents resolves there",
                describe_skill_repo(&repo),
                repo.alias
            )?,
        }
        Ok(())
    })
}

pub fn skill_repo_list(args: SkillRepoListArgs) -> anyhow::Result<ExitCode> {
    with_state(&args.stores, async |state| {
        let repos = state
            .skills()
            .list_skill_repos(args.project_id.as_deref())
            .await?;
        print_list(&repos, args.format, describe_skill_repo, "skill repos")
    })
}

pub fn skill_repo_remove(args: SkillRepoRemoveArgs) -> anyhow::Result<ExitCode> {
    with_state(&args.stores, async |state| {
        if !state
            .skills()
            .delete_skill_repo(&args.project_id, &args.alias)
            .await?
        {
            bail!(
                "project {} has no skill repo aliased {}",
                args.project_id,
                args.alias
            );
        }
        outln!(
            "removed skill repo {} of project {}; agents registered with it stay as they are",
            args.alias,
            args.project_id
        )?;
        Ok(())
    })
}

pub fn catalogue_register(args: CatalogueRegisterArgs) -> anyhow::Result<ExitCode> {
    let repository = source_repository(&args.repository)?;
    if args.git_ref.is_empty() {
        bail!("--ref must not be empty");
    }
    with_state(&args.stores, async |state| {
        let catalogue = Catalogue {
            repository: repository.clone(),
            registered_ref: args.git_ref.clone(),
            updated_at: now(),
        };
        state.skills().put_catalogue(&catalogue).await?;
        print_catalogue(&catalogue, args.format)
    })
}

pub fn catalogue_show(args: CatalogueShowArgs) -> anyhow::Result<ExitCode> {
    with_state(&args.stores, async |state| {
        let Some(catalogue) = state.skills().get_catalogue().await? else {
            bail!("no catalogue is registered; run `astrolift catalogue register OWNER/REPO`");
        };
        print_catalogue(&catalogue, args.format)
    })
}

fn print_catalogue(catalogue: &Catalogue, format: ListFormat) -> anyhow::Result<()> {
    match format {
        ListFormat::Json => outln!("{}", serde_json::to_string(catalogue)?)?,
        ListFormat::Human => outln!(
            "catalogue {} at {}: `name@version` resolves to skills/<name>/<version>/",
            catalogue.repository,
            catalogue.registered_ref
        )?,
    }
    Ok(())
}

/// The `repository` a source is stored with: `owner/name` as given, or `file:PATH` with
/// `PATH` made absolute (relative to the current directory, symlinks resolved); a path
/// that is not a directory, or not UTF-8, is refused.
fn source_repository(source: &str) -> anyhow::Result<String> {
    let Some(path) = source.strip_prefix(LOCAL_SCHEME) else {
        if !is_repository_name(source) {
            bail!("{source}: expected OWNER/REPO or file:PATH");
        }
        return Ok(source.to_owned());
    };
    if path.is_empty() {
        bail!("{source}: expected a directory after `file:`");
    }
    let absolute = std::fs::canonicalize(path)
        .with_context(|| format!("{source}: cannot find the directory {path}"))?;
    if !absolute.is_dir() {
        bail!("{source}: {} is not a directory", absolute.display());
    }
    let Some(absolute) = absolute.to_str() else {
        bail!(
            "{source}: the path {} is not valid UTF-8",
            absolute.display()
        );
    };
    Ok(format!("{LOCAL_SCHEME}{absolute}"))
}

/// `steadymd -> steadymd/runbooks (project p)`.
fn describe_skill_repo(repo: &SkillRepo) -> String {
    format!(
        "{} -> {} (project {})",
        repo.alias, repo.repository, repo.project_id
    )
}
