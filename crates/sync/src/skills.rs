//! Catalogue and organization skills, resolved at sync (docs/reference.md §5.1, "Remote
//! skills").
//!
//! For the agents of one sync: each agent's project's aliases and the deployment's
//! catalogue are read from the [`SkillSourceStore`] (each once), each skill repository is
//! fetched once per (repository, ref) however many agents use it, through the caller's
//! [`SkillFetcher`] (the bot's asks GitHub as the installation covering the repository),
//! and every agent's references are resolved against those trees by
//! [`resolve_remote_skills`]. The crate stays free of GitHub: without a fetcher nothing is
//! looked up and every catalogue and organization reference is the warning
//! `skill/unresolved`, with the reason (docs/reference.md §5.1: a local run without
//! credentials reports them unresolved, never as errors). A source registered as
//! `file:PATH` is a local directory, read by [`crate::local_skills`]; the CLI's fetcher
//! ([`crate::local_skills::RoutedSkillFetcher`]) reads those and leaves every other source to
//! GitHub, or, without App credentials, unresolved ([`SkillFetcher::offline_reason`]).
//!
//! Decisions where the issue is silent:
//! - an agent covered by no registration has no project, so its organization references
//!   are `skill/unresolved` (it is checked only, never registered); its catalogue
//!   references resolve (the catalogue belongs to the deployment);
//! - a fetch that fails (GitHub down, a tarball refused) fails the sync, retried when
//!   transient, as an ancestry question does: a sync never registers an agent without a
//!   skill it names.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use astrolift_manifest::lock::{Lock, LockEntry};
use astrolift_manifest::model::{AgentManifest, SkillRef};
use astrolift_manifest::remote_skill::{
    Fetched, LockPin, RemoteSkill, RemoteSkillSources, resolve_remote_skills,
};
use astrolift_manifest::{Diagnostic, Limits};
use astrolift_package::{MountedTree, PayloadTree, RemoteSkillTree};
use astrolift_store::state::{Catalogue, SkillSource, SkillSourceStore};

use crate::SyncError;

/// What a skill source's `repository` starts with when it is a local directory.
pub const LOCAL_SCHEME: &str = "file:";

/// True when `repository` names a local directory (`file:PATH`), not a GitHub repository.
pub fn is_local_source(repository: &str) -> bool {
    repository.starts_with(LOCAL_SCHEME)
}

/// Why a reference is unresolved without a fetcher.
pub const NO_FETCHER: &str =
    "no GitHub App credentials are configured here, so skill repositories are not fetched";
/// Why a `file:` skill source is unresolved where it must not be read: the App's sync (the
/// functions and `serve`) never reads the disk it runs on for a registration
/// (docs/reference.md §5.1).
pub const LOCAL_ONLY: &str = "a `file:` skill source is only read by the local CLI \
     (`astrolift check` and `astrolift validate`), never by the App";
/// Why an organization reference of an agent without a project is unresolved.
pub const NO_PROJECT: &str = "no registration covers this manifest, so it has no project \
     whose skill repositories it could use";
/// Why a reference is unresolved where App credentials are configured but no state store is
/// named (`astrolift validate` without `--state`).
pub const NO_STATE: &str = "no state store is named here (`--state` or `ASTROLIFT_STATE`), \
     so the skill repositories and the catalogue are not known";

/// A fetched skill repository's tree.
pub type SkillTree = Arc<dyn PayloadTree + Send + Sync>;

/// What a [`SkillFetcher`] found for one repository at one ref.
#[derive(Clone)]
pub enum SkillFetch {
    /// The tree of `commit` (40 hex digits), the commit the ref names. `None`: no commit
    /// names the tree (a local directory that is not a Git checkout, read as it is on disk:
    /// [`crate::local_skills`]); its snapshot entry has no `commit`.
    Tree {
        commit: Option<String>,
        tree: SkillTree,
    },
    /// The App is not installed on the repository, or cannot read it.
    NotInstalled,
    /// The ref names no commit of the repository.
    UnknownRef,
    /// It cannot be asked here; `reason` says why ([`NO_FETCHER`] for a GitHub source where
    /// no App credentials are configured, [`LOCAL_ONLY`] for a `file:` source in the App).
    /// Each reference to it is the warning `skill/unresolved`, never an error.
    Unresolved { reason: String },
}

