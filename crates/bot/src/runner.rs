//! The sync function's job, shared with `serve`: one [`SyncJob`] in, one
//! completed check run out.
//!
//! Order: create the check run `in_progress` → decide check or apply from the
//! repository's registration → stream the tarball of the head commit → sync
//! (discover, validate, package, plan, apply) → render → for a pull request,
//! post the suggested fixes as a review ([`crate::suggest`]; a failure there
//! is a warning in the run, never a failed run) → settle a request to accept
//! the head's critical drift ([`crate::accept`]) → complete the run (the
//! clicked one, for "Accept drift").
//! Whatever fails after the run exists, the run is completed as `failure`
//! with a plain explanation: no run is left `in_progress`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use astrolift_forge::github::{CheckRunOutput, Conclusion, GitHubApp, Installation, RepoPath};
use astrolift_manifest::{Limits, SourceTree, ValidateOptions};
use astrolift_package::{TarballOptions, TarballTree};
use astrolift_store::state::{DeliveryState, JobRecord, RepoRegistration};
use astrolift_sync::commands::register_command;

use crate::check_run::{CheckOnlyReason, RenderContext, dead_letter, render};
use astrolift_dispatch::report::report_recorded;
use astrolift_sync::{Coverage, Mode, Report, Stores, SyncRequest, sync};
use tracing::Instrument as _;

pub use crate::job_error::JobError;

use crate::accept::settle_acceptance;
use crate::commit_order::GitHubCommitOrder;
use crate::dependents::{self, Followed};
use crate::ingress::now;
use crate::job::{JobTrigger, ReportJob, SyncJob};
use crate::job_error::fetch_tree;
use crate::layers::LayerPackager;
use crate::lock_update;
use crate::previews;
use crate::progress::{self, PackagingProgress, ProgressTiming};
use crate::queue::JobQueue;
use crate::report::GitHubReporter;
use crate::skills::skill_fetcher;
use crate::state_machines::{self, StepFunctionsEngine};
use crate::suggest::{PullRequest, drop_suggested_annotations, post_suggestions, warn_not_posted};
use crate::telemetry::{self, Metric};
use crate::trigger_replay;
use astrolift_sync::locking::Update;

/// The check run's name (docs/reference.md §9).
pub const CHECK_NAME: &str = "Astrolift";

/// What a finished job did.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    pub check_run_id: u64,
    pub conclusion: Conclusion,
    /// True when the plan was applied (registered).
    pub applied: bool,
    pub report: Report,
    /// For a push to a skill source: its dependents, and which were queued
    /// ([`crate::dependents`]).
    pub followed: Followed,
}

/// Runs sync jobs. Built once per process.
#[derive(Debug, Clone)]
pub struct SyncRunner {
    pub stores: Stores,
    pub github: Arc<GitHubApp>,
    pub limits: Limits,
    /// The `Function` dimension of metrics: `sync` or `serve`.
    pub function: &'static str,
    /// How long to keep trying to complete a run as `failure` when GitHub is down.
    pub fail_run_patience: Duration,
    /// Where the re-syncs of a skill source's dependents go (the sync queue; `serve`'s
    /// in-process queue). `None`: none are queued, and the check run of a push to a skill
    /// source says so.
    pub jobs: Option<Arc<dyn JobQueue>>,
    /// Where a comment's dispatches go (docs/reference.md §17): the dispatch queue, the
    /// content source and the callback base. `None`: built from the environment when a
    /// comment dispatches ([`LayerPackager::from_env`], what `astrolift dispatch` uses).
    pub dispatches: Option<Arc<LayerPackager>>,
    /// The Step Functions engine of workflow runs (docs/reference.md §5.6): after an applying
    /// sync, each workflow gets the state machine of its content. `None`: the state-store
    /// engine, which needs nothing at sync.
    pub workflow_engine: Option<Arc<StepFunctionsEngine>>,
    /// When a long sync's run shows its progress ([`crate::progress`]).
    pub progress: ProgressTiming,
}

/// The span of one job's sync.
pub(crate) fn sync_span(job: &SyncJob) -> tracing::Span {
    tracing::info_span!(
        "sync",
        delivery_id = %job.delivery_id,
        repository = %job.repository,
        commit = %job.head_sha,
    )
}

