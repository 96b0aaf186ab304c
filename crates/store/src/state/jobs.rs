//! Sync jobs waiting in `serve`'s durable queue (docs/reference.md §8, "The job queue"),
//! and the failed ones it gave up on (the dead letter).
//!
//! A job is recorded `queued` before `serve` answers its webhook `202`, moves to `running`
//! while an attempt runs, and is deleted once it succeeds; one that its retry policy gave
//! up on stays `failed`, with its last error, until `astrolift jobs retry` queues it
//! again. So what a stopped process leaves behind is exactly what its next start resumes.
//! Ids sort in the order jobs were queued: listings come out in that order, and a lane's
//! jobs are resumed in it.
//!
//! One concern of the state store, reached through
//! [`StateStore::jobs`](super::StateStore::jobs); its contract suite is
//! `crates/store/tests/it/job_contract.rs`, run on SQLite and DynamoDB.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::model::{DeliveryOutcome, DeliveryState, UnixSeconds};
use crate::{BoxFuture, StoreResult};

/// Where a recorded job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting in its lane.
    Queued,
    /// An attempt is running (or was, when its process stopped: the next start resumes it).
    Running,
    /// Its retry policy gave up: the dead letter.
    Failed,
}

impl JobState {
    /// The state as stored and shown (`queued`, `running`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Failed => "failed",
        }
    }

    /// The state named `name` ([`Self::as_str`]'s), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == name)
    }

    /// Every state, in lifecycle order.
    pub const ALL: [JobState; 3] = [JobState::Queued, JobState::Running, JobState::Failed];
}

/// One recorded job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Sorts in the order jobs were queued (fixed-width digits).
    pub id: String,
    pub state: JobState,
    /// Attempts started so far.
    pub attempts: u32,
    /// The job itself, as the queue's caller encoded it (opaque to the store).
    pub job: JobJson,
    pub queued_at: UnixSeconds,
    /// When its state, attempts or error last changed.
    pub updated_at: UnixSeconds,
    /// The last attempt's error, once one failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where a job's write moves the webhook delivery that made it
/// ([`DeliveryStore::mark_delivery`](super::DeliveryStore::mark_delivery)'s arguments): the
/// durable queue writes a job's state and its delivery's together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryMark<'a> {
    pub delivery_id: &'a str,
    pub state: DeliveryState,
    pub now: UnixSeconds,
}

/// A job as its queue encoded it: JSON kept as text, so that a record is written and read
/// back without building a `serde_json::Value` of the job (the durable queue writes each
/// record two or three times). Serialized as the JSON it holds.
/// Two compare equal when their JSON is the same value, whatever the order of its keys (a
/// backend may keep an object's keys in another order: DynamoDB's maps do).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobJson(Box<serde_json::value::RawValue>);

impl JobJson {
    /// `job` encoded.
    pub fn of<T: Serialize>(job: &T) -> Result<Self, serde_json::Error> {
        serde_json::value::to_raw_value(job).map(JobJson)
    }

    /// The job as stored: `text`, once it is known to be JSON.
    pub fn from_text(text: String) -> Result<Self, serde_json::Error> {
        serde_json::value::RawValue::from_string(text).map(JobJson)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The job decoded as `T`.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }

    /// The job as a JSON value (`null` if it is not JSON, which `of` never makes): for
    /// reading a field or two of a recorded job.
    pub fn value(&self) -> serde_json::Value {
        self.decode().unwrap_or_default()
    }
}

impl PartialEq for JobJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get() || self.value() == other.value()
    }
}

/// The jobs of a durable queue. Dyn-compatible.
///
/// Contract (the contract suite runs it on SQLite and DynamoDB):
/// - `put_job` records a new id only (`StoreError::Conflict` for an id recorded already);
/// - `put_job_for_delivery` records the delivery as `DeliveryStore::record_delivery` does and
///   the job with it, in one transaction: a duplicate delivery records no job, and no
///   failure leaves the one without the other;
/// - `update_job` replaces a recorded job whole, and writes nothing for one not recorded;
/// - `update_job_marking` and `delete_job_marking` write the job as `update_job` and
///   `delete_job` do and mark its delivery as `DeliveryStore::mark_delivery` does, whether or
///   not the job was recorded (a delivery not recorded is not marked); on SQLite in one
///   transaction, on DynamoDB the job first;
/// - listings are in id order and see the last write.
pub trait JobStore: Send + Sync {
    /// Records a new job.
    fn put_job<'a>(&'a self, job: &'a JobRecord) -> BoxFuture<'a, StoreResult<()>>;

    /// Records the webhook delivery `delivery_id` for `ttl` (as
    /// [`DeliveryStore::record_delivery`](super::DeliveryStore::record_delivery) does) and,
    /// when it is new, `job` with it, in one transaction: what `serve` does before it
    /// answers a delivery `202` (docs/reference.md §8, "The job queue"). A duplicate
    /// delivery records nothing; an id recorded already is `StoreError::Conflict`, and then
    /// the delivery is not recorded either.
    fn put_job_for_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        now: UnixSeconds,
        ttl: Duration,
        job: &'a JobRecord,
    ) -> BoxFuture<'a, StoreResult<DeliveryOutcome>>;

    /// Replaces the recorded job of `job.id`; `Ok(false)`, writing nothing, when there is
    /// none (deleted meanwhile).
    fn update_job<'a>(&'a self, job: &'a JobRecord) -> BoxFuture<'a, StoreResult<bool>>;

    /// Deletes a job; `Ok(false)` when there was none.
    fn delete_job<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>>;

    /// [`Self::update_job`] and the mark of the job's delivery, written together: an
    /// attempt starting (`running`), a job waiting to be retried (`queued`), or the dead
    /// letter (`failed`). `Ok(false)` when the job is not recorded.
    fn update_job_marking<'a>(
        &'a self,
        job: &'a JobRecord,
        mark: DeliveryMark<'a>,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// [`Self::delete_job`] and the mark of the job's delivery (`succeeded`), written
    /// together. `Ok(false)` when there was no job.
    fn delete_job_marking<'a>(
        &'a self,
        id: &'a str,
        mark: DeliveryMark<'a>,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// The job `id`, if recorded.
    fn get_job<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<JobRecord>>>;

    /// The recorded jobs (only those in `state`, when given), in id order.
    fn list_jobs(&self, state: Option<JobState>) -> BoxFuture<'_, StoreResult<Vec<JobRecord>>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> JobJson {
        JobJson(serde_json::value::RawValue::from_string(text.into()).expect("json"))
    }

    #[test]
    fn a_job_is_kept_as_its_text_and_compares_as_a_json_value() {
        let job = serde_json::json!({"repository": "octo/agents", "branch": "main"});
        let encoded = JobJson::of(&job).expect("encoded");
        assert_eq!(
            encoded.get(),
            r#"{"repository":"octo/agents","branch":"main"}"#
        );
        assert_eq!(encoded.value(), job);
        // A backend that keeps an object's keys in another order holds the same job.
        assert_eq!(
            encoded,
            json(r#"{ "branch": "main", "repository": "octo/agents" }"#)
        );
        assert_ne!(
            encoded,
            json(r#"{"repository":"octo/agents","branch":"dev"}"#)
        );
        // Written into a record as the JSON it holds, not as a string of it.
        let record =
            serde_json::to_string(&serde_json::json!({"job": encoded})).expect("serialized");
        assert_eq!(
            record,
            r#"{"job":{"repository":"octo/agents","branch":"main"}}"#
        );
    }
}
