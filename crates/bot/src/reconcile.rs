//! Reconcile (docs/reference.md §4, "astrolift reconcile"; docs/operations.md, "Is reconcile
//! running?"): a missed delivery healed without a person. Every registered (repository, ref)
//! is compared with GitHub's head of that ref, and a ref whose head is not the synced commit
//! gets a sync job (trigger `reconcile`) in the lane of its pushes; every skill source the
//! registrations' last syncs named (and the catalogue) whose head moved since the last
//! reconcile re-syncs its dependents ([`crate::dependents`]).
//!
//! - **One conditional request per ref.** The head is asked with `If-None-Match` and the
//!   `ETag` kept from the last answer (`StateStore::seen_heads`); an unmoved ref is GitHub's
//!   `304`, which costs no rate limit and writes nothing here.
//! - **Bounded.** At most [`ReconcileOptions::concurrency`] requests at once; an
//!   installation whose `X-RateLimit-Remaining` fell below
//!   [`ReconcileOptions::rate_limit_floor`] (or that GitHub rate-limited) is asked nothing
//!   more in this pass: its remaining refs are reported `skipped` (`rate_limited`).
//! - **No duplicates.** A job's delivery id is `reconcile-` and a digest of (repository, ref,
//!   head), recorded like a webhook's before it is queued: a head already queued, running
//!   or synced is not queued again (on SQS the id is the deduplication id too).
//! - **Installations learnt.** A registration without an installation id, and every skill
//!   source, is asked as the installation GitHub says covers it
//!   ([`GitHubApp::repository_installation`], cached).
//!
//! Reads the store, asks GitHub, queues on the [`JobQueue`] it is handed (`serve`'s durable
//! queue, the SQS sync queue, or the state store's job records for `astrolift reconcile`).
//! Then it tears down the previews of closed or quiet pull requests and, on the
//! state-store engine, ends the workflow stages past their `timeout` or `heartbeat` and
//! dispatches the retries that came due ([`astrolift_dispatch::stage_deadlines`],
//! docs/reference.md §5.6).

use astrolift_sync::local_skills::is_local_source;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use astrolift_dispatch::stage_deadlines::enforce_deadlines;
use astrolift_dispatch::workflow::StageDispatcher;
use astrolift_forge::github::{GitHubApp, GitHubError, HeadAnswer, RepoPath};
use astrolift_manifest::Limits;
use astrolift_store::state::{DeliveryOutcome, RepoRegistration, SeenHead, StateStore};
use futures_util::StreamExt as _;
use serde::Serialize;
use sha2::Digest as _;

use crate::dependents;
use crate::ingress::{DELIVERY_TTL, now};
use crate::job::{JOB_VERSION, JobTrigger, SyncJob};
use crate::job_error::JobError;
use crate::queue::{JobQueue, forget_unqueued_delivery};

/// Requests in flight at once, by default.
pub const DEFAULT_CONCURRENCY: usize = 8;
/// An installation with fewer requests left this hour is asked nothing more, by default:
/// syncs and check runs need them more than reconcile does.
pub const DEFAULT_RATE_LIMIT_FLOOR: u64 = 100;

/// How a reconcile pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconcileOptions {
    /// Requests in flight at once (at least 1).
    pub concurrency: usize,
    /// Below this `X-RateLimit-Remaining` an installation is asked nothing more.
    pub rate_limit_floor: u64,
}

impl Default for ReconcileOptions {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            rate_limit_floor: DEFAULT_RATE_LIMIT_FLOOR,
        }
    }
}

/// What a ref is to the deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefKind {
    /// A registered repository's registered ref.
    Registered,
    /// An organization skill repository at a ref some registration's agents name.
    SkillSource,
    /// The catalogue at its registered ref.
    Catalogue,
}

/// What reconcile did with a ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefStatus {
    /// The head is the synced commit (a skill source: the head the last reconcile saw).
    Unchanged,
    /// A sync job (a skill source: its dependents' re-syncs) was queued.
    Queued,
    /// Not compared or not queued, for the `reason` given.
    Skipped,
    /// GitHub or the store failed for this ref (`detail` says how); the next pass tries again.
    Failed,
}

/// Why a ref was skipped, as the JSON output names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// No registration names an installation, and GitHub says the App is not installed.
    NotInstalled,
    /// Its installation's rate limit is low (or exhausted): asked nothing this pass.
    RateLimited,
    /// GitHub says the ref names no commit (a deleted branch).
    NoSuchRef,
    /// A sync of this head is queued, running or done already (its delivery is recorded).
    AlreadyQueued,
}

