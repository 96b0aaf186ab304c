//! Which backend a store URL means (`ASTROLIFT_STATE`, `ASTROLIFT_BLOBS`: docs/reference.md,
//! "Stores"), decided here and nowhere else: [`StateLocation::parse`] and
//! [`BlobLocation::parse`]. The checks of a location's parts live here too, so that a
//! backend's constructor refuses exactly what the parser refuses.

use std::path::{Path, PathBuf};

use crate::blob::BlobKey;
use crate::{StoreError, StoreResult};

/// Where registration state lives, parsed from `sqlite:PATH` or `dynamodb:TABLE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateLocation {
    /// `sqlite:PATH`: the embedded SQLite database file.
    Sqlite(PathBuf),
    /// `dynamodb:TABLE`: one DynamoDB table.
    DynamoDb {
        /// The table name.
        table: String,
    },
}

impl StateLocation {
    /// Parses `sqlite:PATH` or `dynamodb:TABLE`; refuses another scheme, an empty path and
    /// a name DynamoDB would refuse.
    pub fn parse(url: &str) -> StoreResult<Self> {
        if let Some(path) = url.strip_prefix("sqlite:") {
            check_sqlite_path(Path::new(path))?;
            Ok(StateLocation::Sqlite(PathBuf::from(path)))
        } else if let Some(table) = url.strip_prefix("dynamodb:") {
            check_table_name(table)?;
            Ok(StateLocation::DynamoDb {
                table: table.to_owned(),
            })
        } else {
            Err(StoreError::Invalid(format!(
                "state store URL {url:?}: expected `sqlite:PATH` or `dynamodb:TABLE`"
            )))
        }
    }
}

/// Where blobs live, parsed from `file:DIR` or `s3://BUCKET[/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobLocation {
    /// `file:DIR`: a directory.
    Dir(PathBuf),
    /// `s3://BUCKET[/prefix]`: a bucket, and a key prefix (empty for none).
    S3 {
        /// The bucket name.
        bucket: String,
        /// The key prefix as written after the bucket, `""` for none.
        prefix: String,
    },
}

impl BlobLocation {
    /// Parses `file:DIR` or `s3://BUCKET[/prefix]`; refuses another scheme, an empty
    /// directory or bucket, and a prefix that is not a valid key.
    pub fn parse(url: &str) -> StoreResult<Self> {
        if let Some(dir) = url.strip_prefix("file:") {
            check_blob_dir(Path::new(dir))?;
            Ok(BlobLocation::Dir(PathBuf::from(dir)))
        } else if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            check_s3_bucket_and_prefix(bucket, prefix)?;
            Ok(BlobLocation::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.to_owned(),
            })
        } else {
            Err(StoreError::Invalid(format!(
                "blob store URL {url:?}: expected `file:DIR` or `s3://BUCKET[/prefix]`"
            )))
        }
    }
}

/// A SQLite database needs a path.
pub(crate) fn check_sqlite_path(path: &Path) -> StoreResult<()> {
    if path.as_os_str().is_empty() {
        return Err(StoreError::Invalid("`sqlite:` needs a path".into()));
    }
    Ok(())
}

/// A DynamoDB table name: 3 to 255 of `[A-Za-z0-9_.-]`.
pub(crate) fn check_table_name(table: &str) -> StoreResult<()> {
    let valid = (3..=255).contains(&table.len())
        && table
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !valid {
        return Err(StoreError::Invalid(format!(
            "DynamoDB table name {table:?}"
        )));
    }
    Ok(())
}

/// A directory store needs a directory.
pub(crate) fn check_blob_dir(root: &Path) -> StoreResult<()> {
    if root.as_os_str().is_empty() {
        return Err(StoreError::Invalid("`file:` needs a directory".into()));
    }
    Ok(())
}

/// An S3 bucket name is one non-empty segment; a prefix, without its outer `/`s, is empty
/// or a valid [`BlobKey`].
pub(crate) fn check_s3_bucket_and_prefix(bucket: &str, prefix: &str) -> StoreResult<()> {
    if bucket.is_empty() || bucket.contains('/') {
        return Err(StoreError::Invalid(format!("S3 bucket name {bucket:?}")));
    }
    let prefix = prefix.trim_matches('/');
    if !prefix.is_empty() {
        BlobKey::parse(prefix)?;
    }
    Ok(())
}