impl SyncRunner {
    /// Reports the terminal result of a relayed [`ReportJob`] with the App's key (best
    /// effort, as on `serve`: GitHub's failure is logged, never retried, so a comment is
    /// never posted twice). A task that does not exist or is not terminal is logged and
    /// dropped: the message was not one the trigger function sends.
    pub async fn report(&self, job: &ReportJob) {
        let reporter = GitHubReporter::new(Arc::clone(&self.github));
        let state = self.stores.state.as_ref();
        if let Err(why) = report_recorded(state, &reporter, &job.task_id).await {
            tracing::warn!(task_id = %job.task_id, %why, "report failed");
        }
    }

    /// Reports a job `serve`'s queue gave up on (`error`, its last): a new `Astrolift` run
    /// on its head commit, concluded `failure` with the reason and a **Re-run** button
    /// ([`crate::check_run::dead_letter`]); GitHub shows the newest run of a name. Nothing
    /// when GitHub refused the installation's token (no run can be written). Best effort: a
    /// failure to report is logged, and the job stays listed by `astrolift jobs list`.
    pub async fn report_dead_letter(&self, job: &SyncJob, record: &JobRecord, error: &JobError) {
        if error.is_installation_refused() {
            tracing::info!(job_id = %record.id, "no check run for the failed job: its installation's token was refused");
            return;
        }
        let reason = record.error.as_deref().unwrap_or("an unknown error");
        let (conclusion, output) = dead_letter(&record.id, record.attempts, reason);
        let installation = self.github.installation(job.installation_id);
        let reported = async {
            let repo = RepoPath::parse(&job.repository)?;
            let run_id = installation
                .create_in_progress(&repo, &job.head_sha, CHECK_NAME)
                .await?;
            installation
                .complete(&repo, run_id, conclusion, output)
                .await?;
            Ok::<_, JobError>(run_id)
        };
        match reported.await {
            Ok(run_id) => {
                telemetry::count(self.function, Metric::CheckRuns, 1);
                tracing::info!(job_id = %record.id, run_id, "the failed job's check run offers Re-run");
            }
            Err(error) => {
                tracing::warn!(job_id = %record.id, %error, "cannot report the failed job on its check run");
            }
        }
    }

    /// Runs the sync job `job` to a completed check run, and records where the delivery that
    /// made it is, as `SyncRunner::perform` (`crate::perform`) does.
    pub async fn run(&self, job: &SyncJob) -> Result<JobOutcome, JobError> {
        self.marked(job, self.run_logged(job, sync_span(job))).await
    }

    /// `work` on `job`, with the delivery that made the job marked `running` before, then
    /// `succeeded` or `failed`.
    pub(crate) async fn marked<T>(
        &self,
        job: &SyncJob,
        work: impl std::future::Future<Output = Result<T, JobError>>,
    ) -> Result<T, JobError> {
        let span = sync_span(job);
        self.mark_delivery(job, DeliveryState::Running)
            .instrument(span.clone())
            .await;
        let result = work.await;
        let finished = match &result {
            Ok(_) => DeliveryState::Succeeded,
            Err(_) => DeliveryState::Failed,
        };
        self.mark_delivery(job, finished).instrument(span).await;
        result
    }

    /// Runs `job` in `span`, counted and logged with its outcome.
    pub(crate) async fn run_logged(
        &self,
        job: &SyncJob,
        span: tracing::Span,
    ) -> Result<JobOutcome, JobError> {
        let started = Instant::now();
        let result = self.run_in_span(job).instrument(span.clone()).await;
        let _entered = span.enter();
        let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        match &result {
            Ok(outcome) => {
                telemetry::count(self.function, Metric::Syncs, 1);
                tracing::info!(
                    duration_ms,
                    outcome = ?outcome.conclusion,
                    applied = outcome.applied,
                    "sync finished"
                );
            }
            Err(error) => {
                telemetry::count(self.function, Metric::Failures, 1);
                tracing::error!(
                    duration_ms,
                    outcome = "error",
                    retryable = error.is_retryable(),
                    error = %error,
                    "sync failed"
                );
            }
        }
        result
    }

    /// Records where the job of the delivery that made `job` is, so that a redelivery of a
    /// failed one is queued again (`astrolift_store::state::deliveries`). Best effort: a
    /// store that cannot record it is logged, and the delivery keeps its earlier state (a
    /// `queued` or `running` one becomes new again when its lease runs out). A job that no
    /// recorded delivery made (a dependent's re-sync) records nothing.
    async fn mark_delivery(&self, job: &SyncJob, state: DeliveryState) {
        let marked = self
            .stores
            .state
            .mark_delivery(&job.delivery_id, state, crate::ingress::now())
            .await;
        if let Err(error) = marked {
            tracing::warn!(%error, state = state.as_str(), "cannot record the delivery's state");
        }
    }

