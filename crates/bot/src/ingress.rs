//! The webhook function's job, shared with `serve`: verify → record
//! installations → fan out to GitHub-sourced triggers → dedupe → queue the
//! sync job → answer. It never runs a sync: it answers in milliseconds,
//! because GitHub fails a delivery after 10 s.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use astrolift_dispatch::answer::Answer;
use astrolift_forge::webhook::{
    Accepted, Event, InstallationEvent, InstallationRepositoriesEvent, WebhookRequest,
    WebhookSecrets, accept,
};
use astrolift_manifest::Limits;
use astrolift_store::BoxFuture;
use astrolift_store::state::{DeliveryOutcome, Installation, StateStore, UnixSeconds};
pub use astrolift_trigger::GithubDelivery;
use serde_json::{Value, json};
use tracing::{Instrument as _, field};

use crate::dead_letter::{Retried, is_job_id, rerun};
use crate::job::{NoJob, job_for_event};
use crate::queue::{Delivery, DeliveryQueueError, JobQueue};
use crate::telemetry::{self, Metric};

/// GitHub-sourced trigger bindings, as the webhook sees them: evaluate and
/// dispatch every binding of `repository` that matches the event.
pub trait EventFanOut: Send + Sync + fmt::Debug {
    fn fan_out<'a>(&'a self, delivery: GithubDelivery<'a>) -> BoxFuture<'a, FanOutSummary>;
}

/// What one delivery's fan-out did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FanOutSummary {
    /// New dispatches (duplicates and filtered-out bindings not counted).
    pub dispatched: usize,
    /// Matching bindings that could not run for a reason that passes (a 503:
    /// every jq evaluation slot taken, the state or secret store unavailable).
    /// The delivery is then answered 503, so that GitHub shows it failed and
    /// a redelivery (same delivery id, so the dispatches that were recorded
    /// are not recorded twice) runs them; a 200 would lose them.
    pub unavailable: usize,
}

/// How long a delivery id is remembered (GitHub redelivers on request, for
/// up to a few days; a week covers manual redelivery of recent failures).
pub const DELIVERY_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// Webhook ingress. Built once per process (Lambda container or `serve`).
#[derive(Debug, Clone)]
pub struct Ingress {
    pub state: Arc<dyn StateStore>,
    pub secrets: WebhookSecrets,
    pub jobs: Arc<dyn JobQueue>,
    pub triggers: Option<Arc<dyn EventFanOut>>,
    pub limits: Limits,
    /// The `Function` dimension of metrics: `webhook` or `serve`.
    pub function: &'static str,
}

impl Ingress {
    /// Handles one delivery. Every outcome is an answer; nothing panics and
    /// nothing unverified is parsed or stored.
    pub async fn receive(&self, request: WebhookRequest<'_>) -> Answer {
        let span = tracing::info_span!(
            "webhook",
            delivery_id = field::Empty,
            event = field::Empty,
            repository = field::Empty,
            commit = field::Empty,
        );
        let started = Instant::now();
        let answer = self.receive_in_span(request).instrument(span.clone()).await;
        let _entered = span.enter();
        let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        let outcome = answer.body.get("status").and_then(Value::as_str);
        tracing::info!(
            status = answer.status,
            outcome,
            duration_ms,
            "webhook answered"
        );
        answer
    }

    async fn receive_in_span(&self, request: WebhookRequest<'_>) -> Answer {
        let accepted = match accept(request, &self.secrets, self.limits.webhook_body) {
            Ok(accepted) => accepted,
            Err(error) => {
                telemetry::count(self.function, Metric::Failures, 1);
                tracing::warn!(error = %error, "delivery refused");
                return Answer::error(error.status(), error);
            }
        };
        telemetry::count(self.function, Metric::Deliveries, 1);
        let span = tracing::Span::current();
        span.record("delivery_id", accepted.delivery_id.as_str());
        span.record("event", accepted.event_name.as_str());
        if let Some(repository) = &accepted.envelope.repository {
            span.record("repository", repository.as_str());
        }
        match &accepted.event {
            Event::Ping(ping) => Answer::new(200, json!({ "status": "pong", "zen": ping.zen })),
            Event::Installation(event) => self.record_installation(event).await,
            Event::InstallationRepositories(event) => self.record_repositories(event).await,
            _ => self.route(&accepted).await,
        }
    }

