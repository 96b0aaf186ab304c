//! Backend specifics: the DynamoDB table shape, TTL, URLs.

use astrolift_store::state::{TableShape, table_definition};
use astrolift_store::{StoreError, state_store_from_url};

#[tokio::test]
async fn dynamodb_table_has_ttl_on_expires_at() {
    let Some(store) =
        crate::state_contract::dynamo_store("dynamodb_table_has_ttl_on_expires_at").await
    else {
        return;
    };
    assert_eq!(
        store.ttl_attribute().await.unwrap().as_deref(),
        Some("expires_at")
    );
    store.create_table().await.unwrap();
}

#[test]
fn table_shape_is_data() {
    let shape = table_definition();
    let json = serde_json::to_value(&shape).unwrap();
    assert_eq!(json["ttl_attribute"], "expires_at");
    assert_eq!(json["global_secondary_indexes"][0]["name"], "gsi1");
    let back: TableShape = serde_json::from_value(json).unwrap();
    assert_eq!(back, shape);
}

#[tokio::test]
async fn state_urls() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("s.db").display());
    let store = state_store_from_url(&url).await.unwrap();
    assert_eq!(store.location(), url);
    let err = state_store_from_url("postgres://x").await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    assert!(matches!(
        state_store_from_url("dynamodb:a b").await.unwrap_err(),
        StoreError::Invalid(_)
    ));
}
