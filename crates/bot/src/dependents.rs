//! Dependents follow (docs/reference.md §5.1, "Dependents follow"): a push to a skill
//! source re-syncs the registered repositories whose agents name it, without a push of
//! their own.
//!
//! What a sync records: each applying sync writes on each registration it applied the
//! repository's GitHub id and the skill sources (repository, ref) its agents' references
//! name ([`LastSync`], [`last_syncs`]). What a push does: the sync of a push to a branch of
//! repository R ([`follow`]):
//! 1. reads the skill repositories registered with R as their repository (any project; a
//!    keyed read, [`astrolift_store::state::SkillSourceStore::skill_repos_of`]) and the
//!    catalogue; if R at the pushed branch is neither, that is all (two reads);
//! 2. reads the registrations and keeps those whose last sync named R at the pushed branch
//!    and that may follow it: the catalogue's dependents are any project's (the catalogue
//!    is the deployment's), an organization skill repository's only those of a project
//!    that registered it (an alias belongs to its project: tenant isolation);
//! 3. makes one job per dependent (repository, registered ref), sorted, at most
//!    [`MAX_DEPENDENTS`]; the rest are counted, not queued, and the check run says so;
//! 4. each job (trigger `skill`) re-applies the commit last applied on the dependent's
//!    registered ref, as the installation its registration records, in that ref's FIFO
//!    lane (repository id and ref), so it is ordered with the ref's pushes; the runner
//!    reads the registered commit again when it runs it ([`crate::runner`]). A registration
//!    that names no installation (`register-repo` without `--installation-id`) is re-synced
//!    as the installation GitHub says covers the repository (`GET
//!    /repos/{owner}/{repo}/installation`, as the App, kept ten minutes by the client); one
//!    the App is not installed on is listed as not re-synced.
//!
//! A re-sync queues no re-syncs of its own (only pushes follow), so there are no loops.
//!
//! Why the sources are recorded on the registration rather than read from the dependents'
//! snapshots at push time: a push then costs one listing of registrations, not a read per
//! registered agent, and a snapshot does not name an organization skill's repository (only
//! its alias).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use astrolift_forge::github::{GitHubApp, RepoPath};
use astrolift_store::state::{LastSync, RepoRegistration, SkillSource, StateStore};
use astrolift_sync::Report;
use sha2::Digest as _;

use crate::job::{JOB_VERSION, JobTrigger, SkillChange, SyncJob};
use crate::job_error::JobError;

/// At most this many dependents (repository and registered ref) are re-synced per push: a
/// push is one webhook, and one tenant's skill repository must not make the App do
/// unbounded work. The check run of the push names the ones past it.
pub const MAX_DEPENDENTS: usize = 32;

/// At most this many dependents past [`MAX_DEPENDENTS`] are named in the check run.
const OVER_LIMIT_NAMED: usize = 10;

/// One dependent: a registered repository's ref whose agents name the pushed skill source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependent {
    /// `owner/name`.
    pub repository: String,
    /// The registered ref re-synced.
    pub registered_ref: String,
    /// The projects of its registrations on that ref that follow the source.
    pub projects: Vec<String>,
    /// Why it was not queued; `None`: queued.
    pub skipped: Option<&'static str>,
}

/// What a push's sync did for the dependents of the pushed branch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Followed {
    /// Whether the pushed branch is a skill source (a registered skill repository, or the
    /// catalogue at its registered ref).
    pub is_source: bool,
    /// The dependents considered (at most [`MAX_DEPENDENTS`]), sorted by repository and ref.
    pub dependents: Vec<Dependent>,
    /// The dependents past [`MAX_DEPENDENTS`], not queued.
    pub over_limit: Vec<(String, String)>,
}

impl Followed {
    /// The dependents queued.
    pub fn queued(&self) -> impl Iterator<Item = &Dependent> {
        self.dependents.iter().filter(|d| d.skipped.is_none())
    }
}