    async fn run_in_span(&self, job: &SyncJob) -> Result<JobOutcome, JobError> {
        if !job.trigger.syncs() {
            return Err(JobError::NotASync);
        }
        let resynced;
        let job = match job.trigger {
            JobTrigger::SkillChanged => {
                resynced = self.registered_commit(job).await?;
                &resynced
            }
            _ => job,
        };
        let installation = self.github.installation(job.installation_id);
        let repo = RepoPath::parse(&job.repository)?;
        // "Accept drift" completes the run whose button was clicked again.
        let run_id = match &job.accept_drift {
            Some(request) => request.check_run_id,
            None => {
                installation
                    .create_in_progress(&repo, &job.head_sha, CHECK_NAME)
                    .await?
            }
        };
        let progress = Arc::new(PackagingProgress::default());
        let show = |done, total| {
            let (installation, repo) = (&installation, &repo);
            async move {
                let summary = progress::summary(done, total);
                let shown = installation
                    .show_progress(repo, run_id, ("Packaging agents", &summary))
                    .await;
                if let Err(error) = shown {
                    tracing::warn!(%error, run_id, "cannot show the sync's progress");
                }
            }
        };
        // On the heap: the check's future is large, and the reporter moves it.
        let checking = Box::pin(self.check(&installation, &repo, job, &progress));
        let checked = progress::while_reporting(checking, &progress, self.progress, show).await;
        let checked = match checked {
            Ok(checked) => checked,
            Err(error) => {
                self.fail_run(&installation, &repo, run_id, &error.explanation())
                    .await;
                return Err(error);
            }
        };
        let (report, mut context, tree) = checked;
        let followed = match self.follow(job).await {
            Ok(followed) => followed,
            Err(error) => {
                self.fail_run(&installation, &repo, run_id, &error.explanation())
                    .await;
                return Err(error);
            }
        };
        if followed.is_source {
            context.check_only = context
                .check_only
                .take()
                .map(CheckOnlyReason::of_skill_source);
        }
        let (conclusion, mut output) = render(&report, &context);
        if let Some(change) = &job.skill_change {
            output.summary = format!("{}\n\n{}", dependents::cause(change), output.summary);
        }
        if let Some(section) = dependents::section(&followed) {
            let queue = match self.jobs {
                Some(_) => "",
                None => "\n_This worker has no job queue: nothing was queued._\n",
            };
            output.summary = format!("{}\n\n{section}{queue}", output.summary);
        }
        if let Some(previews) = &report.previews {
            output.summary = format!("{}\n\n{}", output.summary, previews::section(previews));
        }
        if let Some(relocked) = &report.relocked {
            let target = lock_update::Target {
                repo: &repo,
                base_ref: report.git_ref.as_deref().unwrap_or("main"),
                base_sha: &report.commit,
            };
            let proposal =
                lock_update::propose(&self.github, &installation, target, relocked).await;
            let proposal = match proposal {
                Ok(proposal) => proposal,
                Err(error) => {
                    self.fail_run(&installation, &repo, run_id, &error.explanation())
                        .await;
                    return Err(error);
                }
            };
            tracing::info!(?proposal, "the lock's moved pins");
            if let Some(section) = lock_update::section(&proposal) {
                output.summary = format!("{}\n\n{section}", output.summary);
            }
        }
        if !report.trigger_changes.is_empty() {
            let state = self.stores.state.as_ref();
            let changes = &report.trigger_changes;
            let replay = trigger_replay::replay_changes(
                state,
                &installation,
                &repo,
                changes,
                &self.limits,
                now(),
            )
            .await;
            if !replay.is_empty() {
                let section = trigger_replay::section(&replay);
                output.summary = format!("{}\n\n{section}", output.summary);
                output
                    .annotations
                    .extend(trigger_replay::annotations(&replay));
            }
        }
        if let (Some(engine), true) = (&self.workflow_engine, report.applied) {
            let state = self.stores.state.as_ref();
            let lines = state_machines::sync_state_machines(state, engine, &job.repository).await;
            if let Some(section) = state_machines::section(&lines) {
                output.summary = format!("{}\n\n{section}", output.summary);
            }
        }
        if let (JobTrigger::PullRequest, Some(number)) = (job.trigger, job.pull_request) {
            let pull = PullRequest {
                repo: &repo,
                number,
                head_sha: &job.head_sha,
            };
            self.suggest(&installation, pull, &report, &tree, &mut output)
                .await;
        }
        drop(tree);
        self.complete(&installation, &repo, run_id, conclusion, output)
            .await?;
        Ok(JobOutcome {
            check_run_id: run_id,
            conclusion,
            applied: report.applied,
            report,
            followed,
        })
    }

