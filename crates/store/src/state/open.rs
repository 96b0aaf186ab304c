//! Opening a state store from its URL; which backend a URL means is
//! [`StateLocation::parse`]'s decision.

use std::sync::Arc;

use super::dynamo::DynamoStateStore;
#[cfg(feature = "sqlite")]
use super::sqlite::SqliteStateStore;
use super::store::StateStore;
use crate::StoreResult;
use crate::location::StateLocation;

/// Opens `sqlite:PATH` or `dynamodb:TABLE`.
pub async fn state_store_from_url(url: &str) -> StoreResult<Arc<dyn StateStore>> {
    open_state_store(&StateLocation::parse(url)?).await
}

/// Opens the state store at a parsed `location`.
pub async fn open_state_store(location: &StateLocation) -> StoreResult<Arc<dyn StateStore>> {
    match location {
        #[cfg(feature = "sqlite")]
        StateLocation::Sqlite(path) => Ok(Arc::new(SqliteStateStore::open(path).await?)),
        // The Lambda functions are built without SQLite (ARCHITECTURE.md, `functions/`).
        #[cfg(not(feature = "sqlite"))]
        StateLocation::Sqlite(path) => Err(crate::StoreError::Invalid(format!(
            "sqlite:{} cannot be opened: this build has no SQLite state store (use dynamodb:TABLE)",
            path.display()
        ))),
        StateLocation::DynamoDb { table } => Ok(Arc::new(DynamoStateStore::from_env(table).await?)),
    }
}

impl dyn StateStore {
    /// Opens `sqlite:PATH` or `dynamodb:TABLE`; see [`state_store_from_url`].
    pub async fn from_url(url: &str) -> StoreResult<Arc<dyn StateStore>> {
        state_store_from_url(url).await
    }
}
