//! "Accept drift": the check run's requested action, honoured only for a person
//! with write permission.
//!
//! A click is a `check_run.requested_action` delivery; ingress queues it as a
//! re-check of that head ([`crate::job::AcceptDriftRequest`]), and the runner,
//! after the sync, settles it here: when the head has critical drift, GitHub is
//! asked for the sender's permission
//! (`GET /repos/{o}/{r}/collaborators/{user}/permission`); with `write`,
//! `maintain` or `admin`, one audit event per critically drifted manifest
//! records who accepted which drift at that head sha
//! ([`astrolift_store::state::drift_acceptance`]); otherwise nothing is
//! recorded and the run says why. Every run of a head then reads that head's
//! acceptances: keyed by head sha, so a new push needs a new acceptance.

use crate::check_run::{AcceptanceRefusal, AcceptedDrift};
use astrolift_forge::github::{Installation, RepoPath};
use astrolift_store::state::{Acceptor, StateStore, UnixSeconds, accepted_by, drift_acceptance};
use astrolift_sync::Report;

use crate::job::SyncJob;
use crate::job_error::JobError;

/// What the run shows of drift acceptance: who accepted which manifest's drift at this
/// head, and a refused request.
pub(crate) struct Acceptance {
    pub accepted: Vec<AcceptedDrift>,
    pub refused: Option<AcceptanceRefusal>,
}

/// Honours or refuses `job`'s request to accept drift (if any), then reads the head's
/// acceptances.
pub(crate) async fn settle_acceptance(
    installation: &Installation,
    repo: &RepoPath,
    state: &dyn StateStore,
    job: &SyncJob,
    report: &Report,
    now: UnixSeconds,
) -> Result<Acceptance, JobError> {
    let mut refused = None;
    let critical = report.critical_drift();
    if let Some(request) = job.accept_drift.as_ref().filter(|_| !critical.is_empty()) {
        let permission = installation
            .collaborator_permission(repo, &request.sender)
            .await?;
        match permission {
            Some(permission) if permission.can_write() => {
                let who = Acceptor {
                    login: &request.sender,
                    role: permission.shown(),
                };
                for manifest in &critical {
                    let changes = report.critical_changes(manifest);
                    let event = drift_acceptance(
                        &job.repository,
                        manifest,
                        &job.head_sha,
                        who,
                        &changes,
                        now,
                    );
                    state.workspaces().accept_drift(&event).await?;
                }
                tracing::info!(sender = %request.sender, manifests = critical.len(), "drift accepted");
            }
            other => {
                tracing::info!(sender = %request.sender, "drift acceptance refused: no write permission");
                refused = Some(AcceptanceRefusal {
                    login: request.sender.clone(),
                    permission: other.map(|p| p.shown().to_owned()),
                });
            }
        }
    }
    let events = state
        .workspaces()
        .list_drift_acceptances(&job.repository, &job.head_sha)
        .await?;
    let accepted = events
        .iter()
        .map(|event| AcceptedDrift {
            manifest_path: event.manifest_path.clone(),
            login: accepted_by(event).unwrap_or_default().to_owned(),
        })
        .collect();
    Ok(Acceptance { accepted, refused })
}