    /// A dependent re-sync (trigger `skill`) runs the commit applied on its ref now, which a
    /// push may have moved since it was queued (it waited behind that push in its lane).
    async fn registered_commit(&self, job: &SyncJob) -> Result<SyncJob, JobError> {
        let mut job = job.clone();
        let git_ref = job.branch.as_deref().unwrap_or_default();
        let synced = self
            .stores
            .state
            .get_synced_commit(&job.repository, git_ref)
            .await?;
        if let Some(synced) = synced {
            job.head_sha = synced.commit.clone();
            job.commit_time = Some(synced.commit_time);
            job.before = Some(synced.commit);
        }
        Ok(job)
    }

    /// Queues the re-syncs of the dependents of a push to a skill source (only pushes
    /// follow: a re-sync queues none, so there are no loops).
    async fn follow(&self, job: &SyncJob) -> Result<Followed, JobError> {
        if !matches!(job.trigger, JobTrigger::Push | JobTrigger::Reconcile) {
            return Ok(Followed::default());
        }
        let (followed, jobs) =
            dependents::follow(self.stores.state.as_ref(), &self.github, job).await?;
        if let Some(queue) = &self.jobs {
            for dependent in &jobs {
                queue.enqueue(dependent).await?;
            }
        }
        if followed.is_source {
            tracing::info!(
                queued = jobs.len(),
                over_limit = followed.over_limit.len(),
                queue = self.jobs.is_some(),
                "re-syncs of the skill source's dependents"
            );
        }
        Ok(followed)
    }

    /// Fetch, sync, and gather what the renderer needs.
    async fn check(
        &self,
        installation: &Installation,
        repo: &RepoPath,
        job: &SyncJob,
        progress: &Arc<PackagingProgress>,
    ) -> Result<(Report, RenderContext, TarballTree), JobError> {
        let registrations = self
            .stores
            .state
            .list_repository_registrations(&job.repository)
            .await?;
        let (mode, check_only) = decide_mode(job, &registrations);
        let options = TarballOptions::from_limits(&self.limits);
        let tree = fetch_tree(installation, repo, &job.head_sha, options).await?;
        let request = SyncRequest {
            repository: job.repository.clone(),
            commit: job.head_sha.clone(),
            commit_time: job.commit_time.unwrap_or_else(now),
            before: job.before.clone(),
            order: Some(Arc::new(GitHubCommitOrder {
                installation: installation.clone(),
                repo: repo.clone(),
            })),
            git_ref: job.branch.clone(),
            mode,
            now: now(),
            validate: ValidateOptions {
                limits: self.limits,
                config_paths: self.config_paths(&job.repository).await?,
            },
            // The App never reads a `file:` skill source: that would read this machine's
            // disk for whoever registered it (docs/reference.md §5.1).
            skills: Some(Arc::new(skill_fetcher(
                Some(self.github.clone()),
                self.limits,
                false,
            ))),
            previews: previews::preview_request(job, &registrations),
            samples: Some(Arc::new(crate::samples::SandboxSamples {
                limits: self.limits,
            })),
            // A dependent's re-sync moves its lock's pins into the pushed source as a pull
            // request instead (docs/reference.md §5.7, "Update pull requests").
            relock: job.skill_change.as_ref().map(|change| Update::Source {
                repository: change.repository.clone(),
                git_ref: change.git_ref.clone(),
            }),
        };
        let (mut report, tree) = self
            .sync_off_the_async_workers(tree, request, Arc::clone(progress))
            .await?;
        self.request_layers(&mut report).await?;
        if report.applied && report.skipped.is_none() {
            let applied = applying(job, &registrations);
            for (registration, last_sync) in dependents::last_syncs(job, &applied, &report) {
                let manifest_path = registration.manifest_path.as_deref();
                let state = self.stores.state.as_ref();
                state
                    .record_last_sync(&job.repository, manifest_path, &last_sync)
                    .await?;
            }
        }
        let trigger_paths = self.trigger_paths(&job.repository).await?;
        let state = self.stores.state.as_ref();
        let acceptance = settle_acceptance(installation, repo, state, job, &report, now()).await?;
        Ok((
            report,
            RenderContext {
                check_only,
                trigger_paths,
                docs_url: crate::config::docs_url(),
                drift_accepted: acceptance.accepted,
                acceptance_refused: acceptance.refused,
            },
            tree,
        ))
    }