impl Debug for SkillFetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkillFetch::Tree { commit, .. } => f
                .debug_struct("Tree")
                .field("commit", commit)
                .finish_non_exhaustive(),
            SkillFetch::NotInstalled => f.write_str("NotInstalled"),
            SkillFetch::UnknownRef => f.write_str("UnknownRef"),
            SkillFetch::Unresolved { reason } => f
                .debug_struct("Unresolved")
                .field("reason", reason)
                .finish(),
        }
    }
}

pub use crate::error::SkillFetchError;

/// The answer of [`SkillFetcher::fetch`] (boxed: the trait is used as `dyn`).
pub type SkillFetchFuture<'a> =
    Pin<Box<dyn Future<Output = Result<SkillFetch, SkillFetchError>> + Send + 'a>>;

/// Fetches skill repositories: `repository` (`owner/name`, or `file:PATH` for a local
/// directory) at `git_ref` (a branch, tag or sha), resolved to a commit and read at that
/// commit.
pub trait SkillFetcher: Debug + Send + Sync {
    fn fetch<'a>(&'a self, repository: &'a str, git_ref: &'a str) -> SkillFetchFuture<'a>;

    /// `Some(reason)` when this fetcher asks no GitHub (a local run without App
    /// credentials, whose fetcher reads `file:` sources only): a reference whose source is
    /// not registered (no catalogue, an alias its project lacks) is then the warning
    /// `skill/unresolved` with `reason`, as without any fetcher, rather than an error, since
    /// a local run without credentials reports remote skills unresolved, never as errors
    /// (docs/reference.md §5.1). `None` (the default): every registration can be read, and
    /// a missing one is an error.
    fn offline_reason(&self) -> Option<&str> {
        None
    }
}

/// One agent's resolved remote skills, each with the tree it was read from.
#[derive(Clone, Default)]
pub(crate) struct AgentSkills(Vec<(RemoteSkill, SkillTree)>);

impl Debug for AgentSkills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(skill, _)| &skill.reference))
            .finish()
    }
}

impl AgentSkills {
    /// Each resolved skill with the tree it was read from.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(RemoteSkill, SkillTree)> {
        self.0.iter()
    }

    /// `base` with these skills mounted (exactly `base` when there are none).
    pub(crate) fn mount<'t>(&'t self, base: &'t dyn PayloadTree) -> MountedTree<'t> {
        let remote = self
            .0
            .iter()
            .map(|(skill, tree)| RemoteSkillTree {
                skill,
                tree: tree.as_ref(),
            })
            .collect();
        MountedTree::new(base, remote)
    }
}

/// What a sync resolves remote skills with.
pub(crate) struct SkillContext<'c> {
    pub state: &'c dyn SkillSourceStore,
    pub fetcher: Option<&'c dyn SkillFetcher>,
    pub limits: &'c Limits,
    /// Why an organization reference of an agent without a project is unresolved.
    pub no_project: &'c str,
    /// The repository's `astrolift.lock`: each reference is fetched at its pinned commit
    /// (docs/reference.md §5.7).
    pub lock: Option<&'c Lock>,
}