/// One ref's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefOutcome {
    /// `owner/name`.
    pub repository: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub kind: RefKind,
    pub status: RefStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<SkipReason>,
    /// The error, for `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// GitHub's head of the ref, when asked.
    pub head: Option<String>,
    /// The synced commit (a skill source: the head the last reconcile saw).
    pub synced: Option<String>,
    /// Whether GitHub answered `304 Not Modified`.
    pub not_modified: bool,
    /// Jobs queued for it: 1 for a registered ref, its dependents for a skill source.
    pub jobs: usize,
}

/// Counts over a pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub refs: usize,
    pub unchanged: usize,
    pub queued: usize,
    pub skipped: usize,
    pub failed: usize,
    /// Conditional head requests GitHub answered (a failed one is counted in `failed`).
    pub requests: usize,
    /// Of those, answered `304 Not Modified`.
    pub not_modified: usize,
    /// Jobs queued in all.
    pub jobs: usize,
    /// Previews torn down: of closed pull requests, and of those with no push for 7 days
    /// ([`crate::previews::tear_down_stale`]).
    pub previews_torn_down: usize,
    /// Workflow stage attempts ended for running past their `timeout` or `heartbeat`
    /// ([`astrolift_dispatch::stage_deadlines`]).
    pub stages_timed_out: usize,
    /// Workflow stages dispatched again: retries that came due.
    pub stages_retried: usize,
}

/// A reconcile pass: `{"refs": [...], "totals": {...}}` (docs/reference.md §4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReconcileReport {
    /// Sorted by kind, repository and ref.
    pub refs: Vec<RefOutcome>,
    pub totals: Totals,
}

impl ReconcileReport {
    fn of(mut refs: Vec<RefOutcome>) -> Self {
        refs.sort_by(|a, b| {
            (a.kind, &a.repository, &a.git_ref).cmp(&(b.kind, &b.repository, &b.git_ref))
        });
        let mut totals = Totals {
            refs: refs.len(),
            ..Totals::default()
        };
        for outcome in &refs {
            match outcome.status {
                RefStatus::Unchanged => totals.unchanged += 1,
                RefStatus::Queued => totals.queued += 1,
                RefStatus::Skipped => totals.skipped += 1,
                RefStatus::Failed => totals.failed += 1,
            }
            let answered = outcome.head.is_some()
                || outcome.not_modified
                || outcome.reason == Some(SkipReason::NoSuchRef);
            totals.requests += usize::from(answered);
            totals.not_modified += usize::from(outcome.not_modified);
            totals.jobs += outcome.jobs;
        }
        Self { refs, totals }
    }
}

/// Told how far a pass is (the CLI's progress bar).
pub trait ReconcileProgress: Sync {
    /// The refs the pass compares.
    fn planned(&self, refs: usize);
    /// One ref is done.
    fn finished(&self, outcome: &RefOutcome);
}

/// No progress shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl ReconcileProgress for NoProgress {
    fn planned(&self, _refs: usize) {}
    fn finished(&self, _outcome: &RefOutcome) {}
}

/// One ref to compare.
#[derive(Debug, Clone)]
struct Target {
    repository: String,
    git_ref: String,
    kind: RefKind,
    /// The installation a registration recorded; `None`: learnt from GitHub.
    installation_id: Option<u64>,
    /// GitHub's repository id, from a registration's last sync (registered refs only).
    repository_id: Option<u64>,
}