    /// Posts the fixes of `report` on lines `pull` adds as a review, and
    /// drops their annotations from `output`; if GitHub refuses or is
    /// down, says so first in the run's text and keeps every annotation.
    async fn suggest(
        &self,
        installation: &Installation,
        pull: PullRequest<'_>,
        report: &Report,
        tree: &TarballTree,
        output: &mut CheckRunOutput,
    ) {
        let limit = self.limits.manifest_file;
        let text_of = |path: &str| tree.read_text(path, limit).ok();
        match post_suggestions(installation, pull, &report.diagnostics, &text_of).await {
            Ok(posted) => {
                if !posted.suggested.is_empty() {
                    tracing::info!(
                        pull_request = pull.number,
                        suggestions = posted.suggested.len(),
                        reviews_created = posted.created,
                        reviews_found = posted.found,
                        "suggested fixes on the pull request"
                    );
                }
                drop_suggested_annotations(output, &posted.suggested);
            }
            Err(error) => {
                tracing::warn!(pull_request = pull.number, error = %error, "cannot post the suggested fixes");
                warn_not_posted(output, &error);
            }
        }
    }

    /// Runs the pipeline on a blocking thread: validation, config assembly,
    /// slicing, hashing and tar+gzip take a core for as long as they need,
    /// and must not hold an async worker that answers webhooks and triggers
    /// meanwhile. The pipeline's own store calls are driven from that thread
    /// (`Handle::block_on`) on the runtime's I/O driver.
    async fn sync_off_the_async_workers(
        &self,
        tree: TarballTree,
        request: SyncRequest,
        progress: Arc<PackagingProgress>,
    ) -> Result<(Report, TarballTree), JobError> {
        let stores = self.stores.clone();
        let runtime = tokio::runtime::Handle::current();
        let span = tracing::Span::current();
        let blocking = tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            runtime.block_on(async move {
                let record = |done, total| progress.record(done, total);
                let report = sync(&tree, &request, &stores, &record).await;
                report.map(|report| (report, tree))
            })
        });
        match blocking.await {
            Ok(synced) => Ok(synced?),
            // A panic in the pipeline stays a panic of this job, as it was inline.
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(_) => Err(JobError::Interrupted),
        }
    }

    /// Hands the agents this sync registered whose packages need dependency layers to
    /// the packager agent ([`crate::layers`]), its outcomes joining the report. The
    /// packager's queue is set up only when an agent needs layers.
    async fn request_layers(&self, report: &mut Report) -> Result<(), JobError> {
        if report.layer_needs.is_empty() {
            return Ok(());
        }
        let packager = match crate::layers::LayerPackager::from_env(&self.stores, None).await {
            Ok(packager) => packager,
            Err(error) => {
                tracing::warn!(%error, "no dispatch queue for the packager agent");
                return Ok(());
            }
        };
        packager.request(&self.stores, report, now()).await?;
        Ok(())
    }

    /// Config manifests named by env specs whose config repository is this one.
    async fn config_paths(&self, repository: &str) -> Result<Vec<String>, JobError> {
        Ok(astrolift_sync::config_paths(self.stores.state.as_ref(), repository).await?)
    }

    async fn trigger_paths(&self, repository: &str) -> Result<Vec<String>, JobError> {
        let bindings = self
            .stores
            .state
            .list_repository_trigger_bindings(repository)
            .await?;
        Ok(bindings.into_iter().map(|b| b.url_path()).collect())
    }

    /// Completes the run; if that fails, tries to mark it failed instead.
    async fn complete(
        &self,
        installation: &Installation,
        repo: &RepoPath,
        run_id: u64,
        conclusion: Conclusion,
        output: CheckRunOutput,
    ) -> Result<(), JobError> {
        match installation
            .complete(repo, run_id, conclusion, output)
            .await
        {
            Ok(_) => {
                telemetry::count(self.function, Metric::CheckRuns, 1);
                Ok(())
            }
            Err(error) => {
                let error = JobError::GitHub(error);
                self.fail_run(installation, repo, run_id, &error.explanation())
                    .await;
                Err(error)
            }
        }
    }

    /// Completes the run as `failure`, retrying for `fail_run_patience`
    /// (GitHub may be down for a while); logs if it never gets through.
    async fn fail_run(
        &self,
        installation: &Installation,
        repo: &RepoPath,
        run_id: u64,
        explanation: &str,
    ) {
        let deadline = Instant::now() + self.fail_run_patience;
        let mut wait = Duration::from_millis(500);
        loop {
            match installation.fail_run(repo, run_id, explanation).await {
                Ok(_) => {
                    telemetry::count(self.function, Metric::CheckRuns, 1);
                    return;
                }
                Err(error) if Instant::now() + wait >= deadline => {
                    tracing::error!(error = %error, run_id, "cannot complete the check run as failed");
                    return;
                }
                Err(_) => {
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(8));
                }
            }
        }
    }
}