/// Resolves the remote skills of `agents` (each with its project, if known) without a sync
/// (`astrolift validate`): every finding is appended to `diagnostics`, and nothing is
/// packaged. As a sync resolves them when there are a state store (the aliases and the
/// catalogue) and a fetcher; otherwise each catalogue and organization reference is the
/// warning `skill/unresolved`, whose reason is [`NO_FETCHER`] without a fetcher, the
/// fetcher's [`SkillFetcher::offline_reason`] when it asks no GitHub, else [`NO_STATE`].
/// `no_project` is the reason for an organization reference of an agent without a project.
#[allow(clippy::too_many_arguments)]
pub async fn check_remote_skills(
    agents: &[(&AgentManifest, Option<String>)],
    state: Option<&dyn SkillSourceStore>,
    fetcher: Option<&dyn SkillFetcher>,
    lock: Option<&Lock>,
    limits: &Limits,
    no_project: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(), SyncError> {
    match (state, fetcher) {
        (Some(state), Some(fetcher)) => {
            let context = SkillContext {
                state,
                fetcher: Some(fetcher),
                limits,
                no_project,
                lock,
            };
            resolve_skills(agents, &context, diagnostics).await?;
        }
        (_, fetcher) => {
            let reason = match fetcher {
                None => NO_FETCHER,
                Some(fetcher) => fetcher.offline_reason().unwrap_or(NO_STATE),
            };
            let offline = Offline { reason, lock };
            for (manifest, _) in agents {
                resolve_remote_skills(manifest, &offline, limits, diagnostics);
            }
        }
    }
    Ok(())
}

/// The skill repositories (at the refs named) each agent's references name through a
/// registration, parallel to the agents: what dependents follow (docs/reference.md §5.1).
/// Named, not resolved: an agent whose skill failed to resolve still follows the repository
/// whose next push may fix it. Empty without a fetcher (nothing is looked up). A `file:`
/// source is never named: no push moves it, and reconcile asks GitHub for what is named.
pub(crate) type NamedSources = Vec<BTreeSet<SkillSource>>;

/// Resolves the remote skills of `agents` (each with the project it registers under, if
/// any), parallel to them; every finding is appended to `diagnostics`.
pub(crate) async fn resolve_skills(
    agents: &[(&AgentManifest, Option<String>)],
    context: &SkillContext<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(Vec<AgentSkills>, NamedSources), SyncError> {
    let sources = match context.fetcher {
        Some(fetcher) => Some(Sources::read(agents, context, fetcher).await?),
        None => None,
    };
    let named = sources
        .as_ref()
        .map_or_else(|| vec![BTreeSet::new(); agents.len()], |s| s.named.clone());
    let skills = agents
        .iter()
        .map(|(manifest, project)| {
            let Some(sources) = &sources else {
                let offline = Offline {
                    reason: NO_FETCHER,
                    lock: context.lock,
                };
                resolve_remote_skills(manifest, &offline, context.limits, diagnostics);
                return AgentSkills::default();
            };
            let view = AgentSources {
                sources,
                project: project.as_deref(),
                no_project: context.no_project,
                lock: context.lock,
            };
            let resolved = resolve_remote_skills(manifest, &view, context.limits, diagnostics);
            AgentSkills(
                resolved
                    .into_iter()
                    .filter_map(|skill| {
                        let tree = sources.tree_of(&skill)?;
                        Some((skill, tree))
                    })
                    .collect(),
            )
        })
        .collect();
    Ok((skills, named))
}

/// The registrations and fetched repositories a sync's agents name.
#[derive(Default)]
struct Sources {
    /// The repository of each (project, alias) asked; `None`: not registered.
    aliases: HashMap<(String, String), Option<String>>,
    catalogue: Option<Catalogue>,
    /// Each (repository, ref) fetched.
    fetched: HashMap<(String, String), SkillFetch>,
    /// What each agent names ([`NamedSources`]).
    named: NamedSources,
    /// At most this many are fetched ([`Limits::skill_repositories`]).
    limit: usize,
    /// Why a reference whose source is not registered is unresolved rather than an error
    /// ([`SkillFetcher::offline_reason`]).
    offline: Option<String>,
}

impl Sources {
    /// Reads the registrations `agents` name and fetches each repository (at most
    /// `limit` of them).
    async fn read(
        agents: &[(&AgentManifest, Option<String>)],
        context: &SkillContext<'_>,
        fetcher: &dyn SkillFetcher,
    ) -> Result<Sources, SyncError> {
        let mut sources = Sources {
            limit: context.limits.skill_repositories,
            offline: fetcher.offline_reason().map(str::to_owned),
            ..Sources::default()
        };
        let wanted = sources.wanted(agents, context).await?;
        // Bounded: a manifest can name any number of refs, each a tarball download.
        for (repository, git_ref) in wanted.into_iter().take(sources.limit) {
            let found = fetcher.fetch(&repository, &git_ref).await?;
            sources.fetched.insert((repository, git_ref), found);
        }
        Ok(sources)
    }

    /// Every (repository, ref) the agents' references name through a registration, in
    /// repository, then ref, order; the registrations they name are kept.
    async fn wanted(
        &mut self,
        agents: &[(&AgentManifest, Option<String>)],
        context: &SkillContext<'_>,
    ) -> Result<BTreeSet<(String, String)>, SyncError> {
        let mut wanted = BTreeSet::new();
        let mut catalogue_wanted = Vec::new();
        let mut catalogue_skills = Vec::new();
        for (index, (manifest, project)) in agents.iter().enumerate() {
            let mut named = BTreeSet::new();
            for skill in &manifest.skills {
                match (skill, project) {
                    (SkillRef::Catalogue { .. }, _) => {
                        catalogue_wanted.push(index);
                        catalogue_skills.push(skill);
                    }
                    (
                        SkillRef::Org {
                            repo_alias,
                            git_ref,
                            ..
                        },
                        Some(project),
                    ) => {
                        let repository = self.alias(context, project, repo_alias).await?;
                        if let Some(repository) = repository {
                            if !is_local_source(&repository) {
                                named.insert(SkillSource {
                                    repository: repository.clone(),
                                    git_ref: git_ref.clone(),
                                });
                            }
                            if let Some(at) = fetch_ref(context.lock, skill, &repository, git_ref) {
                                wanted.insert((repository, at));
                            }
                        }
                    }
                    _ => {}
                }
            }
            self.named.push(named);
        }
        if !catalogue_wanted.is_empty() {
            self.catalogue = context.state.get_catalogue().await?;
            if let Some(c) = &self.catalogue {
                let source = SkillSource {
                    repository: c.repository.clone(),
                    git_ref: c.registered_ref.clone(),
                };
                let indices = catalogue_wanted.into_iter();
                for index in indices.filter(|_| !is_local_source(&c.repository)) {
                    if let Some(named) = self.named.get_mut(index) {
                        named.insert(source.clone());
                    }
                }
                for skill in catalogue_skills {
                    if let Some(at) =
                        fetch_ref(context.lock, skill, &c.repository, &c.registered_ref)
                    {
                        wanted.insert((c.repository.clone(), at));
                    }
                }
            }
        }
        Ok(wanted)
    }

    /// The repository `project` registered as `alias`, read once per sync.
    async fn alias(
        &mut self,
        context: &SkillContext<'_>,
        project: &str,
        alias: &str,
    ) -> Result<Option<String>, SyncError> {
        let key = (project.to_owned(), alias.to_owned());
        if let Some(known) = self.aliases.get(&key) {
            return Ok(known.clone());
        }
        let found = context.state.get_skill_repo(project, alias).await?;
        let repository = found.map(|r| r.repository);
        self.aliases.insert(key, repository.clone());
        Ok(repository)
    }

    /// What was found for `repository` at `git_ref`, as the resolver reads it (every
    /// registered one was fetched, up to the limit).
    fn fetched(&self, repository: &str, git_ref: &str) -> Fetched<'_> {
        let key = (repository.to_owned(), git_ref.to_owned());
        let repository = repository.to_owned();
        match self.fetched.get(&key) {
            None => Fetched::OverLimit { limit: self.limit },
            Some(SkillFetch::Tree { commit, tree }) => Fetched::Tree {
                repository,
                commit: commit.clone(),
                tree: tree.as_ref(),
            },
            Some(SkillFetch::NotInstalled) => Fetched::NotInstalled { repository },
            Some(SkillFetch::UnknownRef) => Fetched::UnknownRef { repository },
            Some(SkillFetch::Unresolved { reason }) => Fetched::Unresolved {
                reason: reason.clone(),
            },
        }
    }

    /// What a reference whose source is not registered reads as: `None` (an error on it),
    /// or, when nothing but local sources can be read here, unresolved.
    fn unregistered(&self) -> Option<Fetched<'_>> {
        let reason = self.offline.clone()?;
        Some(Fetched::Unresolved { reason })
    }

    /// The tree `skill` was read from.
    fn tree_of(&self, skill: &RemoteSkill) -> Option<SkillTree> {
        self.fetched
            .iter()
            .find_map(|((repository, _), found)| match found {
                SkillFetch::Tree { commit, tree }
                    if *repository == skill.repository && *commit == skill.commit =>
                {
                    Some(tree.clone())
                }
                _ => None,
            })
    }
}

