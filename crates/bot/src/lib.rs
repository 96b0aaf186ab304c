//! The GitHub App at run time: the glue between GitHub, the queue and the
//! pipeline, shared by `astrolift serve` and the three Lambda functions.
//!
//! Owns:
//! - [`ingress`]: a webhook in → verified ([`astrolift_forge::webhook`]) →
//!   installations recorded → GitHub-sourced triggers fanned out → delivery
//!   deduplicated (conditional write) → [`job::SyncJob`] queued → 202/200.
//! - [`job`]: the sync job message and which events make one; the report job
//!   that relays a terminal result from the trigger function to the worker.
//! - [`queue`]: the job queues — SQS FIFO (group = repository id, dedupe =
//!   delivery id), the in-process lanes of `serve`'s durable queue, and a
//!   recording queue for tests.
//! - [`durable`]: `serve`'s durable queue: jobs recorded in the state store
//!   (`StateStore::jobs`) before they are queued, resumed at start in lane order, retried
//!   as [`retry`] says, dead-lettered (`failed`) when it gives up, its check run then
//!   concluded `failure` with a **Re-run** button; drained on SIGTERM.
//! - [`dead_letter`]: a failed job queued again, by `astrolift jobs retry` or a click on
//!   **Re-run** (a `check_run.requested_action` whose identifier is the job id, which
//!   ingress hands over).
//! - [`sqs_dead_letter`]: the sync queue's SQS dead-letter queue on AWS, listed without
//!   consuming it and redriven to its source queue (`astrolift jobs list|retry --queue-url`).
//! - [`runner`]: a job in → check run `in_progress` → tarball streamed →
//!   [`astrolift_sync::sync`] in check or apply mode → for a pull request,
//!   suggested fixes posted as a review ([`suggest`]) → check run completed; a long
//!   sync shows `N of M agents packaged` on the run meanwhile ([`progress`]).
//! - [`report`]: terminal results reported to GitHub (a comment or a check
//!   run), by the App or relayed to the sync worker over the report queue.
//! - Presentation, everything shaped for GitHub's UI: [`check_run`] (a sync
//!   report rendered as the check run's title, summary, text, conclusion and
//!   actions, repository text escaped as data), [`annotations`] (a
//!   diagnostic as an annotation, the diagnostics' conclusion) and
//!   [`suggestions`] (which fixes become review suggestions). The shell
//!   commands they show come from `astrolift_sync::commands`.
//! - [`suggest`]: a pull request's fixable diagnostics on lines it adds →
//!   one `COMMENT` review per head (batches of 50), idempotent by a hidden
//!   marker; shared with `astrolift suggest` (GitHub Actions).
//! - `accept`: the check run's "Accept drift" requested action, honoured
//!   only for a sender with write permission (GitHub's collaborator
//!   permission), recorded as audit events keyed by head sha.
//! - [`dependents`]: a push to a skill source → the registrations whose last sync named
//!   it (within the projects that registered it; the catalogue: any) → at most
//!   [`dependents::MAX_DEPENDENTS`] `skill` re-sync jobs in their registered-ref lanes;
//!   what each applying sync records for it (`RepoRegistration::last_sync`).
//! - [`reconcile`]: every registered ref's head asked of GitHub (one conditional request
//!   each, `If-None-Match` with the kept `ETag`; bounded concurrency; an installation low on
//!   rate limit skipped) → a `reconcile` sync job in its push lane where the head is not
//!   the synced commit; a skill source or the catalogue that moved re-syncs its dependents.
//! - [`samples`]: the sync's sample checker: each binding's sample requests evaluated
//!   in the jq sandbox (`astrolift_trigger::samples`).
//! - [`skills`]: the sync's skill fetcher: a skill repository read as the
//!   installation that covers it, each (repository, ref) once per sync.
//! - [`commit_order`]: the sync's ancestry oracle, from GitHub's compare API
//!   (asked only when a push is not a fast-forward of the registered commit).
//! - [`retry`]: how `serve` tries a failed job again (backoff with jitter, or the
//!   wait GitHub asked for; a bounded number of attempts).
//! - [`config`]: the parts built from the environment once per process.
//! - [`telemetry`]: JSON logs and CloudWatch EMF metrics.
//! - [`triggers`]: the trigger service from the environment, and GitHub-sourced
//!   fan-out ([`ingress::EventFanOut`] for `astrolift_trigger::TriggerService`).
//! - [`routes`]: the one route table, an axum `Router` built from parts
//!   (webhook, triggers and callbacks, health check, the 404 fallback) that
//!   `serve` and the webhook and trigger functions run; its handlers answer
//!   through `Answer::into_response` only, and how a body is read is the
//!   caller's ([`routes::ReadBody`]).
//!
//! Invariants:
//! - **Ingress never syncs.** It only verifies, records, fans out and
//!   queues, so it answers in milliseconds.
//! - **A delivery is synced until one sync succeeds.** The delivery id is
//!   recorded before the job is queued; a job that cannot be queued forgets
//!   the id again, so that a redelivery is processed rather than lost. The
//!   runner records where the job is; a redelivery is queued again only when
//!   the job failed or was lost (queued or running for 15 minutes).
//! - **No run left `in_progress`.** Once the runner has created a check
//!   run, every path completes it: with the report, or as `failure` with a
//!   plain explanation (retried while GitHub is down); a process killed
//!   mid-sync aside, whose job runs again, in a new run.
//! - **Reconcile queues each head once.** Its job's delivery id is a digest of (repository,
//!   ref, head), recorded before it is queued, so a repeated pass queues no duplicate.
//! - **Dependents follow, bounded.** Only pushes (and reconcile's syncs) queue re-syncs (a re-sync queues none, so
//!   none loop), at most 32 per push, and an organization skill repository re-syncs only
//!   the registrations of the projects that registered it.
//! - **Only pushes to the registered ref apply** (and dependent re-syncs of its applied
//!   commit, and reconcile's syncs of its head). Unregistered repositories,
//!   other refs, pull requests (forks above all) and re-requested checks are
//!   checked only, and the check run says why.
//! - **Drift is accepted only by writers.** "Accept drift" asks GitHub for
//!   the sender's permission and records an acceptance (for one head sha)
//!   only for write, maintain or admin; it never applies anything.
//! - **Nothing is pushed.** Fixes reach a branch only as review suggestions
//!   that a person commits; a failure to post them never fails the run.
//!
//! Deliberately absent: HTTP servers and Lambda event types. [`routes`] only
//! routes requests that something else received: `serve` in the CLI runs its
//! `Router` in hyper's connection loop, the webhook and trigger functions
//! through `lambda_http::run`, and the sync function hands SQS events to
//! [`runner::SyncRunner::run`]; nothing here listens on a socket or reads a
//! Lambda event. Also absent: business rules of validation, packaging and
//! planning (the `sync` pipeline's).
#![forbid(unsafe_code)]

mod accept;
pub mod annotations;
pub mod check_run;
pub mod comment_commands;
mod comments;
pub mod commit_order;
pub mod config;
pub mod dead_letter;
pub mod dependents;
pub mod durable;
pub mod ingress;
pub mod job;
mod job_error;
pub mod layers;
pub mod lock_update;
mod perform;
pub mod previews;
pub mod progress;
mod pull_requests;
pub mod queue;
pub mod reconcile;
pub mod report;
pub mod retry;
pub mod routes;
pub mod runner;
pub mod samples;
pub mod skills;
pub mod sqs_dead_letter;
pub mod state_machines;
pub mod suggest;
pub mod suggestions;
pub mod telemetry;
pub mod trigger_replay;
pub mod triggers;

pub use ingress::{Answer, EventFanOut, FanOutSummary, GithubDelivery, Ingress};
pub use job::{
    AcceptDriftRequest, JobTrigger, QueuedJob, ReportJob, SkillChange, SyncJob, job_for_event,
};
pub use queue::{JobQueue, LateJobQueue, LocalJobQueue, RecordingJobQueue, SqsJobQueue};
pub use runner::{CHECK_NAME, JobError, JobOutcome, SyncRunner};