/// Check or apply, and why only check (docs/reference.md §1): a repository
/// registers only explicitly; only a push to a registered ref, through the
/// installation the registration records, applies, and it applies exactly the
/// registrations (per manifest, or of every manifest) of that ref and
/// installation; pull requests (forks above all) and re-requested checks only
/// check.
///
/// A registration without an installation id (registered for local use
/// without `--installation-id`) accepts any installation: production
/// registrations record it (docs/deploy.md), and SECURITY.md says so.
pub fn decide_mode(
    job: &SyncJob,
    registrations: &[RepoRegistration],
) -> (Mode, Option<CheckOnlyReason>) {
    if registrations.is_empty() {
        let suggested = job
            .default_branch
            .as_deref()
            .or(job.branch.as_deref())
            .unwrap_or("main");
        let how_to_register = register_command(&job.repository, suggested);
        return (
            Mode::Check,
            Some(CheckOnlyReason::NotRegistered { how_to_register }),
        );
    }
    let same_installation = of_installation(job, registrations);
    let Some(first) = same_installation.first() else {
        let registered = registrations
            .iter()
            .find_map(|r| r.installation_id)
            .unwrap_or_default();
        let reason = CheckOnlyReason::OtherInstallation {
            registered,
            job: job.installation_id,
        };
        return (Mode::Check, Some(reason));
    };
    let reason = match job.trigger {
        JobTrigger::Push | JobTrigger::SkillChanged | JobTrigger::Reconcile => {
            let applying: Vec<Coverage> = applying(job, registrations)
                .into_iter()
                .map(Coverage::from)
                .collect();
            if !applying.is_empty() {
                return (
                    Mode::Apply {
                        registrations: applying,
                    },
                    None,
                );
            }
            let mut refs: Vec<&str> = same_installation
                .iter()
                .map(|r| r.registered_ref.as_str())
                .collect();
            refs.sort_unstable();
            refs.dedup();
            CheckOnlyReason::OtherRef {
                registered_ref: if refs.len() == 1 {
                    first.registered_ref.clone()
                } else {
                    refs.join(", ")
                },
            }
        }
        JobTrigger::PullRequest if job.fork => CheckOnlyReason::ForkPullRequest,
        JobTrigger::PullRequest | JobTrigger::Closed | JobTrigger::Comment => {
            CheckOnlyReason::PullRequest
        }
        JobTrigger::Rerequest => CheckOnlyReason::Rerequested,
    };
    (Mode::Check, Some(reason))
}

/// The registrations the job's installation may apply: those recording it, or none.
fn of_installation<'r>(
    job: &SyncJob,
    registrations: &'r [RepoRegistration],
) -> Vec<&'r RepoRegistration> {
    registrations
        .iter()
        .filter(|r| r.installation_id.is_none_or(|id| id == job.installation_id))
        .collect()
}

/// The registrations a job applies: of its installation and, for a push (or a dependent
/// re-sync), of the branch; none for other triggers.
fn applying<'r>(job: &SyncJob, registrations: &'r [RepoRegistration]) -> Vec<&'r RepoRegistration> {
    if !matches!(
        job.trigger,
        JobTrigger::Push | JobTrigger::SkillChanged | JobTrigger::Reconcile
    ) {
        return Vec::new();
    }
    of_installation(job, registrations)
        .into_iter()
        .filter(|r| job.branch.as_deref() == Some(r.registered_ref.as_str()))
        .collect()
}