/// The sources as one agent sees them: its project's aliases only.
struct AgentSources<'s> {
    sources: &'s Sources,
    project: Option<&'s str>,
    no_project: &'s str,
    lock: Option<&'s Lock>,
}

impl AgentSources<'_> {
    /// The repository `skill`'s source names now: its alias's (for the agent's project) or
    /// the catalogue's.
    fn registered(&self, skill: &SkillRef) -> Option<&str> {
        match skill {
            SkillRef::Catalogue { .. } => self
                .sources
                .catalogue
                .as_ref()
                .map(|c| c.repository.as_str()),
            SkillRef::Org { repo_alias, .. } => {
                let key = (self.project?.to_owned(), repo_alias.clone());
                self.sources.aliases.get(&key)?.as_deref()
            }
            SkillRef::Local { .. } => None,
        }
    }
}

impl RemoteSkillSources for AgentSources<'_> {
    fn organization(&self, alias: &str, git_ref: &str) -> Option<Fetched<'_>> {
        let Some(project) = self.project else {
            return Some(Fetched::Unresolved {
                reason: self.no_project.to_owned(),
            });
        };
        let key = (project.to_owned(), alias.to_owned());
        match self.sources.aliases.get(&key) {
            Some(Some(repository)) => Some(self.sources.fetched(repository, git_ref)),
            _ => self.sources.unregistered(),
        }
    }

    fn catalogue(&self) -> Option<Fetched<'_>> {
        let Some(catalogue) = self.sources.catalogue.as_ref() else {
            return self.sources.unregistered();
        };
        Some(
            self.sources
                .fetched(&catalogue.repository, &catalogue.registered_ref),
        )
    }

    fn pin(&self, skill: &SkillRef, reference: &str) -> LockPin<'_> {
        let Some(lock) = self.lock else {
            return LockPin::Unlocked;
        };
        let Some(entry) = lock.entry(reference) else {
            return LockPin::Missing;
        };
        match self.registered(skill) {
            Some(repository) if repository == entry.repository => LockPin::Locked(entry),
            registered => LockPin::OtherSource { entry, registered },
        }
    }

    fn locked(&self, entry: &LockEntry) -> Fetched<'_> {
        self.sources.fetched(&entry.repository, entry.pinned_ref())
    }
}

