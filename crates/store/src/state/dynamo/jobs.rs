//! The jobs concern on DynamoDB ([`JobStore`]), in the one table: a job at `pk = JOBS`,
//! `sk = JOB#<id>`. One partition, listed with one Query in sort-key order, which is id
//! order: the durable queue is `serve`'s, one process, so the partition is not hot.

use std::time::Duration;

use super::deliveries::DeliveryPut;
use super::{DynamoStateStore, key, record_item};
use crate::state::deliveries::DeliveryStore;
use crate::state::jobs::{DeliveryMark, JobRecord, JobState, JobStore};
use crate::state::model::{DeliveryOutcome, UnixSeconds};
use crate::{BoxFuture, StoreError, StoreResult};

const JOBS: &str = "JOBS";
const JOB_PREFIX: &str = "JOB#";

fn job_sk(id: &str) -> String {
    format!("{JOB_PREFIX}{id}")
}

impl JobStore for DynamoStateStore {
    fn put_job<'a>(&'a self, job: &'a JobRecord) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let item = record_item(job, key(JOBS, job_sk(&job.id)))?;
            if self.put_if(item, "attribute_not_exists(#pk)", &[]).await? {
                return Ok(());
            }
            Err(StoreError::Conflict(format!("job {} exists", job.id)))
        })
    }

    fn put_job_for_delivery<'a>(
        &'a self,
        delivery_id: &'a str,
        now: UnixSeconds,
        ttl: Duration,
        job: &'a JobRecord,
    ) -> BoxFuture<'a, StoreResult<DeliveryOutcome>> {
        Box::pin(async move {
            let delivery = DeliveryPut::new(delivery_id, now, ttl);
            let values = delivery.values();
            let writes = vec![
                self.transact_put_if(delivery.item, DeliveryPut::CONDITION, &values)?,
                self.put_if_absent(record_item(job, key(JOBS, job_sk(&job.id)))?)?,
            ];
            let Some(cancelled) = self.transact_conditionally(writes).await? else {
                return Ok(DeliveryOutcome::New);
            };
            match cancelled.failed.as_slice() {
                [true, ..] => Ok(DeliveryOutcome::Duplicate),
                [false, true] => Err(StoreError::Conflict(format!("job {} exists", job.id))),
                _ => Err(StoreError::Conflict(format!(
                    "delivery {delivery_id} or job {}: {}",
                    job.id, cancelled.message
                ))),
            }
        })
    }

    fn update_job<'a>(&'a self, job: &'a JobRecord) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let item = record_item(job, key(JOBS, job_sk(&job.id)))?;
            self.put_if(item, "attribute_exists(#pk)", &[]).await
        })
    }

    fn delete_job<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(self.delete_returning(key(JOBS, job_sk(id))))
    }

    /// The job, then the delivery: two requests, as a transaction's condition on a delivery
    /// not recorded (or expired) would cancel the job's write with it.
    fn update_job_marking<'a>(
        &'a self,
        job: &'a JobRecord,
        mark: DeliveryMark<'a>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let written = self.update_job(job).await?;
            self.mark_delivery(mark.delivery_id, mark.state, mark.now)
                .await?;
            Ok(written)
        })
    }

    fn delete_job_marking<'a>(
        &'a self,
        id: &'a str,
        mark: DeliveryMark<'a>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move {
            let deleted = self.delete_job(id).await?;
            self.mark_delivery(mark.delivery_id, mark.state, mark.now)
                .await?;
            Ok(deleted)
        })
    }

    fn get_job<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<Option<JobRecord>>> {
        Box::pin(self.get(key(JOBS, job_sk(id))))
    }

    fn list_jobs(&self, state: Option<JobState>) -> BoxFuture<'_, StoreResult<Vec<JobRecord>>> {
        Box::pin(async move {
            let mut jobs: Vec<JobRecord> = self.query_partition(JOBS, Some(JOB_PREFIX)).await?;
            jobs.retain(|job| state.is_none_or(|state| job.state == state));
            Ok(jobs)
        })
    }
}
