//! Which backend a store URL means: `StateLocation::parse` and `BlobLocation::parse`, the one
//! place that decides it, and the error each refusal reports.

use std::path::PathBuf;

use astrolift_store::{BlobLocation, StateLocation};

#[test]
fn a_sqlite_url_is_its_path() {
    assert_eq!(
        StateLocation::parse("sqlite:.astrolift/state.db").unwrap(),
        StateLocation::Sqlite(PathBuf::from(".astrolift/state.db"))
    );
}

#[test]
fn a_dynamodb_url_is_its_table() {
    assert_eq!(
        StateLocation::parse("dynamodb:astrolift-state").unwrap(),
        StateLocation::DynamoDb {
            table: "astrolift-state".to_owned()
        }
    );
}

#[test]
fn a_file_url_is_its_directory() {
    assert_eq!(
        BlobLocation::parse("file:.astrolift/blobs").unwrap(),
        BlobLocation::Dir(PathBuf::from(".astrolift/blobs"))
    );
}

#[test]
fn an_s3_url_is_its_bucket_and_prefix() {
    assert_eq!(
        BlobLocation::parse("s3://bucket/some/prefix").unwrap(),
        BlobLocation::S3 {
            bucket: "bucket".to_owned(),
            prefix: "some/prefix".to_owned()
        }
    );
    assert_eq!(
        BlobLocation::parse("s3://bucket").unwrap(),
        BlobLocation::S3 {
            bucket: "bucket".to_owned(),
            prefix: String::new()
        }
    );
}

#[test]
fn an_unknown_scheme_is_refused() {
    assert_eq!(
        StateLocation::parse("postgres://x")
            .unwrap_err()
            .to_string(),
        "invalid store request: state store URL \"postgres://x\": \
         expected `sqlite:PATH` or `dynamodb:TABLE`"
    );
    assert_eq!(
        BlobLocation::parse("ftp://x").unwrap_err().to_string(),
        "invalid store request: blob store URL \"ftp://x\": \
         expected `file:DIR` or `s3://BUCKET[/prefix]`"
    );
}

#[test]
fn an_empty_path_is_refused() {
    assert_eq!(
        StateLocation::parse("sqlite:").unwrap_err().to_string(),
        "invalid store request: `sqlite:` needs a path"
    );
    assert_eq!(
        BlobLocation::parse("file:").unwrap_err().to_string(),
        "invalid store request: `file:` needs a directory"
    );
}

#[test]
fn a_name_the_backend_would_refuse_is_refused() {
    assert_eq!(
        StateLocation::parse("dynamodb:a b")
            .unwrap_err()
            .to_string(),
        "invalid store request: DynamoDB table name \"a b\""
    );
    assert_eq!(
        BlobLocation::parse("s3://").unwrap_err().to_string(),
        "invalid store request: S3 bucket name \"\""
    );
    assert!(BlobLocation::parse("s3://bucket/../up").is_err());
}
