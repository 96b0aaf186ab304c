//! Dispatch tasks on DynamoDB, in the one table:
//! - a task: `pk = TASK#<task_id>`, `sk = TASK` (what a callback reads);
//! - its dispatch id: `pk = DISPATCHID#<dispatch_id>`, `sk = TASK`, holding the task id
//!   (what a render reads first).
//!
//! Both are put, absent, in the transaction that records the dispatch ([`task_writes`]);
//! a task is updated by one `PutItem` conditional on its `version`.

use aws_sdk_dynamodb::types::TransactWriteItem;
use serde::{Deserialize, Serialize};

use super::{DynamoStateStore, key, n, record_item};
use crate::state::model::Dispatch;
use crate::state::tasks::{DispatchTask, TaskStore};
use crate::{BoxFuture, StoreError, StoreResult};

const TASK_SK: &str = "TASK";

fn task_pk(task_id: &str) -> String {
    format!("TASK#{task_id}")
}
fn dispatch_id_pk(dispatch_id: &str) -> String {
    format!("DISPATCHID#{dispatch_id}")
}

/// The item that finds a task by its dispatch's id.
#[derive(Debug, Serialize, Deserialize)]
struct TaskPointer {
    task_id: String,
}

impl DynamoStateStore {
    /// The puts of a new dispatch's task and of its dispatch-id item, each only where no
    /// item with its key exists, with their names for a cancelled transaction.
    pub(super) fn task_writes(
        &self,
        dispatch: &Dispatch,
    ) -> StoreResult<Vec<(TransactWriteItem, String)>> {
        let task = DispatchTask::queued(dispatch);
        let pointer = TaskPointer {
            task_id: task.task_id.clone(),
        };
        Ok(vec![
            (
                self.put_if_absent(record_item(&task, key(task_pk(&task.task_id), TASK_SK))?)?,
                format!("task {}", task.task_id),
            ),
            (
                self.put_if_absent(record_item(
                    &pointer,
                    key(dispatch_id_pk(&task.dispatch_id), TASK_SK),
                )?)?,
                format!("dispatch id {}", task.dispatch_id),
            ),
        ])
    }
}

impl TaskStore for DynamoStateStore {
    fn get_task<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<DispatchTask>>> {
        Box::pin(self.get(key(task_pk(task_id), TASK_SK)))
    }

    fn get_dispatch_task<'a>(
        &'a self,
        dispatch_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<DispatchTask>>> {
        Box::pin(async move {
            let pointer: Option<TaskPointer> =
                self.get(key(dispatch_id_pk(dispatch_id), TASK_SK)).await?;
            match pointer {
                Some(pointer) => self.get_task(&pointer.task_id).await,
                None => Ok(None),
            }
        })
    }

    fn update_task<'a>(
        &'a self,
        task: &'a DispatchTask,
        expected_version: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let item = record_item(task, key(task_pk(&task.task_id), TASK_SK))?;
            let written = self
                .put_if(
                    item,
                    "attribute_exists(#pk) AND #v = :v",
                    &[(":v", n(expected_version))],
                )
                .await?;
            if written {
                return Ok(());
            }
            Err(StoreError::Conflict(format!(
                "task {} is not at version {expected_version}",
                task.task_id
            )))
        })
    }
}