/// Why a dependent was not queued: its registration names no installation, and GitHub
/// says the App is not installed on it.
pub const NOT_INSTALLED: &str = "the App is not installed on it";
/// Why a dependent was not queued: no commit is applied on its registered ref.
pub const NOTHING_APPLIED: &str = "no commit is applied on its registered ref yet";

/// The dependents of a push of `push` (trigger `push`) and the jobs that re-sync them.
/// Reads only (the caller queues the jobs); `github` is asked which installation covers a
/// dependent whose registration names none.
pub async fn follow(
    state: &dyn StateStore,
    github: &GitHubApp,
    push: &SyncJob,
) -> Result<(Followed, Vec<SyncJob>), JobError> {
    let mut followed = Followed::default();
    let Some(branch) = push.branch.as_deref() else {
        return Ok((followed, Vec::new()));
    };
    let pushed = push.repository.as_str();
    let skill_repos = state.skills().skill_repos_of(pushed).await?;
    let projects: BTreeSet<String> = skill_repos.into_iter().map(|r| r.project_id).collect();
    let catalogue = state.skills().get_catalogue().await?;
    let is_catalogue = catalogue
        .is_some_and(|c| c.repository.eq_ignore_ascii_case(pushed) && c.registered_ref == branch);
    followed.is_source = is_catalogue || !projects.is_empty();
    if !followed.is_source {
        return Ok((followed, Vec::new()));
    }
    let registrations = state.list_registrations().await?;
    let follows = |r: &RepoRegistration| {
        let names = r
            .last_sync
            .as_ref()
            .is_some_and(|last| last.skill_sources.iter().any(|s| s.is(pushed, branch)));
        let own_push = r.repository.eq_ignore_ascii_case(pushed) && r.registered_ref == branch;
        names && !own_push && (is_catalogue || projects.contains(&r.project_id))
    };
    // One dependent per (repository, registered ref): a sync applies all of a ref's
    // registrations at once.
    let mut groups: BTreeMap<(String, String), Vec<&RepoRegistration>> = BTreeMap::new();
    for registration in registrations.iter().filter(|r| follows(r)) {
        let key = (
            registration.repository.clone(),
            registration.registered_ref.clone(),
        );
        groups.entry(key).or_default().push(registration);
    }
    let mut jobs = Vec::new();
    for (index, ((repository, registered_ref), group)) in groups.into_iter().enumerate() {
        if index >= MAX_DEPENDENTS {
            followed.over_limit.push((repository, registered_ref));
            continue;
        }
        let mut projects: Vec<String> = group.iter().map(|r| r.project_id.clone()).collect();
        projects.dedup();
        let mut dependent = Dependent {
            repository,
            registered_ref,
            projects,
            skipped: None,
        };
        match dependent_job(state, github, push, branch, &dependent, &group).await? {
            Ok(job) => jobs.push(job),
            Err(reason) => dependent.skipped = Some(reason),
        }
        followed.dependents.push(dependent);
    }
    Ok((followed, jobs))
}