/// One pass over every registered ref and skill source, queueing on `queue`, then the
/// previews and, with `stages`, the workflow runs (see the module docs). `stages`
/// dispatches the state-store engine's retries; `None` leaves the runs alone (a host that
/// advances none).
pub async fn reconcile(
    state: &dyn StateStore,
    github: &GitHubApp,
    queue: &dyn JobQueue,
    stages: Option<&dyn StageDispatcher>,
    options: ReconcileOptions,
    progress: &dyn ReconcileProgress,
) -> Result<ReconcileReport, JobError> {
    let registrations = state.list_registrations().await?;
    let targets = targets(state, &registrations).await?;
    progress.planned(targets.len());
    let pass = Pass {
        state,
        github,
        queue,
        floor: options.rate_limit_floor,
        remaining: Mutex::new(HashMap::new()),
    };
    let outcomes: Vec<RefOutcome> = futures_util::stream::iter(targets)
        .map(|target| {
            let pass = &pass;
            async move {
                let outcome = pass.one(target).await;
                progress.finished(&outcome);
                outcome
            }
        })
        .buffer_unordered(options.concurrency.max(1))
        .collect()
        .await;
    let mut report = ReconcileReport::of(outcomes);
    report.totals.previews_torn_down =
        crate::previews::tear_down_stale(state, github, &registrations, now()).await?;
    if let Some(stages) = stages {
        let pass = enforce_deadlines(state, stages, now(), &Limits::DEFAULT).await?;
        report.totals.stages_timed_out = pass.timed_out;
        report.totals.stages_retried = pass.retried;
    }
    tracing::info!(
        previews_torn_down = report.totals.previews_torn_down,
        stages_timed_out = report.totals.stages_timed_out,
        stages_retried = report.totals.stages_retried,
        refs = report.totals.refs,
        unchanged = report.totals.unchanged,
        queued = report.totals.queued,
        skipped = report.totals.skipped,
        failed = report.totals.failed,
        requests = report.totals.requests,
        not_modified = report.totals.not_modified,
        "reconcile finished"
    );
    Ok(report)
}

/// The registered refs (one per repository and ref), then the skill sources and the
/// catalogue that are not registered refs themselves (those follow their dependents when
/// their own sync runs).
async fn targets(
    state: &dyn StateStore,
    registrations: &[RepoRegistration],
) -> Result<Vec<Target>, JobError> {
    let mut registered: BTreeMap<(String, String), Vec<&RepoRegistration>> = BTreeMap::new();
    for registration in registrations {
        let key = (
            registration.repository.clone(),
            registration.registered_ref.clone(),
        );
        registered.entry(key).or_default().push(registration);
    }
    let is_registered = |repository: &str, git_ref: &str| {
        registered
            .keys()
            .any(|(r, g)| r.eq_ignore_ascii_case(repository) && g == git_ref)
    };
    let mut sources: BTreeMap<(String, String), RefKind> = BTreeMap::new();
    for source in registrations
        .iter()
        .filter_map(|r| r.last_sync.as_ref())
        .flat_map(|last| last.skill_sources.iter())
    {
        let key = (
            source.repository.to_ascii_lowercase(),
            source.git_ref.clone(),
        );
        sources.entry(key).or_insert(RefKind::SkillSource);
    }
    // A `file:` catalogue is a local directory no GitHub ref names (docs/reference.md §5.1,
    // "Local sources"): nothing to compare.
    let catalogue = state.skills().get_catalogue().await?;
    if let Some(catalogue) = catalogue.filter(|c| !is_local_source(&c.repository)) {
        let key = (
            catalogue.repository.to_ascii_lowercase(),
            catalogue.registered_ref,
        );
        sources.insert(key, RefKind::Catalogue);
    }
    let mut targets: Vec<Target> = registered
        .iter()
        .map(|((repository, git_ref), group)| Target {
            repository: repository.clone(),
            git_ref: git_ref.clone(),
            kind: RefKind::Registered,
            installation_id: group.iter().find_map(|r| r.installation_id),
            repository_id: group
                .iter()
                .find_map(|r| r.last_sync.as_ref().map(|l| l.repository_id)),
        })
        .collect();
    targets.extend(
        sources
            .into_iter()
            .filter(|((repository, git_ref), _)| !is_registered(repository, git_ref))
            .map(|((repository, git_ref), kind)| Target {
                repository,
                git_ref,
                kind,
                installation_id: None,
                repository_id: None,
            }),
    );
    Ok(targets)
}

/// What the refs of one pass share.
struct Pass<'a> {
    state: &'a dyn StateStore,
    github: &'a GitHubApp,
    queue: &'a dyn JobQueue,
    floor: u64,
    /// `X-RateLimit-Remaining` last seen per installation.
    remaining: Mutex<HashMap<u64, u64>>,
}