    /// Trigger fan-out, then the sync job if the event asks for one.
    /// A fan-out with bindings that could not run now turns a success into
    /// a 503 ([`FanOutSummary::unavailable`]); the sync job, if any, is
    /// queued first either way, and a redelivery finds it recorded.
    async fn route(&self, accepted: &Accepted) -> Answer {
        let fan_out = self.fan_out(accepted).await;
        let dispatched = fan_out.dispatched;
        let rerun = match &accepted.event {
            Event::CheckRun(run) => run
                .requested_identifier()
                .filter(|id| is_job_id(id))
                .map(|id| (id, run.repository.full_name.as_str())),
            _ => None,
        };
        let answer = match rerun {
            Some((id, repository)) => self.rerun(id, repository).await,
            None => self.sync_job(accepted, dispatched).await,
        };
        if fan_out.unavailable == 0 || answer.status >= 500 {
            return answer;
        }
        let what = format!(
            "{} trigger binding(s) could not run now ({dispatched} dispatched)",
            fan_out.unavailable
        );
        self.unavailable(&what, &"evaluation slots or a store unavailable")
    }

    /// The sync job the event asks for, queued once; or why there is none.
    async fn sync_job(&self, accepted: &Accepted, dispatched: usize) -> Answer {
        match job_for_event(&accepted.delivery_id, &accepted.event) {
            Ok(job) => {
                tracing::Span::current().record("commit", job.head_sha.as_str());
                self.queue_once(&accepted.delivery_id, &job).await
            }
            Err(reason) => Answer::new(
                if dispatched > 0 { 202 } else { 200 },
                json!({ "status": "ignored", "reason": no_job_reason(&reason), "dispatched": dispatched }),
            ),
        }
    }

    async fn fan_out(&self, accepted: &Accepted) -> FanOutSummary {
        let envelope = &accepted.envelope;
        let (Some(triggers), Some(repository)) = (&self.triggers, &envelope.repository) else {
            return FanOutSummary::default();
        };
        let delivery = GithubDelivery {
            repository,
            event_name: &accepted.event_name,
            action: envelope.action.as_deref(),
            delivery_id: &accepted.delivery_id,
            envelope,
            body: &accepted.body,
        };
        let summary = triggers.fan_out(delivery).await;
        if summary.dispatched > 0 {
            telemetry::count(self.function, Metric::Dispatches, summary.dispatched as u64);
        }
        summary
    }

    /// Records the delivery id and queues the job ([`JobQueue::enqueue_delivery`]). A
    /// delivery seen before is acknowledged and not queued again; a job that cannot be
    /// queued leaves the delivery forgotten again, so that its redelivery is processed.
    async fn queue_once(&self, delivery_id: &str, job: &crate::job::SyncJob) -> Answer {
        let delivery = Delivery {
            id: delivery_id,
            now: now(),
            ttl: DELIVERY_TTL,
        };
        match self
            .jobs
            .enqueue_delivery(self.state.as_ref(), delivery, job)
            .await
        {
            Ok(DeliveryOutcome::Duplicate) => Answer::new(200, json!({ "status": "duplicate" })),
            Ok(DeliveryOutcome::New) => Answer::new(202, json!({ "status": "queued" })),
            Err(DeliveryQueueError::Record(error)) => {
                self.unavailable("cannot record the delivery", &error)
            }
            Err(DeliveryQueueError::Queue(error)) => {
                self.unavailable("cannot queue the sync job", &error)
            }
        }
    }

