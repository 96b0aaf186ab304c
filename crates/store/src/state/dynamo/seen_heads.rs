//! The heads reconcile last saw, on DynamoDB, in the one table: `pk = SEEN_HEAD#<owner/name>`,
//! `sk = <ref>`, one item per (repository, ref), read and written by key.

use super::{DynamoStateStore, key, record_item};
use crate::state::seen_heads::{SeenHead, SeenHeadStore};
use crate::{BoxFuture, StoreResult};

fn seen_head_pk(repository: &str) -> String {
    format!("SEEN_HEAD#{repository}")
}

impl SeenHeadStore for DynamoStateStore {
    fn get_seen_head<'a>(
        &'a self,
        repository: &'a str,
        git_ref: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<SeenHead>>> {
        Box::pin(self.get(key(seen_head_pk(repository), git_ref)))
    }

    fn put_seen_head<'a>(&'a self, head: &'a SeenHead) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let item = record_item(head, key(seen_head_pk(&head.repository), &head.git_ref))?;
            self.put(item).await
        })
    }
}