/// What `skill` is fetched at from `repository`: its ref without a lock; with one, the
/// entry's pinned commit when the entry names this repository, else nothing (the pin is
/// refused when the reference is resolved).
fn fetch_ref(
    lock: Option<&Lock>,
    skill: &SkillRef,
    repository: &str,
    git_ref: &str,
) -> Option<String> {
    let Some(lock) = lock else {
        return Some(git_ref.to_owned());
    };
    let entry = lock.entry(&skill.remote_reference()?)?;
    (entry.repository == repository).then(|| entry.pinned_ref().to_owned())
}

/// Nothing can be asked: every reference is unresolved, for this reason; a reference the
/// lock does not pin is still `lock/missing-entry`.
struct Offline<'r> {
    reason: &'r str,
    lock: Option<&'r Lock>,
}

impl Offline<'_> {
    fn unresolved(&self) -> Option<Fetched<'static>> {
        Some(Fetched::Unresolved {
            reason: self.reason.to_owned(),
        })
    }
}

impl RemoteSkillSources for Offline<'_> {
    fn organization(&self, _: &str, _: &str) -> Option<Fetched<'_>> {
        self.unresolved()
    }

    fn catalogue(&self) -> Option<Fetched<'_>> {
        self.unresolved()
    }

    fn pin(&self, _: &SkillRef, reference: &str) -> LockPin<'_> {
        match self.lock {
            Some(lock) if lock.entry(reference).is_none() => LockPin::Missing,
            _ => LockPin::Unlocked,
        }
    }
}