impl Pass<'_> {
    async fn one(&self, target: Target) -> RefOutcome {
        let mut outcome = RefOutcome {
            repository: target.repository.clone(),
            git_ref: target.git_ref.clone(),
            kind: target.kind,
            status: RefStatus::Unchanged,
            reason: None,
            detail: None,
            head: None,
            synced: None,
            not_modified: false,
            jobs: 0,
        };
        if let Err(error) = self.compare(&target, &mut outcome).await {
            let rate_limited = matches!(&error, JobError::GitHub(GitHubError::RateLimited { .. }));
            if rate_limited {
                outcome.status = RefStatus::Skipped;
                outcome.reason = Some(SkipReason::RateLimited);
            } else {
                tracing::warn!(repository = %target.repository, git_ref = %target.git_ref, %error, "reconcile cannot compare the ref");
                outcome.status = RefStatus::Failed;
                outcome.detail = Some(error.to_string());
            }
        }
        outcome
    }

    /// Fills `outcome` for `target`; an error is the ref's failure.
    async fn compare(&self, target: &Target, outcome: &mut RefOutcome) -> Result<(), JobError> {
        let skip = |outcome: &mut RefOutcome, reason| {
            outcome.status = RefStatus::Skipped;
            outcome.reason = Some(reason);
            Ok(())
        };
        let repo = RepoPath::parse(&target.repository)?;
        let installation_id = match target.installation_id {
            Some(id) => id,
            None => match self.github.repository_installation(&repo).await? {
                Some(id) => id,
                None => return skip(outcome, SkipReason::NotInstalled),
            },
        };
        if self.exhausted(installation_id) {
            return skip(outcome, SkipReason::RateLimited);
        }
        let seen = self
            .state
            .seen_heads()
            .get_seen_head(&target.repository, &target.git_ref)
            .await?;
        let etag = seen.as_ref().and_then(|s| s.etag.as_deref());
        let asked = self
            .github
            .installation(installation_id)
            .ref_head(&repo, &target.git_ref, etag)
            .await;
        let answer = match asked {
            Ok(answer) => answer,
            Err(error) => {
                if matches!(error, GitHubError::RateLimited { .. }) {
                    self.note_remaining(installation_id, 0);
                }
                return Err(error.into());
            }
        };
        if let Some(remaining) = answer.rate_limit_remaining {
            self.note_remaining(installation_id, remaining);
        }
        let head = match (answer.answer, &seen) {
            (HeadAnswer::NotModified, Some(seen)) => {
                outcome.not_modified = true;
                seen.commit.clone()
            }
            // A 304 to a request sent without a tag: GitHub never does; read as unmoved.
            (HeadAnswer::NotModified, None) => {
                outcome.not_modified = true;
                return Ok(());
            }
            (HeadAnswer::NoSuchRef, _) => {
                outcome.head = None;
                return skip(outcome, SkipReason::NoSuchRef);
            }
            (HeadAnswer::Head { sha, etag }, _) => {
                let seen_now = SeenHead {
                    repository: target.repository.clone(),
                    git_ref: target.git_ref.clone(),
                    commit: sha.clone(),
                    etag,
                    checked_at: now(),
                };
                // A source's new head is recorded only once its dependents are queued.
                if target.kind == RefKind::Registered {
                    self.state.seen_heads().put_seen_head(&seen_now).await?;
                }
                if target.kind != RefKind::Registered {
                    outcome.head = Some(sha);
                    return self.follow_source(target, seen, seen_now, outcome).await;
                }
                sha
            }
        };
        outcome.head = Some(head.clone());
        match target.kind {
            RefKind::Registered => {
                self.sync_if_moved(target, installation_id, head, outcome)
                    .await
            }
            // A 304: the source has not moved since the last reconcile.
            RefKind::SkillSource | RefKind::Catalogue => {
                outcome.synced = Some(head);
                Ok(())
            }
        }
    }

    /// Queues a sync of `head` when it is not the synced commit of the registered ref.
    async fn sync_if_moved(
        &self,
        target: &Target,
        installation_id: u64,
        head: String,
        outcome: &mut RefOutcome,
    ) -> Result<(), JobError> {
        let synced = self
            .state
            .get_synced_commit(&target.repository, &target.git_ref)
            .await?;
        outcome.synced = synced.as_ref().map(|s| s.commit.clone());
        if synced.is_some_and(|s| s.commit.eq_ignore_ascii_case(&head)) {
            return Ok(());
        }
        let mut job = reconcile_job(
            target,
            installation_id,
            target.repository_id.unwrap_or_default(),
            &head,
        );
        if !self.record(&job).await? {
            outcome.status = RefStatus::Skipped;
            outcome.reason = Some(SkipReason::AlreadyQueued);
            return Ok(());
        }
        let queued = async {
            // No sync through the App has recorded the repository's id (a registration made
            // with the CLI): its lanes are keyed by it, so GitHub is asked.
            if target.repository_id.is_none() {
                let repo = RepoPath::parse(&target.repository)?;
                let installation = self.github.installation(installation_id);
                job.repository_id = installation.repository_id(&repo).await?;
            }
            self.queue.enqueue(&job).await.map_err(JobError::from)
        };
        if let Err(error) = queued.await {
            // Forgotten again, so the next pass queues it.
            forget_unqueued_delivery(self.state, &job.delivery_id).await;
            return Err(error);
        }
        outcome.status = RefStatus::Queued;
        outcome.jobs = 1;
        Ok(())
    }

    /// A skill source whose head moved since the last reconcile saw it (`seen`): its
    /// dependents' re-syncs, queued as its push's sync would; then `now` is recorded. The
    /// first sight of a source records it only: there is nothing to compare with.
    async fn follow_source(
        &self,
        target: &Target,
        seen: Option<SeenHead>,
        now_seen: SeenHead,
        outcome: &mut RefOutcome,
    ) -> Result<(), JobError> {
        outcome.synced = seen.as_ref().map(|s| s.commit.clone());
        let moved = seen.is_some_and(|s| !s.commit.eq_ignore_ascii_case(&now_seen.commit));
        if moved {
            let push = reconcile_job(target, 0, 0, &now_seen.commit);
            let (followed, jobs) = dependents::follow(self.state, self.github, &push).await?;
            for job in &jobs {
                self.queue.enqueue(job).await?;
            }
            outcome.status = RefStatus::Queued;
            outcome.jobs = jobs.len();
            tracing::info!(
                repository = %target.repository,
                git_ref = %target.git_ref,
                queued = jobs.len(),
                over_limit = followed.over_limit.len(),
                "reconcile: a skill source moved without a delivery; its dependents re-sync"
            );
        }
        self.state.seen_heads().put_seen_head(&now_seen).await?;
        Ok(())
    }

    /// Records the job's delivery; `false` when a sync of that head is queued, running or
    /// done already.
    async fn record(&self, job: &SyncJob) -> Result<bool, JobError> {
        let outcome = self
            .state
            .record_delivery(&job.delivery_id, now(), DELIVERY_TTL)
            .await?;
        Ok(outcome == DeliveryOutcome::New)
    }

    fn exhausted(&self, installation_id: u64) -> bool {
        self.remaining
            .lock()
            .ok()
            .and_then(|remaining| remaining.get(&installation_id).copied())
            .is_some_and(|left| left < self.floor)
    }

    fn note_remaining(&self, installation_id: u64, left: u64) {
        if let Ok(mut remaining) = self.remaining.lock() {
            remaining.insert(installation_id, left);
        }
    }
}

