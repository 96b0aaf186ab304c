//! How SQLite's errors map to [`StoreError`]: busy or locked is retryable, the rest is the
//! backend's refusal.

use crate::StoreError;

pub(super) fn sql_error(err: rusqlite::Error) -> StoreError {
    sql_error_of(&err)
}

/// [`sql_error`] of an error that several calls answer (a batch that could not begin).
pub(super) fn sql_error_of(err: &rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    match err.sqlite_error_code() {
        Some(DatabaseBusy | DatabaseLocked) => StoreError::Unavailable(format!("sqlite: {err}")),
        _ => StoreError::Backend {
            operation: "sqlite".into(),
            message: err.to_string(),
        },
    }
}