    /// A click on the **Re-run** button of a job `serve`'s queue gave up on
    /// ([`crate::check_run::dead_letter`]): the job, if it is this repository's and still
    /// failed, is queued again (`202`); anything else is acknowledged (`200`).
    async fn rerun(&self, job_id: &str, repository: &str) -> Answer {
        match rerun(self.state.jobs(), job_id, repository, now()).await {
            Ok(Retried::Queued) => {
                tracing::info!(job_id, "Re-run clicked: the failed job is queued again");
                Answer::new(202, json!({ "status": "queued", "job_id": job_id }))
            }
            Ok(Retried::NotFailed(state)) => Answer::new(
                200,
                json!({ "status": "ignored", "reason": format!("the job is {}", state.as_str()) }),
            ),
            Ok(Retried::NotFound | Retried::OtherRepository) => Answer::new(
                200,
                json!({ "status": "ignored", "reason": "no such failed job" }),
            ),
            Err(error) => self.unavailable("cannot queue the failed job again", &error),
        }
    }

    fn unavailable(&self, what: &str, error: &dyn fmt::Display) -> Answer {
        telemetry::count(self.function, Metric::Failures, 1);
        tracing::error!(error = %error, "{what}");
        Answer::error(503, format!("{what}; redeliver later"))
    }

    async fn record_installation(&self, event: &InstallationEvent) -> Answer {
        let id = event.installation.id;
        let result = if event.action == "deleted" {
            self.state.delete_installation(id).await
        } else {
            let record = Installation {
                repositories: event
                    .repositories
                    .iter()
                    .map(|r| r.full_name.clone())
                    .collect(),
                suspended: event.action == "suspend",
                updated_at: now(),
                ..new_installation(
                    id,
                    event
                        .installation
                        .account
                        .as_ref()
                        .map(|a| a.login.as_str()),
                )
            };
            self.state.put_installation(&record).await
        };
        match result {
            Ok(()) => Answer::new(200, json!({ "status": "recorded", "action": event.action })),
            Err(error) => self.unavailable("cannot record the installation", &error),
        }
    }

    async fn record_repositories(&self, event: &InstallationRepositoriesEvent) -> Answer {
        let id = event.installation.id;
        let mut record = match self.state.get_installation(id).await {
            Ok(found) => found.unwrap_or_else(|| {
                new_installation(
                    id,
                    event
                        .installation
                        .account
                        .as_ref()
                        .map(|a| a.login.as_str()),
                )
            }),
            Err(error) => return self.unavailable("cannot read the installation", &error),
        };
        let removed: Vec<&str> = event
            .repositories_removed
            .iter()
            .map(|r| r.full_name.as_str())
            .collect();
        record
            .repositories
            .retain(|r| !removed.contains(&r.as_str()));
        for added in &event.repositories_added {
            if !record.repositories.contains(&added.full_name) {
                record.repositories.push(added.full_name.clone());
            }
        }
        record.repositories.sort();
        record.updated_at = now();
        match self.state.put_installation(&record).await {
            Ok(()) => Answer::new(200, json!({ "status": "recorded", "action": event.action })),
            Err(error) => self.unavailable("cannot record the installation", &error),
        }
    }
}

/// An installation record with nothing known yet but its id and account.
fn new_installation(id: u64, login: Option<&str>) -> Installation {
    Installation {
        installation_id: id,
        account: login.unwrap_or_default().to_owned(),
        repositories: Vec::new(),
        suspended: false,
        updated_at: 0,
    }
}

fn no_job_reason(reason: &NoJob) -> &'static str {
    match reason {
        NoJob::NotASync => "not an event that syncs",
        NoJob::NotABranchPush => "a branch deletion or a tag push",
        NoJob::CoveredByPush => "check_suite.requested is covered by the push event",
        NoJob::NoInstallation => "the event names no installation",
        NoJob::NoCommand => "no /astrolift command of a person on a pull request",
    }
}

pub(crate) fn now() -> UnixSeconds {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