/// The delivery id of a reconcile of `head` on (`repository`, `git_ref`): deterministic, so
/// a head reconciled twice is one delivery (and one SQS message), and at most 128 ASCII
/// characters whatever the ref.
pub fn delivery_id(repository: &str, git_ref: &str, head: &str) -> String {
    let digest = sha2::Sha256::digest(format!("{repository}\n{git_ref}\n{head}").as_bytes());
    format!("reconcile-{}", hex::encode(&digest[..16]))
}

/// The job that syncs `head` of the target's ref, in the lane of its pushes.
fn reconcile_job(target: &Target, installation_id: u64, repository_id: u64, head: &str) -> SyncJob {
    SyncJob {
        version: JOB_VERSION,
        delivery_id: delivery_id(&target.repository, &target.git_ref, head),
        trigger: JobTrigger::Reconcile,
        installation_id,
        repository: target.repository.clone(),
        repository_id,
        head_sha: head.to_owned(),
        branch: Some(target.git_ref.clone()),
        fork: false,
        commit_time: None,
        // Not known to be a fast-forward: the sync asks GitHub's compare API.
        before: None,
        default_branch: None,
        pull_request: None,
        accept_drift: None,
        skill_change: None,
        base_ref: None,
        preview_approved_by: None,
        merged: false,
        comment: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_id_is_one_per_repository_ref_and_head_and_bounded() {
        let a = delivery_id("o/r", "main", &"a".repeat(40));
        assert_eq!(a, delivery_id("o/r", "main", &"a".repeat(40)));
        assert_ne!(a, delivery_id("o/r", "main", &"b".repeat(40)));
        assert_ne!(a, delivery_id("o/r", "dev", &"a".repeat(40)));
        let long = delivery_id("o/r", &"x".repeat(10_000), "a");
        assert_eq!(long.len(), "reconcile-".len() + 32);
    }
}
