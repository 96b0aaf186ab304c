//! Workflows, runs and stage results on DynamoDB, in the one table:
//! - a workflow: `pk = REPO#<repository>`, `sk = WORKFLOW#<name>` (next to the
//!   repository's agents, read with one keyed query);
//! - a run: `pk = WFRUN#<id>`, `sk = RUN`, indexed `gsi1pk = RUNNING_WORKFLOW_RUNS`,
//!   `gsi1sk = <id>` while it is `running` (a sparse index: the write that ends the run
//!   leaves the index keys out);
//! - a stage's report: `pk = WFRUN#<id>`, `sk = RESULT#<stage>` for attempt 1,
//!   `RESULT#<stage>#<attempt>` for a later one.
//!
//! Every write is one conditional `PutItem` (on `version`, or on the item not
//! existing), so a lost race is a `Conflict` and writes nothing.

use super::{DynamoStateStore, Item, key, n, record_item, repo_pk, s};
use crate::state::RunStatus;
use crate::state::table::{GSI_PK, GSI_SK};
use crate::state::workflows::{
    StageResult, WorkflowRecord, WorkflowRun, WorkflowStore, by_stage_and_attempt, result_key,
};
use crate::{BoxFuture, StoreError, StoreResult};

const WORKFLOW_PREFIX: &str = "WORKFLOW#";
const RUN_SK: &str = "RUN";
const RESULT_PREFIX: &str = "RESULT#";
/// The index partition of the running runs.
const RUNNING_RUNS: &str = "RUNNING_WORKFLOW_RUNS";

fn workflow_sk(name: &str) -> String {
    format!("{WORKFLOW_PREFIX}{name}")
}
fn run_pk(id: &str) -> String {
    format!("WFRUN#{id}")
}
fn result_sk(stage: &str, attempt: u32) -> String {
    format!("{RESULT_PREFIX}{}", result_key(stage, attempt))
}

/// The item of `run`, in the index of running runs while it is `running`.
fn run_item(run: &WorkflowRun) -> StoreResult<Item> {
    let mut keys = key(run_pk(&run.id), RUN_SK);
    if run.status == RunStatus::Running {
        keys.insert(GSI_PK.into(), s(RUNNING_RUNS));
        keys.insert(GSI_SK.into(), s(&run.id));
    }
    record_item(run, keys)
}

/// What a conditional put requires of the stored item.
pub(super) enum Expect {
    Absent,
    Version(u64),
}

impl DynamoStateStore {
    /// One conditional put ([`DynamoStateStore::put_if`]); `Ok(false)` when
    /// the condition failed.
    pub(super) async fn put_expecting(&self, item: Item, expect: Expect) -> StoreResult<bool> {
        match expect {
            Expect::Absent => self.put_if(item, "attribute_not_exists(#pk)", &[]).await,
            Expect::Version(version) => {
                self.put_if(
                    item,
                    "attribute_exists(#pk) AND #v = :v",
                    &[(":v", n(version))],
                )
                .await
            }
        }
    }
}

impl DynamoStateStore {
    /// Puts `record` under `keys` unless an item is there; returns the stored record (the
    /// first one put). `what` names it in the error when it is neither written nor readable.
    pub(super) async fn put_once<T>(
        &self,
        record: &T,
        keys: Item,
        what: impl FnOnce() -> String,
    ) -> StoreResult<T>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + Clone,
    {
        let item = record_item(record, keys.clone())?;
        if self.put_expecting(item, Expect::Absent).await? {
            return Ok(record.clone());
        }
        self.get(keys).await?.ok_or_else(|| {
            StoreError::Unavailable(format!("{} was neither written nor readable", what()))
        })
    }
}

pub(super) fn expect(version: Option<u64>) -> Expect {
    version.map_or(Expect::Absent, Expect::Version)
}

impl WorkflowStore for DynamoStateStore {
    fn list_workflows<'a>(
        &'a self,
        repository: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<WorkflowRecord>>> {
        Box::pin(async move {
            self.query_partition(&repo_pk(repository), Some(WORKFLOW_PREFIX))
                .await
        })
    }

    fn get_workflow<'a>(
        &'a self,
        repository: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<WorkflowRecord>>> {
        Box::pin(self.get(key(repo_pk(repository), workflow_sk(name))))
    }

    fn put_workflow<'a>(
        &'a self,
        record: &'a WorkflowRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let keys = key(repo_pk(&record.repository), workflow_sk(&record.name));
            let item = record_item(record, keys)?;
            if self.put_expecting(item, expect(expected_version)).await? {
                return Ok(());
            }
            Err(StoreError::Conflict(format!(
                "workflow {}:{} is not at version {expected_version:?}",
                record.repository, record.name
            )))
        })
    }

    fn create_workflow_run<'a>(&'a self, run: &'a WorkflowRun) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let item = run_item(run)?;
            if self.put_expecting(item, Expect::Absent).await? {
                return Ok(());
            }
            Err(StoreError::Conflict("workflow run id exists".into()))
        })
    }

    fn get_workflow_run<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<WorkflowRun>>> {
        Box::pin(self.get(key(run_pk(run_id), RUN_SK)))
    }

    fn update_workflow_run<'a>(
        &'a self,
        run: &'a WorkflowRun,
        expected_version: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let item = run_item(run)?;
            if self
                .put_expecting(item, Expect::Version(expected_version))
                .await?
            {
                return Ok(());
            }
            Err(StoreError::Conflict(format!(
                "workflow run {} is not at version {expected_version}",
                run.id
            )))
        })
    }

    fn list_running_workflow_runs(&self) -> BoxFuture<'_, StoreResult<Vec<WorkflowRun>>> {
        Box::pin(self.query_index(RUNNING_RUNS, None))
    }

    fn put_stage_result<'a>(
        &'a self,
        result: &'a StageResult,
    ) -> BoxFuture<'a, StoreResult<StageResult>> {
        Box::pin(async move {
            let keys = key(
                run_pk(&result.run_id),
                result_sk(&result.stage, result.attempt),
            );
            let what = || {
                format!(
                    "the report of attempt {} of stage {} of run {}",
                    result.attempt, result.stage, result.run_id
                )
            };
            self.put_once(result, keys, what).await
        })
    }

    fn list_stage_results<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<StageResult>>> {
        Box::pin(async move {
            let mut reports: Vec<StageResult> = self
                .query_partition(&run_pk(run_id), Some(RESULT_PREFIX))
                .await?;
            by_stage_and_attempt(&mut reports);
            Ok(reports)
        })
    }
}
