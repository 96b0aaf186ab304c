//! The sync pipeline: a source tree at one commit in, a [`Report`] out.
//!
//! `sync` discovers and validates every agent (`manifest`), packages each
//! clean one (`package`), plans against the registered agents of the
//! repository (`store`), and in apply mode uploads new blobs and then writes
//! state in one conditional change set.
//!
//! Invariants:
//! - **Blobs before state.** Archives and snapshots are uploaded
//!   (put-if-absent) before any state write references them, so state never
//!   points at a missing object.
//! - **Converges.** A crash between any two steps, then a re-run of the same
//!   request, ends in the same state as one clean run, with no duplicates:
//!   uploads are content-addressed and idempotent; the state write is one
//!   conditional change set planned against what is stored.
//! - **Idempotent.** Re-running a commit writes nothing: unchanged agents
//!   produce no change and no upload, and the synced commit is not rewritten.
//! - **Ordered.** An older commit never overwrites a registration written
//!   from a newer one, decided by commit ancestry, never by committer
//!   timestamps: a pushed commit that is an ancestor of the registered one is
//!   skipped (the report says why); a fast-forward (`before` is the
//!   registered commit), a force push (diverged) and a re-run apply. The
//!   caller passes the ancestry oracle ([`CommitOrder`]); without one (local
//!   runs) the pushed commit applies.
//! - **Failures stay local.** An agent with errors is `failed`: it is not
//!   registered and its previous registration is kept; the others proceed.
//! - **Env specs of the project.** A trigger may only name an env spec of
//!   the project it registers under (`env_specs`); another one fails its
//!   agent with an error on the `env_spec` line.
//! - **Remote skills resolved once per sync** ([`skills`]). Each skill
//!   repository is fetched once per (repository, ref) through the caller's
//!   [`SkillFetcher`], every agent's catalogue and organization references
//!   resolve against those trees (an agent's aliases are its project's), a
//!   failing reference fails its agent, and a resolved skill is packaged and
//!   pinned (commit and content hash) in the snapshot.
//! - **Samples checked with validation** ([`samples`]). The caller's [`samples::SampleChecker`]
//!   evaluates every binding's sample requests right after validation; a mismatch fails its
//!   agent as a validation error does.
//! - **Per-manifest registrations.** Registrations are keyed by (repository,
//!   manifest path): an apply writes exactly the manifests the registrations it
//!   applies cover ([`Mode::Apply`]), each under its registration's project; a
//!   manifest none covers is `unregistered` (checked only, nothing written,
//!   any earlier registration of it kept), and the report lists the manifests
//!   no registration of the repository covers (`uncovered`).
//! - **Workspace manifests register like agents** (`workspaces`): snapshot
//!   blob first, then a record conditional on its version; every sync
//!   reports their drift from the registered ones through the drift engine
//!   of `astrolift drift`, so a pull request's critical drift is shown and
//!   concludes its check `action_required` (rendered by `astrolift_bot::check_run`).
//! - **Previews touch no registered agent** ([`previews`]): a pull-request head that a
//!   registration with previews covers uploads its agents' packages and records one preview
//!   per agent, and never an agent record, a binding or a workflow.
//! - **Nothing is deleted.** A removed manifest makes its agent `orphaned`;
//!   only an explicit teardown (in `store`) retires it, and audit events stay.
//!
//! Deliberately absent: GitHub (where the tree comes from, where the report
//! goes, how commits are ordered (`CommitOrder`) and how skill repositories
//! are fetched (`SkillFetcher`) are the caller's),
//! rendering (the report is the single input
//! of every renderer), and any clock (the caller passes `now`).
#![forbid(unsafe_code)]

pub mod bindings;
pub mod commands;
pub mod concurrency;
pub mod configs;
pub mod drift;
mod env_specs;
mod error;
pub mod local_skills;
pub mod locking;
pub mod order;
mod package_step;
mod pipeline;
pub mod plan;
pub mod previews;
pub mod report;
mod request;
pub mod samples;
mod scope;
pub mod skills;
pub mod trigger_changes;
mod upload;
pub mod workflows;
pub mod workspaces;

pub use concurrency::{InvalidConcurrency, SyncConcurrency};
pub use configs::config_paths;
pub use drift::{DriftItem, DriftSeverity};
pub use error::SyncError;
pub use local_skills::{LocalSkillFetcher, RoutedSkillFetcher};
pub use order::{CommitOrder, Order, OrderError, OrderFuture};
pub use pipeline::sync;
pub use plan::{PlanEntry, PlanStatus};
pub use previews::MAX_PREVIEWED_PULL_REQUESTS;
pub use report::{Coverage, LayerRequest, Mode, Report, ReportCounts};
pub use report::{PreviewEntry, PreviewsReport};
pub use request::PreviewRequest;
pub use request::{Stores, SyncRequest};
pub use skills::{SkillFetch, SkillFetchError, SkillFetchFuture, SkillFetcher, SkillTree};