/// The job that re-syncs `dependent` (its registrations `group`), or why there is none.
async fn dependent_job(
    state: &dyn StateStore,
    github: &GitHubApp,
    push: &SyncJob,
    branch: &str,
    dependent: &Dependent,
    group: &[&RepoRegistration],
) -> Result<Result<SyncJob, &'static str>, JobError> {
    let recorded = group.iter().find_map(|r| r.installation_id);
    let installation_id = match recorded {
        Some(id) => id,
        None => {
            let repo = RepoPath::parse(&dependent.repository)?;
            match github.repository_installation(&repo).await? {
                Some(id) => id,
                None => return Ok(Err(NOT_INSTALLED)),
            }
        }
    };
    // `follows` kept only registrations with a last sync.
    let Some(repository_id) = group
        .iter()
        .find_map(|r| r.last_sync.as_ref().map(|l| l.repository_id))
    else {
        return Ok(Err(NOTHING_APPLIED));
    };
    let synced = state
        .get_synced_commit(&dependent.repository, &dependent.registered_ref)
        .await?;
    let Some(synced) = synced else {
        return Ok(Err(NOTHING_APPLIED));
    };
    // Bounded and deterministic: a retried push queues the same ids (SQS deduplicates).
    let digest = sha2::Sha256::digest(
        format!(
            "{}\n{}\n{}",
            push.delivery_id, dependent.repository, dependent.registered_ref
        )
        .as_bytes(),
    );
    Ok(Ok(SyncJob {
        version: JOB_VERSION,
        delivery_id: format!("skill-{}", hex::encode(&digest[..16])),
        trigger: JobTrigger::SkillChanged,
        installation_id,
        repository: dependent.repository.clone(),
        repository_id,
        head_sha: synced.commit.clone(),
        branch: Some(dependent.registered_ref.clone()),
        fork: false,
        commit_time: Some(synced.commit_time),
        before: Some(synced.commit),
        default_branch: None,
        pull_request: None,
        accept_drift: None,
        skill_change: Some(SkillChange {
            repository: push.repository.clone(),
            git_ref: branch.to_owned(),
            commit: push.head_sha.clone(),
        }),
        base_ref: None,
        preview_approved_by: None,
        merged: false,
        comment: None,
    }))
}

/// What each of `applied` (the registrations an applying sync of `job` applied) should
/// record after `report`: the repository id and the skill sources its covered manifests
/// named. Only those that differ from what they hold (a re-run writes nothing).
pub fn last_syncs<'r>(
    job: &SyncJob,
    applied: &[&'r RepoRegistration],
    report: &Report,
) -> Vec<(&'r RepoRegistration, LastSync)> {
    applied
        .iter()
        .filter_map(|registration| {
            let mut sources: Vec<SkillSource> = report
                .skill_sources
                .iter()
                .filter(|(manifest, _)| registration.covers(manifest))
                .flat_map(|(_, sources)| sources.iter().cloned())
                .collect();
            sources.sort_unstable();
            sources.dedup();
            sources.truncate(LastSync::MAX_SOURCES);
            let last_sync = LastSync {
                repository_id: job.repository_id,
                skill_sources: sources,
            };
            (registration.last_sync.as_ref() != Some(&last_sync))
                .then_some((*registration, last_sync))
        })
        .collect()
}

/// The check run's section on the dependents of a push to a skill source; `None` when the
/// branch is no skill source.
pub fn section(followed: &Followed) -> Option<String> {
    if !followed.is_source {
        return None;
    }
    let mut text = String::from("### Dependents re-synced\n\n");
    if followed.dependents.is_empty() {
        text.push_str(
            "This branch is a skill source, and no registered repository's agents name it.\n",
        );
        return Some(text);
    }
    for dependent in &followed.dependents {
        let projects = dependent.projects.join(", ");
        let _ = write!(
            text,
            "- `{}` on `{}` (project {projects})",
            dependent.repository, dependent.registered_ref
        );
        match dependent.skipped {
            None => text.push_str(": queued\n"),
            Some(reason) => {
                let _ = writeln!(text, ": not re-synced, {reason}");
            }
        }
    }
    if !followed.over_limit.is_empty() {
        let named: Vec<String> = followed
            .over_limit
            .iter()
            .take(OVER_LIMIT_NAMED)
            .map(|(repository, git_ref)| format!("`{repository}` on `{git_ref}`"))
            .collect();
        let rest = followed.over_limit.len() - named.len();
        let rest = match rest {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let _ = writeln!(
            text,
            "\n{} more not re-synced (at most {MAX_DEPENDENTS} dependents are re-synced per \
             push): {}{rest}. Each is re-synced by its next push.",
            followed.over_limit.len(),
            named.join(", ")
        );
    }
    Some(text)
}

/// The line a dependent's check run opens with: why it was synced without a push.
pub fn cause(change: &SkillChange) -> String {
    let short = change.commit.get(..12).unwrap_or(&change.commit);
    format!(
        "Re-synced because the skill source `{}` (`{}`) moved to `{short}`: this repository \
         was not pushed; its registered commit was synced again.",
        change.repository, change.git_ref
    )
}
